//! What the NCCL examples share (included by path, not an example of its own): this process's
//! ranks. Started alone, a program drives every GPU of the machine from one thread (one
//! communicator each, `ncclCommInitAll`, calls of all ranks in one group); started by a
//! launcher (`nccl-launch`, which sets `CHORUS_RANK`, `CHORUS_WORLD_SIZE`, …) it is one rank.

#![allow(dead_code)] // each example uses its part

use chorus::{Backend, Device};
use chorus_cuda_libs::nccl::launch::RankEnv;
use chorus_cuda_libs::nccl::{self, Comm, Config};

/// One rank this process drives: its communicator, its device, and a stream of that device
/// (the facade's, so that kernels and NCCL calls queue on the same stream, in order, without
/// waiting on the host).
pub struct Rank {
    pub comm: Comm,
    pub device: Device,
    pub stream: chorus::Stream,
}

impl Rank {
    /// The stream as the libraries take it.
    pub fn cuda(&self) -> &chorus_cuda_libs::Stream {
        self.stream
            .cuda_stream()
            .expect("a stream of a CUDA device has a CUDA stream")
    }
}

/// This process's ranks, or why the program cannot run here (no CUDA device, no NCCL): then
/// it prints that it was skipped and succeeds, as the other CUDA-library examples do.
pub fn ranks(example: &str) -> Result<Option<Vec<Rank>>, Box<dyn std::error::Error>> {
    if !Backend::Cuda.is_available() {
        println!("{example}: skipped: NCCL needs the CUDA backend");
        return Ok(None);
    }
    if let Err(e) = nccl::ensure() {
        println!("{example}: skipped: {e}");
        return Ok(None);
    }
    let comms = if RankEnv::is_launched() {
        vec![Comm::from_env(&Config::default())?]
    } else {
        let devices: Vec<usize> = (0..Backend::Cuda.devices().len()).collect();
        Comm::init_all(&devices)?
    };
    let mut ranks = Vec::new();
    for comm in comms {
        let device = Device::new(Backend::Cuda, comm.device())?;
        let stream = chorus::Stream::new_on(device)?;
        ranks.push(Rank {
            comm,
            device,
            stream,
        });
    }
    if ranks[0].comm.rank() == 0 {
        let (major, minor, patch) = nccl::version()?;
        println!(
            "{example}: NCCL {major}.{minor}.{patch}, {} rank(s){}",
            ranks[0].comm.size(),
            if RankEnv::is_launched() {
                ", one process each"
            } else {
                " in this process"
            }
        );
    }
    Ok(Some(ranks))
}

/// True when this process holds rank 0 (which prints and checks).
pub fn is_lead(ranks: &[Rank]) -> bool {
    ranks.iter().any(|r| r.comm.rank() == 0)
}

/// Waits for every rank's stream, watching its communicator.
pub fn wait_all(ranks: &[Rank]) -> chorus_cuda_libs::Result<()> {
    for r in ranks {
        r.comm.wait(r.cuda())?;
    }
    Ok(())
}

/// Finalizes every rank's communicator, together (the clean end, on every rank).
pub fn finalize(ranks: Vec<Rank>) -> chorus_cuda_libs::Result<()> {
    nccl::finalize_all(ranks.into_iter().map(|r| r.comm).collect())
}
