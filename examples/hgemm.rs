//! BF16 matrix product C = A·B on the tensor cores (mma.sync m16n8k16 + ldmatrix + a cp.async
//! pipeline; `kernels/hgemm.lisp`, written with the tensor-core macro library), f32
//! accumulation, BF16 result, in seven variants (128×128 with k-tiles of 32 and of 64, with the
//! copies interleaved and with double-buffered fragments; 128×256, also with double-buffered
//! fragments; 256×128); on an sm_90 GPU also the schedules of `hgemm-tma-nn` and `hgemm-ws-nn`
//! (`kernels/hgemm-tma.lisp`: the same instructions on 128×256 tiles in eight warps that wait
//! on mbarriers instead of block barriers, fed by a producer warpgroup through the TMA or with
//! cp.async). Checks sampled entries of each against an f64 host reference (all of them on the
//! CPU executor) and, on CUDA, against cuBLAS's BF16 `gemmEx` in the same run, and prints each
//! rate and its ratio to cuBLAS's.
//!
//! `cargo run --release --example hgemm -- [--size N] [--iterations I]` (default 8192³ on the
//! GPU; 256×256×128 on the CPU executor, `CHORUS_BACKEND=cpu`; a size that a block shape does
//! not tile skips that shape). For tuning without a rebuild: `--only NAMES` times some of the
//! file's shapes, `--define 'NAME WARPS-M WARPS-N STAGES [options]'` adds `define-hgemm`
//! shapes, `--source FILE` reads an edited `kernels/hgemm.lisp`.

use chorus::{Backend, Direction, MemoryBlock, bf16};
use chorus_cuda_libs::Transpose;
use chorus_cuda_libs::cublas::Blas;
use chorus_examples::tensor_gemm::{self, HgemmKernel, close, reference_entry};
use chorus_examples::workloads::HopperSchedule;
use chorus_examples::{Random, banner, workloads};
use std::process::ExitCode;
use std::time::Instant;

/// How the producer warpgroup of the sm_90 kernels of `kernels/hgemm-tma.lisp` for this
/// layout (`:n-major t`) fills their stages: `hgemm`'s mma.sync and ldmatrix in eight warps
/// that wait on mbarriers, fed through the TMA (`hgemm-tma-nn`) or with cp.async
/// (`hgemm-ws-nn`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Feed {
    Tma,
    CpAsync,
}

impl Feed {
    /// Both, in the order the example times them.
    const ALL: [Feed; 2] = [Feed::Tma, Feed::CpAsync];

    /// The kernel family: its schedules are `HopperSchedule::kernel` of this name.
    fn family(self) -> &'static str {
        match self {
            Feed::Tma => "hgemm-tma-nn",
            Feed::CpAsync => "hgemm-ws-nn",
        }
    }

    /// The producer, for the printed line.
    fn producer(self) -> &'static str {
        match self {
            Feed::Tma => "TMA",
            Feed::CpAsync => "cp.async warps",
        }
    }

    /// Its schedules: all four through the TMA; no multicast with cp.async (only the TMA
    /// multicasts).
    fn schedules(self) -> impl Iterator<Item = HopperSchedule> {
        (HopperSchedule::ALL.into_iter())
            .filter(move |&s| self == Feed::Tma || s != HopperSchedule::Multicast)
    }
}

/// Every (feed, schedule) of the sm_90 kernels.
fn hopper_runs() -> impl Iterator<Item = (Feed, HopperSchedule)> {
    (Feed::ALL.into_iter()).flat_map(|feed| feed.schedules().map(move |s| (feed, s)))
}

/// `len` bf16 values uniform in [−1, 1).
fn random_matrix(len: usize, random: &mut Random) -> Vec<bf16> {
    (0..len)
        .map(|_| bf16::from_f32(2.0 * random.next_f32() - 1.0))
        .collect()
}

