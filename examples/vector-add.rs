//! The seed's vector-add (the CUDA SDK's vectorAdd): `c = a + b` for n = 1024 floats, 256
//! threads per block, then again for n = 1000, which is not a multiple of the block size (the
//! grid is rounded up and the kernel's `(< i n)` guard keeps the extra threads out).
//!
//! `cargo run --release --example vector-add` runs it on the GPU if there is one, else on the
//! CPU. It exits with status 1 on a wrong result.

use chorus::{Direction, Launch, MemoryBlock};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref c i)
                 (+ (aref a i) (aref b i))))))
}

fn random_init(block: &mut MemoryBlock<f32>, random: &mut Random) {
    for x in block.as_mut_slice() {
        *x = random.next_f32();
    }
}

/// Indices where `c` is not exactly `a + b` (float addition is exact IEEE on every backend).
fn verify_result(a: &MemoryBlock<f32>, b: &MemoryBlock<f32>, c: &MemoryBlock<f32>) -> Vec<usize> {
    (0..c.len()).filter(|&i| c[i] != a[i] + b[i]).collect()
}

/// Runs the seed's main for `n` elements; true when the result verifies.
fn run(n: usize, threads_per_block: usize, random: &mut Random) -> chorus::Result<bool> {
    let blocks_per_grid = n.div_ceil(threads_per_block);
    let mut a = MemoryBlock::<f32>::alloc(n)?;
    let mut b = MemoryBlock::<f32>::alloc(n)?;
    let mut c = MemoryBlock::<f32>::alloc(n)?;
    random_init(&mut a, random);
    random_init(&mut b, random);
    a.sync(Direction::HostToDevice)?;
    b.sync(Direction::HostToDevice)?;
    let n_arg = i32::try_from(n).expect("the example's sizes fit an int");
    vec_add_kernel(
        &a,
        &b,
        &mut c,
        n_arg,
        Launch::grid(blocks_per_grid).block(threads_per_block),
    )?;
    c.sync(Direction::DeviceToHost)?;
    let wrong = verify_result(&a, &b, &c);
    println!("n = {n}: grid {blocks_per_grid} × block {threads_per_block}");
    match wrong.first() {
        None => {
            println!("verification succeeded");
            Ok(true)
        }
        Some(&i) => {
            println!(
                "verification failed at {} of {n} elements; first at {i}: {} + {} gave {}",
                wrong.len(),
                a[i],
                b[i],
                c[i]
            );
            Ok(false)
        }
    }
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "vector-add",
        "The seed's vector-add: c = a + b, checked exactly",
    );
    let outcome = (|| -> chorus::Result<bool> {
        banner("vector-add")?;
        let mut random = Random::new(2026);
        let whole_blocks = run(1024, 256, &mut random)?;
        let partial_block = run(1000, 256, &mut random)?;
        Ok(whole_blocks && partial_block)
    })();
    chorus_examples::exit_code("vector-add", outcome)
}
