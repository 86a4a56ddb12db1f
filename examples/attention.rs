//! Attention forward pass O = softmax(Q·Kᵀ/√d [+ causal mask])·V on the tensor cores, in the
//! style of FlashAttention-2 (`kernels/attention.lisp`, written with the tensor-core macro
//! library: mma.sync m16n8k16, ldmatrix with and without .trans, double-buffered cp.async into
//! swizzled shared memory, the online softmax and P in registers). BF16 in and out, f32
//! accumulation; Q, K, V, O are [batch, heads, seq, dim] row-major.
//!
//! Random inputs (a fixed seed), the output poisoned with NaN before the run; sampled rows
//! checked against an f64 host reference (every row on the CPU executor) within BF16's
//! rounding; the time and TFLOP/s (4·B·H·S²·D flops, half of that when causal).
//!
//! Two shapes of block (`--variant`): `w8`, 8 warps of 16 query rows with Q in registers, and
//! `w4`, 4 warps of 32 rows (FlashAttention-2's tiling), both by default. On CUDA the kernels
//! compile with `--ftz=true` (exp2 then is one MUFU.EX2, as under FlashAttention's
//! `--use_fast_math`; subnormal weights flush to zero), unless `--no-ftz`.
//!
//! `cargo run --release --example attention -- [--batch B] [--heads H] [--seq S] [--dim D]
//! [--causal | --non-causal] [--variant w8|w4] [--iterations I] [--no-ftz]` (default on a GPU
//! 4×32×4096×128, non-causal then causal; on the CPU executor, `CHORUS_BACKEND=cpu`,
//! 1×2×256×128). S must be a multiple of 128 and D 64 or 128. `benches/attention_torch.py`
//! times PyTorch's flash SDPA at the same shapes and prints its rates in the same form.

use chorus::{Direction, MemoryBlock, bf16};
use chorus_examples::flash_attention::{self as attention, Shape, Variant};
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
    /// The shapes of block to run.
    variants: Vec<Variant>,
    iterations: usize,
    /// Compile with `--ftz=true` (CUDA).
    ftz: bool,
}

/// Rows to check on a GPU: (batch·head, row) pairs spread over the tensor, the first and last
/// rows of the first head among them (where a causal mask matters most and least).
fn sampled_rows(shape: Shape, count: usize) -> Vec<(usize, usize)> {
    let pairs = shape.batch * shape.heads;
    let mut rows = vec![
        (0, 0),
        (0, 1),
        (0, shape.seq - 1),
        (pairs - 1, shape.seq - 1),
    ];
    rows.extend(
        (0..count.saturating_sub(rows.len()))
            .map(|s| ((s * 7919 + 3) % pairs, (s * 104_729 + 11) % shape.seq)),
    );
    rows
}

/// One problem on the device: the program, the inputs there and on the host, how to time.
struct Problem<'a> {
    program: &'a chorus::Program,
    shape: Shape,
    scale: f64,
    tensors: [&'a MemoryBlock<bf16>; 3],
    inputs: [&'a [bf16]; 3],
    cpu: bool,
    iterations: usize,
}

/// Runs `variant` with or without the causal mask: times it, checks it, prints both, and
/// returns whether every checked entry is within tolerance.
fn run_one(
    problem: &Problem<'_>,
    variant: Variant,
    causal: bool,
) -> Result<bool, Box<dyn std::error::Error>> {
    let Problem {
        program,
        shape,
        scale,
        tensors: [q, k, v],
        inputs,
        cpu,
        iterations,
    } = *problem;
    // NaN everywhere: an entry the kernel does not write fails the check.
    let mut o = MemoryBlock::from_slice(&vec![bf16::NAN; shape.len()])?;
    let blocks = [q, k, v, &o];
    let run = || attention::launch(program, variant, blocks, shape, causal, scale);
    let seconds = if cpu {
        let start = Instant::now();
        run()?;
        chorus::synchronize()?;
        start.elapsed().as_secs_f64()
    } else {
        // The first launch compiles and loads the kernel, the next ones warm the clocks up;
        // every launch writes the same O.
        for _ in 0..3 {
            run()?;
        }
        chorus::synchronize()?;
        let start = Instant::now();
        for _ in 0..iterations {
            run()?;
        }
        chorus::synchronize()?;
        start.elapsed().as_secs_f64() / iterations as f64
    };
    let mask = if causal { "causal" } else { "non-causal" };
    println!(
        "attention (Chorus, mma.sync, {}) {mask}: {:.3} ms, {:.1} TFLOP/s",
        variant.name(),
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
        "  {} of {checked} entries ({count} rows) within BF16 rounding of the f64 reference \
         (largest error {worst:.2e} of |want| + mean |V|)",
        checked - bad
    );
    Ok(bad == 0)
}

fn run(options: &Options) -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("attention")?;
    if let Some(why) = workloads::tensor_cores_unavailable()? {
        println!("skipped: {why}");
        return Ok(true);
    }
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
    if backend == chorus::Backend::Cuda && options.ftz {
        chorus::cuda::update_settings(|s| s.nvcc_options.push("--ftz=true".into()));
    }
    let program = attention::program()?;
    let [q_host, k_host, v_host] = attention::random_inputs(shape, 16);
    let q = MemoryBlock::from_slice(&q_host)?;
    let k = MemoryBlock::from_slice(&k_host)?;
    let v = MemoryBlock::from_slice(&v_host)?;
    let inputs = [q_host.as_slice(), k_host.as_slice(), v_host.as_slice()];
    println!(
        "batch {} × heads {} × seq {} × dim {}, BF16, scale 1/√{}, grid {}×{}{}",
        shape.batch,
        shape.heads,
        shape.seq,
        shape.dim,
        shape.dim,
        shape.seq / attention::BLOCK_ROWS,
        shape.batch * shape.heads,
        if backend == chorus::Backend::Cuda && options.ftz {
            ", compiled with --ftz=true"
        } else {
            ""
        }
    );
    let problem = Problem {
        program: &program,
        shape,
        scale,
        tensors: [&q, &k, &v],
        inputs,
        cpu,
        iterations: options.iterations,
    };
    let mut ok = true;
    for &variant in &options.variants {
        for &causal in &options.causal {
            ok &= run_one(&problem, variant, causal)?;
        }
    }
    if ok {
        println!("verification succeeded");
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
            clap::Arg::new("variant")
                .long("variant")
                .value_parser(["w8", "w4"])
                .help("one shape of block: w8 (8 warps of 16 rows) or w4 (4 warps of 32); default both"),
        )
        .arg(
            count("iterations", "timed runs after three warm-up runs (GPU)").default_value("20"),
        )
        .arg(
            clap::Arg::new("no-ftz")
                .long("no-ftz")
                .action(clap::ArgAction::SetTrue)
                .help("compile without --ftz=true (CUDA)"),
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
        variants: match matches.get_one::<String>("variant") {
            Some(name) => Variant::parse(name).into_iter().collect(),
            None => Variant::ALL.to_vec(),
        },
        iterations: get("iterations").unwrap_or(20).max(1),
        ftz: !matches.get_flag("no-ftz"),
    };
    chorus_examples::exit_code("attention", run(&options))
}
