//! NCCL all-reduce over every GPU there is, one or more, checked exactly.
//!
//! Alone, it drives every GPU of the machine from one process (`ncclCommInitAll`, the calls of
//! all devices in one group); started by a launcher (`nccl-launch`, or anything that sets
//! `CHORUS_RANK`/`CHORUS_WORLD_SIZE` and the id variables) it is one rank per process. On each
//! device a kernel of the kernel language (compiled once, loaded on each device) fills the send
//! buffer with `(rank + 1) · (i mod 13)`; the sum over the ranks is `n(n+1)/2 · (i mod 13)`,
//! exact in `f32`, and every element is compared. For each size it prints the time per
//! all-reduce and NCCL's bus bandwidth (`2(n−1)/n` times the algorithm bandwidth), timed as
//! nccl-tests times it: `--iterations` all-reduces issued back to back, then one wait.
//!
//! `cargo run --release --example nccl-allreduce`, or
//! `cargo run --release --example nccl-launch -- --gpus 2 -- target/release/examples/nccl-allreduce`.
//! `--max-mib M` caps the largest size (default 256). With `--baseline` (one process over every
//! GPU), NCCL called from C on the same sizes, data and method (`benches/baselines/
//! nccl_allreduce.cu`, compiled with nvcc at run time) runs before and after, and each size's
//! ratio of Chorus's bus bandwidth to C's (of C's time to Chorus's, defined on one GPU too) is
//! printed (goal: ≥ 0.95).

use chorus::{Backend, Device, Direction, Launch, MemoryBlock};
use chorus_cuda_libs::nccl::launch::RankEnv;
use chorus_cuda_libs::nccl::{self, Comm, Config, ReduceOp};
use chorus_cuda_libs::{AsDeviceSlice, AsDeviceSliceMut, Stream};
use clap::Parser;
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

chorus::defkernel! {
    (defkernel fill-rank (void ((a float*) (rank int) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref a i) (* (float (+ rank 1)) (float (mod i 13)))))))
}

/// NCCL all-reduce over every GPU, one or more, checked exactly.
#[derive(Parser, Debug)]
#[command(name = "nccl-allreduce")]
struct Cli {
    /// The largest message, in MiB (sizes go from 1 MiB up by factors of 4).
    #[arg(long, default_value_t = 256)]
    max_mib: usize,
    /// Timed repetitions per size.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    /// Also run NCCL from C (benches/baselines/nccl_allreduce.cu) before and after, and print
    /// the ratios (one process over every GPU only).
    #[arg(long)]
    baseline: bool,
}

/// One rank's communicator and stream, and its buffers (apart, so that views of the buffers
/// and the communicators can be borrowed together).
struct Rank {
    comm: Comm,
    stream: Stream,
}

struct Buffers {
    send: MemoryBlock<f32>,
    recv: MemoryBlock<f32>,
}

impl Rank {
    fn new(comm: Comm, n: usize) -> Result<(Rank, Buffers), Box<dyn std::error::Error>> {
        // Every block and launch on the rank's device; the kernel is compiled once and loaded
        // on each device at its first launch there.
        let device = Device::new(Backend::Cuda, comm.device())?;
        let mut send = MemoryBlock::<f32>::alloc_on(device, n)?;
        let recv = MemoryBlock::<f32>::alloc_on(device, n)?;
        fill_rank(
            &mut send,
            comm.rank() as i32,
            n as i32,
            Launch::grid(n.div_ceil(256)).block(256).on(device),
        )?;
        device.synchronize()?;
        let stream = comm.new_stream()?;
        Ok((Rank { comm, stream }, Buffers { send, recv }))
    }
}

/// Issues the all-reduce of every rank's first `n` elements, in one group (several ranks in
/// this process, or one).
fn issue_all_reduce(
    ranks: &[Rank],
    buffers: &mut [Buffers],
    n: usize,
) -> chorus_cuda_libs::Result<()> {
    let mut views = Vec::new();
    for b in buffers.iter_mut() {
        views.push((
            b.send.as_device_slice()?.slice(0..n)?,
            b.recv.as_device_slice_mut()?.slice(0..n)?,
        ));
    }
    nccl::group(|g| {
        for (r, (send, recv)) in ranks.iter().zip(views.iter_mut()) {
            g.all_reduce(&r.comm, send, recv, ReduceOp::Sum, &r.stream)?;
        }
        Ok(())
    })
}

/// Waits for every rank's queued collectives.
fn wait_all(ranks: &[Rank]) -> chorus_cuda_libs::Result<()> {
    for r in ranks {
        r.comm.wait(&r.stream)?;
    }
    Ok(())
}

