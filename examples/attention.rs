//! Attention forward pass O = softmax(Q·Kᵀ/√d [+ causal mask])·V on the tensor cores, in the
//! style of FlashAttention-2 (`kernels/attention.lisp`, written with the tensor-core macro
//! library: mma.sync m16n8k16, ldmatrix with and without .trans, double-buffered cp.async into
//! swizzled shared memory, the online softmax in registers). BF16 in and out, f32
//! accumulation; Q, K, V, O are [batch, heads, seq, dim] row-major.
//!
//! Random inputs (a fixed seed), the output poisoned with NaN before the run; sampled rows
//! checked against an f64 host reference (every row on the CPU executor) within BF16's
//! rounding; the time and TFLOP/s (4·B·H·S²·D flops, half of that when causal).
//!
//! `cargo run --release --example attention -- [--batch B] [--heads H] [--seq S] [--dim D]
//! [--causal | --both] [--iterations I]` (default on a GPU 4×32×4096×128, causal and not; on
//! the CPU executor, `CHORUS_BACKEND=cpu`, 1×2×256×128). S must be a multiple of 128 and D 64 or
//! 128. `benches/attention_torch.py` times PyTorch's flash SDPA at the same shapes.

use chorus::{Direction, MemoryBlock, bf16};
use chorus_examples::flash_attention::{self as attention, Shape};
use chorus_examples::{banner, workloads};
use std::process::ExitCode;
use std::time::Instant;

/// The command line, parsed.
struct Options {
    batch: Option<usize>,
    heads: Option<usize>,
    seq: Option<usize>,
    dim: Option<usize>,
    /// The masks to run: non-causal, causal, or both.
    causal: Vec<bool>,
    iterations: usize,
}

/// Rows to check on a GPU: (batch·head, row) pairs spread over the tensor, the first and last
/// rows of the first head among them (where a causal mask matters most and least).
fn sampled_rows(shape: Shape, count: usize) -> Vec<(usize, usize)> {
    let pairs = shape.batch * shape.heads;
    let mut rows = vec![(0, 0), (0, 1), (0, shape.seq - 1), (pairs - 1, shape.seq - 1)];
    rows.extend((0..count.saturating_sub(rows.len())).map(|s| {
        ((s * 7919 + 3) % pairs, (s * 104_729 + 11) % shape.seq)
    }));
    rows
}

