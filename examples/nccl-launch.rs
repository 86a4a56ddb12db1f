//! Starts one process per GPU, for programs that use NCCL across processes (one rank each):
//! `cargo run --example nccl-launch -- --gpus N -- PROGRAM ARGS…`.
//!
//! Rank r runs on GPU `r % GPUs` with `CHORUS_RANK`, `CHORUS_WORLD_SIZE`, `CHORUS_LOCAL_RANK`,
//! `CHORUS_DEVICE` and `CHORUS_NCCL_ID_FILE` in its environment: rank 0 makes NCCL's unique id
//! and writes it there, the others read it (`chorus_cuda_libs::nccl::Comm::from_env` does all
//! of it). Each line a rank prints comes out prefixed with `[rank r]`. When every rank exits
//! with success, so does the launcher; when one fails, the others are stopped (SIGTERM, then
//! SIGKILL) and the launcher exits with status 1 naming the rank.
//!
//! More ranks than GPUs (`--gpus 2` on a machine with one) need `--share-gpus`: NCCL refuses two
//! ranks on one GPU, so each rank is then given a host id of its own and NCCL connects them
//! through its socket transport (slow, for testing only).
//!
//! Example: `cargo run --release --example nccl-launch -- --gpus 2 -- target/release/examples/nccl-allreduce`.

use chorus_cuda_libs::nccl::launch::Launcher;
use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

/// Starts one process per GPU, each a rank of an NCCL communicator.
#[derive(Parser, Debug)]
#[command(name = "nccl-launch")]
struct Cli {
    /// The number of ranks (processes); default: one per GPU of this machine.
    #[arg(long)]
    gpus: Option<usize>,
    /// Run more ranks than there are GPUs, several on one (through NCCL's socket transport).
    #[arg(long)]
    share_gpus: bool,
    /// The program each rank runs, and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let devices = chorus::cuda::driver::ensure_driver()
        .and_then(|()| chorus::cuda::driver::device_count())
        .unwrap_or(0);
    let ranks = cli.gpus.unwrap_or(devices);
    if devices == 0 {
        eprintln!("nccl-launch: no CUDA device here (NCCL needs GPUs)");
        return ExitCode::FAILURE;
    }
    let (program, args) = cli.command.split_first().expect("clap requires a command");
    println!(
        "nccl-launch: {ranks} rank(s) on {} GPU(s): {}",
        devices.min(ranks),
        program.to_string_lossy()
    );
    let launcher = Launcher::new(ranks, devices, program, args).share_devices(cli.share_gpus);
    match launcher.run() {
        Ok(()) => {
            println!("nccl-launch: every rank succeeded");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nccl-launch: {e}");
            ExitCode::FAILURE
        }
    }
}
