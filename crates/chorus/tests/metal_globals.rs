//! Metal's globals through the facade, on a Mac: `:device` globals live in one buffer per loaded
//! program, which kernels update (an atomic from every thread, a device function's write, a
//! `float3` in MSL's layout) and `global_ref` / `set_global_ref` read and write between
//! launches; a `:constant` global set from the host is bound at each launch. The same program
//! runs through the Linux MSL shim in `chorus-metal/tests/msl_shim.rs`; this is what only a Mac
//! can run.
//!
//! Compiled on Apple targets only; skips, printing why, without a Metal device, and fails
//! instead with `CHORUS_REQUIRE_GPU=1`.
#![cfg(target_vendor = "apple")]

use chorus::{Backend, Direction, Float3, Launch, MemoryBlock, with_backend};

chorus::defkernel! {
    (defglobal step 1 :constant)
    (defglobal counter 0)
    (defglobal hits 0 :device)
    (defglobal origin (float3 1.0 2.0 3.0))

    (defkernel (bump :device) (void ((by int)))
      (set counter (+ counter by)))

    (defkernel count-up (void ((out int*)))
      (atomic-add (pointer hits) 1)
      (syncthreads)
      (when (= thread-idx-x 0)
        (bump step)
        (set origin (+ origin (float3 1.0 1.0 1.0)))
        (set (aref out 0) (+ counter hits))))
}

/// True when a Metal device is there to run on; otherwise skips, or fails under
/// `CHORUS_REQUIRE_GPU=1`.
fn metal(name: &str) -> bool {
    match Backend::Metal.availability() {
        Ok(()) => true,
        Err(reason) if std::env::var("CHORUS_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("{name}: CHORUS_REQUIRE_GPU=1 but Metal is not available: {reason}")
        }
        Err(reason) => {
            eprintln!("skipped {name}: {reason}");
            false
        }
    }
}

#[test]
fn device_and_constant_globals_between_launches_on_metal() {
    if !metal("device_and_constant_globals_between_launches_on_metal") {
        return;
    }
    let threads = 64;
    with_backend(Backend::Metal, || -> chorus::Result<()> {
        let program = count_up_program();
        let mut out = MemoryBlock::<i32>::alloc(1)?;
        let mut launch = |expected: i32, step: &str| -> chorus::Result<()> {
            count_up(&out, Launch::grid(1).block(threads as u32))?;
            out.sync(Direction::DeviceToHost)?;
            assert_eq!(out[0], expected, "{step}");
            Ok(())
        };
        // The initializers, then what the first launch left.
        assert_eq!(program.global_ref::<i32>("hits")?, 0);
        launch(1 + threads, "the first launch")?;
        assert_eq!(program.global_ref::<i32>("counter")?, 1);
        assert_eq!(program.global_ref::<i32>("hits")?, threads);
        assert_eq!(
            program.global_ref::<Float3>("origin")?,
            Float3::new(2.0, 3.0, 4.0)
        );
        // Written from the host: the next launch starts from these.
        program.set_global_ref("counter", 100i32)?;
        program.set_global_ref("hits", 1000i32)?;
        program.set_global_ref("step", 10i32)?;
        program.set_global_ref("origin", Float3::new(0.5, 0.5, 0.5))?;
        launch(110 + 1000 + threads, "after the host's writes")?;
        // Nothing written: the launch starts from what the last one left.
        launch(120 + 1000 + 2 * threads, "a third launch")?;
        assert_eq!(program.global_ref::<i32>("hits")?, 1000 + 2 * threads);
        assert_eq!(program.global_ref::<i32>("step")?, 10);
        assert_eq!(
            program.global_ref::<Float3>("origin")?,
            Float3::new(2.5, 2.5, 2.5)
        );
        Ok(())
    })
    .unwrap();
}