fn run(options: &Options) -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("attention")?;
    let cpu = workloads::on_cpu(backend);
    let shape = Shape {
        batch: options.batch.unwrap_or(if cpu { 1 } else { 4 }),
        heads: options.heads.unwrap_or(if cpu { 2 } else { 32 }),
        seq: options.seq.unwrap_or(if cpu { 256 } else { 4096 }),
        dim: options.dim.unwrap_or(128),
    };
    if let Some(why) = attention::unsupported_shape(shape) {
        return Err(why.into());
    }
    let scale = 1.0 / (shape.dim as f64).sqrt();
    let program = attention::program()?;
    let [q_host, k_host, v_host] = attention::random_inputs(shape, 16);
    let q = MemoryBlock::from_slice(&q_host)?;
    let k = MemoryBlock::from_slice(&k_host)?;
    let v = MemoryBlock::from_slice(&v_host)?;
    let inputs = [q_host.as_slice(), k_host.as_slice(), v_host.as_slice()];
    println!(
        "batch {} × heads {} × seq {} × dim {}, BF16, scale 1/√{}: grid {}×{} of {} threads, \
         {} bytes of shared memory",
        shape.batch,
        shape.heads,
        shape.seq,
        shape.dim,
        shape.dim,
        shape.seq / attention::BLOCK_ROWS,
        shape.batch * shape.heads,
        attention::THREADS,
        attention::shared_bytes(shape.dim)
    );
    let mut ok = true;
    for &causal in &options.causal {
        // NaN everywhere: an entry the kernel does not write fails the check.
        let mut o = MemoryBlock::from_slice(&vec![bf16::NAN; shape.len()])?;
        let blocks = [&q, &k, &v, &o];
        let seconds = if cpu {
            let start = Instant::now();
            attention::launch(&program, blocks, shape, causal, scale)?;
            chorus::synchronize()?;
            start.elapsed().as_secs_f64()
        } else {
            // The first launch compiles and loads the kernel; every launch writes the same O.
            attention::launch(&program, blocks, shape, causal, scale)?;
            chorus::synchronize()?;
            let start = Instant::now();
            for _ in 0..options.iterations {
                attention::launch(&program, blocks, shape, causal, scale)?;
            }
            chorus::synchronize()?;
            start.elapsed().as_secs_f64() / options.iterations as f64
        };
        let mask = if causal { "causal" } else { "non-causal" };
        println!(
            "attention (Chorus, mma.sync) {mask}: {:.3} ms, {:.1} TFLOP/s",
            seconds * 1e3,
            shape.flop(causal) / seconds / 1e12
        );
        o.sync(Direction::DeviceToHost)?;
        let rows: Vec<(usize, usize)> = if cpu {
            (0..shape.batch * shape.heads)
                .flat_map(|bh| (0..shape.seq).map(move |r| (bh, r)))
                .collect()
        } else {
            sampled_rows(shape, 128)
        };
        let count = rows.len();
        let (checked, bad, worst) =
            attention::check_rows(o.as_slice(), inputs, shape, causal, scale, rows);
        println!(
            "  {mask}: {} of {checked} entries ({count} rows) within BF16 rounding of the f64 \
             reference (largest error {worst:.2e} of |want| + mean |V|)",
            checked - bad
        );
        ok &= bad == 0;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let count = |name: &'static str, help: &'static str| {
        clap::Arg::new(name)
            .long(name)
            .value_parser(clap::value_parser!(usize))
            .help(help)
    };
    let matches = clap::Command::new("attention")
        .about(
            "FlashAttention-2-style forward pass on the tensor cores (BF16 in and out, f32 \
             accumulation), checked against an f64 host reference",
        )
        .arg(count("batch", "batch size (default 4 on a GPU, 1 on the CPU)"))
        .arg(count("heads", "heads (default 32 on a GPU, 2 on the CPU)"))
        .arg(count(
            "seq",
            "sequence length, a multiple of 128 (default 4096 on a GPU, 256 on the CPU)",
        ))
        .arg(count("dim", "head dimension, 64 or 128 (default 128)"))
        .arg(
            clap::Arg::new("causal")
                .long("causal")
                .action(clap::ArgAction::SetTrue)
                .conflicts_with("both")
                .help("only the causal mask"),
        )
        .arg(
            clap::Arg::new("both")
                .long("both")
                .action(clap::ArgAction::SetTrue)
                .help("non-causal, then causal (the default)"),
        )
        .arg(
            clap::Arg::new("non-causal")
                .long("non-causal")
                .action(clap::ArgAction::SetTrue)
                .conflicts_with_all(["causal", "both"])
                .help("only without a mask"),
        )
        .arg(
            count("iterations", "timed runs after one warm-up (GPU)").default_value("20"),
        )
        .get_matches();
    let get = |name: &str| matches.get_one::<usize>(name).copied();
    let causal = if matches.get_flag("causal") {
        vec![true]
    } else if matches.get_flag("non-causal") {
        vec![false]
    } else {
        vec![false, true]
    };
    let options = Options {
        batch: get("batch"),
        heads: get("heads"),
        seq: get("seq"),
        dim: get("dim"),
        causal,
        iterations: get("iterations").unwrap_or(20).max(1),
    };
    match run(&options) {
        Ok(true) => {
            println!("verification succeeded");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("VERIFICATION FAILED");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("attention: {e}");
            ExitCode::FAILURE
        }
    }
}