/// Runs `work` `iterations` times after one warm-up and returns the seconds per run (the null
/// stream orders the kernels and cuBLAS; it is synchronised before and after).
fn seconds_per_run(
    iterations: usize,
    mut work: impl FnMut() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<f64, Box<dyn std::error::Error>> {
    let stream = chorus_cuda_libs::Stream::null();
    work()?;
    stream.synchronize()?;
    let start = Instant::now();
    for _ in 0..iterations {
        work()?;
    }
    stream.synchronize()?;
    Ok(start.elapsed().as_secs_f64() / iterations as f64)
}

/// cuBLAS's product of the same A and B (on CUDA), its time, and what comparing every entry of
/// C with it needs. A race that corrupts a few tiles now and then can miss the samples, so
/// every entry is compared too: within a BF16 ulp of the larger plus the f32 sums' reordering,
/// bounded by Σ_p |a_ip| · max_p |b_pj| (for 64 M entries, the f64 reference costs too much).
struct BlasResult {
    /// Seconds a product.
    seconds: f64,
    /// Its C.
    c: MemoryBlock<bf16>,
    /// Σ_p |a_ip| for each row i of A.
    row_sums: Vec<f64>,
    /// max_p |b_pj| for each column j of B.
    column_max: Vec<f64>,
}

impl BlasResult {
    fn new(
        seconds: f64,
        c: MemoryBlock<bf16>,
        a: &[bf16],
        b: &[bf16],
        (n, k): (usize, usize),
    ) -> BlasResult {
        let row_sums = (a.chunks(k))
            .map(|row| row.iter().map(|x| x.to_f64().abs()).sum())
            .collect();
        let mut column_max = vec![0.0f64; n];
        for row in b.chunks(n) {
            for (max, x) in column_max.iter_mut().zip(row) {
                *max = max.max(x.to_f64().abs());
            }
        }
        BlasResult {
            seconds,
            c,
            row_sums,
            column_max,
        }
    }

    /// How many entries of `c` (n columns) differ from cuBLAS's beyond the bound.
    fn differing_entries(&self, c: &[bf16], n: usize) -> usize {
        let reference = self.c.as_slice();
        (self.row_sums.iter().enumerate())
            .map(|(i, row_sum)| {
                (self.column_max.iter().enumerate())
                    .filter(|&(j, column_max)| {
                        let (ours, theirs) = (c[i * n + j].to_f64(), reference[i * n + j].to_f64());
                        (ours - theirs).abs()
                            > ours.abs().max(theirs.abs()) / 128.0 + 2e-5 * row_sum * column_max
                    })
                    .count()
            })
            .sum()
    }
}

/// Which block shapes to time: the file's (or those named in `only`) and the `--define`d ones,
/// from the built-in `kernels/hgemm.lisp` or the text of `--source`.
struct Selection {
    only: Option<Vec<String>>,
    defined: Vec<HgemmKernel>,
    source: Option<String>,
}

fn run(
    size: Option<usize>,
    iterations: usize,
    selection: &Selection,
) -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("hgemm")?;
    if let Some(why) = workloads::tensor_cores_unavailable()? {
        println!("skipped: {why}");
        return Ok(true);
    }
    let cpu = workloads::on_cpu(backend);
    let (m, n, k) = match size {
        Some(s) => (s, s, s),
        None if cpu => (256, 256, 128),
        None => (8192, 8192, 8192),
    };
    // Every block shape that tiles this size; the others say why not.
    let chosen_name =
        |name: &str| (selection.only.as_ref()).is_none_or(|names| names.iter().any(|n| n == name));
    let mut kernels = Vec::new();
    let chosen = HgemmKernel::ALL
        .into_iter()
        .filter(|kernel| chosen_name(kernel.name));
    for kernel in chosen.chain(selection.defined.iter().copied()) {
        match kernel.unsupported_shape(m, n, k) {
            None => kernels.push(kernel),
            Some(why) => println!("skipped: {why}"),
        }
    }
    // The sm_90 kernels' schedules (mbarriers, setmaxnreg and the TMA).
    let mut schedules: Vec<_> = hopper_runs()
        .filter(|(feed, schedule)| chosen_name(&schedule.kernel(feed.family())))
        .collect();
    if !schedules.is_empty() {
        let why = workloads::hopper_unavailable(backend)?.or_else(|| {
            (schedules.iter()).find_map(|(_, schedule)| schedule.unsupported_shape((m, n, k), 64))
        });
        if let Some(why) = why {
            println!("skipped: hgemm-tma-nn, hgemm-ws-nn: {why}");
            schedules.clear();
        }
    }
    if kernels.is_empty() && schedules.is_empty() {
        return Err(
            format!("no chosen kernel runs {m}×{n}×{k} here (the lines above say why)").into(),
        );
    }
    let program = tensor_gemm::program_from(
        selection.source.as_deref().unwrap_or(tensor_gemm::HGEMM),
        &selection.defined,
    )?;
    let mut random = Random::new(7);
    let a_host = random_matrix(m * k, &mut random);
    let b_host = random_matrix(k * n, &mut random);
    let a = MemoryBlock::from_slice(&a_host)?;
    let b = MemoryBlock::from_slice(&b_host)?;
    let flop = 2.0 * (m * n * k) as f64;
    let samples: Vec<(usize, usize)> = if cpu {
        (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
    } else {
        (0..2048)
            .map(|s| ((s * 7919) % m, (s * 104_729) % n))
            .collect()
    };
    println!("{m}×{n}×{k}; {} sampled entries checked", samples.len());
    // cuBLAS first, on CUDA: each block shape's rate is then printed with its ratio as soon as
    // it is measured.
    let blas_result = if backend == Backend::Cuda {
        let stream = chorus_cuda_libs::Stream::null();
        let blas = Blas::new(&stream)?;
        let mut reference = MemoryBlock::<bf16>::alloc(m * n)?;
        let theirs = seconds_per_run(iterations, || {
            Ok(blas.gemm_ex_row_major::<bf16, bf16>(
                Transpose::No,
                Transpose::No,
                m,
                n,
                k,
                1.0,
                &a,
                k,
                &b,
                n,
                0.0,
                &mut reference,
                n,
            )?)
        })?;
        reference.sync(Direction::DeviceToHost)?;
        println!(
            "cuBLAS gemmEx (BF16 in and out, f32 compute): {:.3} ms, {:.1} TFLOP/s",
            theirs * 1e3,
            flop / theirs / 1e12
        );
        Some(BlasResult::new(theirs, reference, &a_host, &b_host, (n, k)))
    } else {
        None
    };
    // How many sampled entries of C are not within BF16 rounding of the f64 reference, and
    // (on CUDA) how many differ from cuBLAS's by more than a BF16 ulp.
    let check = |c: &[bf16]| {
        let bad = samples
            .iter()
            .filter(|&&(i, j)| {
                let (want, magnitude) = reference_entry(&a_host, &b_host, (n, k), i, j);
                !close(c[i * n + j], want, magnitude)
            })
            .count();
        let differ = blas_result.as_ref().map(|blas| {
            let reference = blas.c.as_slice();
            // Both round an f32 sum to bf16: within one bf16 ulp of each other.
            samples
                .iter()
                .filter(|&&(i, j)| {
                    let (want, magnitude) = reference_entry(&a_host, &b_host, (n, k), i, j);
                    (c[i * n + j].to_f64() - reference[i * n + j].to_f64()).abs()
                        > want.abs() / 128.0 + 2e-5 * magnitude + 1e-30
                })
                .count()
        });
        (bad, differ)
    };
    // Prints a checked kernel's line and says whether it passed.
    let report = |shape: &str, ours: f64, c: &[bf16]| {
        let (bad, differ) = check(c);
        let differ_anywhere = blas_result
            .as_ref()
            .map(|blas| blas.differing_entries(c, n));
        print!(
            "{shape}: {:.3} ms, {:.1} TFLOP/s",
            ours * 1e3,
            flop / ours / 1e12
        );
        if let (Some(blas), Some(differ)) = (&blas_result, differ) {
            print!(
                ", {:.1}% of cuBLAS; {differ} sampled entries differ from cuBLAS's by more \
                 than a bf16 ulp",
                100.0 * blas.seconds / ours
            );
        }
        print!(
            "; {} of {} within bf16 rounding of the f64 reference",
            samples.len() - bad,
            samples.len()
        );
        if let Some(count) = differ_anywhere {
            print!("; {count} of all {} entries differ from cuBLAS's", m * n);
        }
        println!();
        bad == 0 && differ.unwrap_or(0) == 0 && differ_anywhere.unwrap_or(0) == 0
    };
    let mut ok = true;
    for kernel in kernels {
        let mut c = MemoryBlock::<bf16>::alloc(m * n)?;
        let ours = if cpu {
            let start = Instant::now();
            kernel.launch(&program, &a, &b, &c, (m, n, k))?;
            start.elapsed().as_secs_f64()
        } else {
            seconds_per_run(iterations, || {
                Ok(kernel.launch(&program, &a, &b, &c, (m, n, k))?)
            })?
        };
        let (rows, columns) = kernel.tile();
        let shape = format!(
            "{} (Chorus, mma.sync, {rows}×{columns}×{} block tiles, {} threads, {} stages)",
            kernel.name,
            kernel.tile_k,
            kernel.threads(),
            kernel.stages,
        );
        if kernel.is_probe() {
            let rate = format!("{:.3} ms, {:.1} TFLOP/s", ours * 1e3, flop / ours / 1e12);
            let share = match &blas_result {
                Some(blas) => format!(", {:.1}% of cuBLAS", 100.0 * blas.seconds / ours),
                None => String::new(),
            };
            println!(
                "{shape}: {rate}{share}; a probe ({}): not checked",
                kernel.options
            );
            continue;
        }
        c.sync(Direction::DeviceToHost)?;
        ok &= report(&shape, ours, c.as_slice());
    }
    if !schedules.is_empty() {
        let program = workloads::hopper_program()?;
        let address = |block: &MemoryBlock<bf16>| block.device_address().ok_or("no device address");
        let maps = workloads::HopperMaps::with_n_major_b(
            chorus::cuda::TensorDataType::Bf16,
            (address(&a)?, address(&b)?),
            (m, n, k),
        )?;
        for (feed, schedule) in schedules {
            let inputs = match feed {
                Feed::Tma => workloads::GemmInputs::Maps(&maps),
                Feed::CpAsync => workloads::GemmInputs::Blocks(&a, &b),
            };
            let (kernel, seconds, c) = workloads::run_hopper_gemm(
                &program,
                (feed.family(), schedule),
                inputs,
                (m, n, k),
                iterations as u32,
            )?;
            let shape = format!(
                "{kernel} (Chorus, mma.sync fed by {}, 128×256×64 block tiles, 8 mma warps, 4 \
                 stages)",
                feed.producer()
            );
            ok &= report(&shape, seconds, &c);
        }
    }
    if ok {
        println!("verification succeeded");
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let matches = clap::Command::new("hgemm")
        .about("BF16 GEMM on the tensor cores (mma.sync, ldmatrix, cp.async), against cuBLAS")
        .arg(
            clap::Arg::new("size")
                .long("size")
                .value_parser(clap::value_parser!(usize))
                .help(
                    "M = N = K (multiples of 128; default 8192 on a GPU, 256×256×128 on the CPU)",
                ),
        )
        .arg(
            clap::Arg::new("iterations")
                .long("iterations")
                .value_parser(clap::value_parser!(usize))
                .default_value("20")
                .help("timed runs after one warm-up (GPU)"),
        )
        .arg(
            clap::Arg::new("only")
                .long("only")
                .value_delimiter(',')
                .value_parser(|name: &str| {
                    let names: Vec<String> = (HgemmKernel::ALL.iter())
                        .map(|k| k.name.to_string())
                        .chain(hopper_runs().map(|(feed, s)| s.kernel(feed.family())))
                        .collect();
                    if names.iter().any(|known| known == name) {
                        Ok(name.to_string())
                    } else {
                        Err(format!("expected one of {}", names.join(", ")))
                    }
                })
                .help(
                    "time only these of the file's block shapes and of hgemm-tma-nn's and \
                     hgemm-ws-nn's schedules (comma-separated)",
                ),
        )
        .arg(
            clap::Arg::new("define")
                .long("define")
                .action(clap::ArgAction::Append)
                .value_parser(|text: &str| HgemmKernel::parse_definition(text))
                .help(
                    "also define and time a block shape: define-hgemm's arguments, \
                     'NAME WARPS-M WARPS-N STAGES [:tile-k 32|64] [:warp-n 64|32] [:min-blocks N] \
                     [:interleave t] [:prefetch t] \
                     [:probe no-copies|mma-only|no-mma|l1-copies]' (repeatable; a probe leaves \
                     work out and is timed, not checked)",
                ),
        )
        .arg(
            clap::Arg::new("source")
                .long("source")
                .value_name("FILE")
                .value_parser(clap::value_parser!(std::path::PathBuf))
                .help(
                    "read the kernels from FILE instead of the built-in kernels/hgemm.lisp \
                     (it must define the shapes timed)",
                ),
        )
        .get_matches();
    let size = matches.get_one::<usize>("size").copied();
    let iterations = matches
        .get_one::<usize>("iterations")
        .copied()
        .unwrap_or(20)
        .max(1);
    let source = match matches.get_one::<std::path::PathBuf>("source") {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!("hgemm: cannot read {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let selection = Selection {
        source,
        only: matches
            .get_many::<String>("only")
            .map(|names| names.cloned().collect()),
        defined: matches
            .get_many::<HgemmKernel>("define")
            .map(|kernels| kernels.copied().collect())
            .unwrap_or_default(),
    };
    chorus_examples::exit_code("hgemm", run(size, iterations, &selection))
}
