//! cl-cuda's defglobal example: two globals, `foo` in device memory and `bar` in constant
//! memory, set from the host to 1 and 2; a kernel writes `foo + bar`.
//!
//! `cargo run --release --example defglobal` prints `Got 3 from adding two globals.` and exits
//! with status 1 on any other result.

use chorus::{Direction, Launch, MemoryBlock};
use chorus_examples::banner;
use std::process::ExitCode;

chorus::defkernel! {
    (defglobal foo 0)
    (defglobal bar 0 :constant)

    (defkernel add-globals (void ((out int*)))
      (set (aref out 0) (+ foo bar)))
}

fn run() -> chorus::Result<i32> {
    banner("defglobal")?;
    let program = add_globals_program();
    program.set_global_ref("foo", 1i32)?;
    program.set_global_ref("bar", 2i32)?;
    let mut out = MemoryBlock::<i32>::alloc(1)?;
    add_globals(&out, Launch::grid(1).block(1))?;
    out.sync(Direction::DeviceToHost)?;
    Ok(out[0])
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "defglobal",
        "cl-cuda's defglobal: globals in device and constant memory set from the host",
    );
    match run() {
        Ok(sum) => {
            println!("Got {sum} from adding two globals.");
            if sum == 3 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("defglobal: {error}");
            ExitCode::FAILURE
        }
    }
}