fn run(cli: &Cli) -> Result<bool, Box<dyn std::error::Error>> {
    if !Backend::Cuda.is_available() {
        println!("nccl-allreduce: skipped: NCCL needs the CUDA backend");
        return Ok(true);
    }
    if let Err(e) = nccl::ensure() {
        println!("nccl-allreduce: skipped: {e}");
        return Ok(true);
    }
    let (major, minor, patch) = nccl::version()?;
    let sizes: Vec<usize> = std::iter::successors(Some(1usize), |m| Some(m * 4))
        .take_while(|&m| m <= cli.max_mib.max(1))
        .collect();
    let max_n = sizes.last().copied().unwrap_or(1) << 18;
    let baseline = cli.baseline && !RankEnv::is_launched();
    if cli.baseline && !baseline {
        println!("nccl-allreduce: --baseline is for one process over every GPU; ignored");
    }
    // NCCL from C first (it needs every GPU before this process holds communicators).
    let (c_program, c_before) = if baseline {
        let program = build_c_baseline()?;
        let rows = run_c_baseline(program.path(), cli)?;
        (Some(program), rows)
    } else {
        (None, Vec::new())
    };
    let comms = if RankEnv::is_launched() {
        vec![Comm::from_env(&Config::default())?]
    } else {
        let devices: Vec<usize> = (0..Backend::Cuda.devices().len()).collect();
        Comm::init_all(&devices)?
    };
    let world = comms[0].size();
    let launched = RankEnv::is_launched();
    let lead = comms[0].rank() == 0;
    if lead {
        println!(
            "nccl-allreduce: NCCL {major}.{minor}.{patch}, {world} rank(s){}",
            if launched {
                ", one process each"
            } else {
                " in this process"
            }
        );
    }
    let (ranks, mut buffers): (Vec<Rank>, Vec<Buffers>) = comms
        .into_iter()
        .map(|c| Rank::new(c, max_n))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let scale = (world * (world + 1) / 2) as f32;
    let mut ok = true;
    // (MiB, Chorus's bus bandwidth) per size.
    let mut measured = Vec::new();
    for &mib in &sizes {
        let n = mib << 18;
        // Warm-up, and the checked result.
        issue_all_reduce(&ranks, &mut buffers, n)?;
        wait_all(&ranks)?;
        for (r, b) in ranks.iter().zip(buffers.iter_mut()) {
            b.recv.sync(Direction::DeviceToHost)?;
            let bad = b.recv.as_slice()[..n]
                .iter()
                .enumerate()
                .filter(|&(i, &v)| v != scale * (i % 13) as f32)
                .count();
            if bad > 0 {
                println!("rank {}: {bad} of {n} elements wrong", r.comm.rank());
                ok = false;
            }
        }
        let start = Instant::now();
        for _ in 0..cli.iterations {
            issue_all_reduce(&ranks, &mut buffers, n)?;
        }
        wait_all(&ranks)?;
        let seconds = start.elapsed().as_secs_f64() / cli.iterations.max(1) as f64;
        let bytes = (n * 4) as f64;
        let algbw = bytes / seconds / 1e9;
        let busbw = algbw * 2.0 * (world as f64 - 1.0) / world as f64;
        if lead {
            println!(
                "{mib:>5} MiB: {:>9.1} µs, algbw {algbw:>7.1} GB/s, busbw {busbw:>7.1} GB/s",
                seconds * 1e6
            );
        }
        measured.push((mib, busbw, seconds * 1e6));
    }
    nccl::finalize_all(ranks.into_iter().map(|r| r.comm).collect())?;
    drop(buffers);
    if let Some(program) = c_program {
        let c_after = run_c_baseline(program.path(), cli)?;
        ok &= compare_with_c(&measured, &c_before, &c_after);
    }
    if lead {
        println!(
            "{}",
            if ok {
                "verified: every element of every size on every rank"
            } else {
                "verification failed"
            }
        );
    }
    Ok(ok)
}

/// One row of the C baseline: MiB, microseconds per all-reduce, bus bandwidth (GB/s), checked.
type CRow = (usize, f64, f64, bool);

/// Compiles `benches/baselines/nccl_allreduce.cu` with nvcc for the GPUs of this machine
/// (removed when dropped).
fn build_c_baseline() -> Result<chorus::cuda::testing::CProgram, Box<dyn std::error::Error>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../benches/baselines/nccl_allreduce.cu");
    Ok(chorus::cuda::testing::build_c_program(
        &src,
        &["-arch=native", "-ldl"],
    )?)
}

/// Runs the C baseline on the same sizes and iterations: its rows.
fn run_c_baseline(exe: &Path, cli: &Cli) -> Result<Vec<CRow>, Box<dyn std::error::Error>> {
    let out = Command::new(exe)
        .arg(cli.max_mib.to_string())
        .arg(cli.iterations.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(format!("the C baseline failed ({})", out.status).into());
    }
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let ["baseline", mib, us, busbw, check] = line.split('\t').collect::<Vec<_>>()[..] {
            rows.push((mib.parse()?, us.parse()?, busbw.parse()?, check == "ok"));
        }
    }
    Ok(rows)
}

/// Prints each size's bus bandwidth through Chorus against C's two runs and their ratio;
/// whether C's results were right and every size has both runs. The ratio is of times (C's
/// mean over Chorus's, the bandwidths' ratio), so that it is defined on one GPU too, where
/// the bus bandwidth is 0.
fn compare_with_c(measured: &[(usize, f64, f64)], before: &[CRow], after: &[CRow]) -> bool {
    println!("  MiB   Chorus GB/s   C GB/s (before, after)   ratio to C's mean");
    let mut ok = true;
    for &(mib, busbw, us) in measured {
        let find = |rows: &[CRow]| rows.iter().find(|r| r.0 == mib).copied();
        match (find(before), find(after)) {
            (Some(b), Some(a)) => {
                println!(
                    "{mib:>5}   {busbw:>11.1}   {:>8.1} {:>8.1}            {:>6.3}{}",
                    b.2,
                    a.2,
                    (b.1 + a.1) / 2.0 / us,
                    if b.3 && a.3 {
                        ""
                    } else {
                        "   (C's check failed)"
                    }
                );
                ok &= b.3 && a.3;
            }
            _ => {
                println!("{mib:>5}   {busbw:>11.1}   (no C row)");
                ok = false;
            }
        }
    }
    ok
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    chorus_examples::exit_code("nccl-allreduce", run(&cli))
}
