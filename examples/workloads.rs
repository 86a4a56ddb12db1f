//! What the workload examples (diffuse0, diffuse1, nbody, sph, reduction, transpose, sgemm, scan)
//! and the benchmark suite share: the kernel text, timing, the comparison with a CPU reference,
//! and the CPU references themselves (in `f64`).

use chorus::{Arg, Backend, Float4, MemoryBlock, Program};
use std::time::{Duration, Instant};

/// The kernel macros every workload uses (`unroll`, `inc`, the warp shuffles' sums and scans):
/// `kernels/prelude.lisp`.
pub const PRELUDE: &str = include_str!("kernels/prelude.lisp");

/// A program of the prelude followed by the kernel files `files` (name, text), checked now.
/// Errors name the files joined by `+`, at lines counted from the top of the prelude.
pub fn workload_program(files: &[(&str, &str)]) -> chorus::Result<Program> {
    let (text, name) = after_prelude(files);
    Program::new(text, name)
}

/// The prelude followed by `files`, and the name of the whole (the file names joined by `+`).
fn after_prelude(files: &[(&str, &str)]) -> (String, String) {
    let mut text = String::from(PRELUDE);
    let mut name = String::from("prelude.lisp");
    for (file, source) in files {
        text.push('\n');
        text.push_str(source);
        name.push('+');
        name.push_str(file);
    }
    (text, name)
}

/// The `hgemm-hopper` example's program: the tensor-core macro library, the prelude,
/// `kernels/hgemm-hopper.lisp` (the wgmma GEMMs) and `kernels/hgemm-tma.lisp` (the mma.sync
/// GEMMs that its pipeline feeds), checked now.
///
/// For tuning without a rebuild, `CHORUS_HOPPER_KERNELS_DIR` names a folder whose
/// `hgemm-hopper.lisp` and `hgemm-tma.lisp` replace the built-in ones (an edited kernel is
/// timed on the GPU machine by carrying the file, not the binary).
pub fn hopper_program() -> Result<Program, Box<dyn std::error::Error>> {
    let edited = std::env::var_os("CHORUS_HOPPER_KERNELS_DIR")
        .map(|dir| {
            let read = |(file, _): (&str, &str)| {
                let path = std::path::Path::new(&dir).join(file);
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("CHORUS_HOPPER_KERNELS_DIR: {}: {e}", path.display()))
            };
            Ok::<_, String>((read(kernels::HGEMM_HOPPER)?, read(kernels::HGEMM_TMA)?))
        })
        .transpose()?;
    let files = match &edited {
        Some((hopper, tma)) => [
            (kernels::HGEMM_HOPPER.0, hopper.as_str()),
            (kernels::HGEMM_TMA.0, tma.as_str()),
        ],
        None => [kernels::HGEMM_HOPPER, kernels::HGEMM_TMA],
    };
    let (text, name) = after_prelude(&files);
    Ok(Program::with_libraries(
        &[chorus::lang::library::Library::TensorCore],
        text,
        name,
    )?)
}

/// True when kernels run on the CPU executor: the examples then use smaller problems.
pub fn on_cpu(backend: Backend) -> bool {
    backend == Backend::Cpu
}

/// Runs `work` (which must wait for the device itself, e.g. by reading a result back) and
/// returns its result and the wall-clock time it took.
pub fn timed<T>(work: impl FnOnce() -> chorus::Result<T>) -> chorus::Result<(T, Duration)> {
    let start = Instant::now();
    let value = work()?;
    Ok((value, start.elapsed()))
}

/// ‖got − want‖₂ / ‖want‖₂ (0 when both are zero; infinite when `got` holds a NaN).
pub fn relative_error(
    got: impl IntoIterator<Item = f64>,
    want: impl IntoIterator<Item = f64>,
) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (g, w) in got.into_iter().zip(want) {
        if g.is_nan() {
            return f64::INFINITY;
        }
        diff += (g - w) * (g - w);
        norm += w * w;
    }
    if norm == 0.0 {
        diff.sqrt()
    } else {
        (diff / norm).sqrt()
    }
}

/// Prints the outcome of a check and returns whether it passed.
pub fn verdict(what: &str, error: f64, tolerance: f64) -> bool {
    let ok = error <= tolerance;
    println!(
        "{what}: relative error {error:.3e} (tolerance {tolerance:.0e}): {}",
        if ok {
            "verification succeeded"
        } else {
            "VERIFICATION FAILED"
        }
    );
    ok
}

/// Prints the elapsed time and the rate of `amount` units of work in it.
pub fn print_rate(elapsed: Duration, amount: f64, unit: &str) {
    let seconds = elapsed.as_secs_f64();
    println!(
        "elapsed time {:.3} ms, {:.3} {unit}",
        seconds * 1e3,
        amount / seconds
    );
}

/// The kernel text of each workload (`examples/kernels/NAME.lisp`), to pass to [`workload_program`].
pub mod kernels {
    /// Heat equation, global memory.
    pub const DIFFUSE0: (&str, &str) = ("diffuse0.lisp", include_str!("kernels/diffuse0.lisp"));
    /// Heat equation, shared tile with halo.
    pub const DIFFUSE1: (&str, &str) = ("diffuse1.lisp", include_str!("kernels/diffuse1.lisp"));
    /// All-pairs n-body.
    pub const NBODY: (&str, &str) = ("nbody.lisp", include_str!("kernels/nbody.lisp"));
    /// Smoothed-particle hydrodynamics.
    pub const SPH: (&str, &str) = ("sph.lisp", include_str!("kernels/sph.lisp"));
    /// Sum reduction.
    pub const REDUCTION: (&str, &str) = ("reduction.lisp", include_str!("kernels/reduction.lisp"));
    /// Matrix transpose.
    pub const TRANSPOSE: (&str, &str) = ("transpose.lisp", include_str!("kernels/transpose.lisp"));
    /// Register-tiled SGEMM.
    pub const SGEMM: (&str, &str) = ("sgemm.lisp", include_str!("kernels/sgemm.lisp"));
    /// Prefix scan.
    pub const SCAN: (&str, &str) = ("scan.lisp", include_str!("kernels/scan.lisp"));
    /// The Hopper GEMMs `hgemm-hopper` (BF16) and `fp8-gemm` (FP8 E4M3): TMA, mbarriers,
    /// warp-specialised wgmma (sm_90a).
    pub const HGEMM_HOPPER: (&str, &str) = (
        "hgemm-hopper.lisp",
        include_str!("kernels/hgemm-hopper.lisp"),
    );
    /// The mma.sync GEMMs `hgemm-tma` (BF16) that `hgemm-hopper.lisp`'s TMA pipeline feeds;
    /// they need the tensor-core macro library and that file first ([`super::hopper_program`]).
    pub const HGEMM_TMA: (&str, &str) = ("hgemm-tma.lisp", include_str!("kernels/hgemm-tma.lisp"));
}

/// The dynamic shared memory of `hgemm-hopper` and `fp8-gemm`: four stages of a 128-row A and
/// a 256-row B slice of 128 bytes a row, and 1024 bytes to align them to the 128-byte
/// swizzle's repeat.
pub const HOPPER_GEMM_SHARED_BYTES: u32 = 4 * (128 + 256) * 128 + 1024;

/// The tensor maps of a Hopper GEMM's operands, A (M×K) and B (N×K), both K-major: boxes of
/// 128 bytes along K (the 128-byte swizzle's span, swizzled), 128 rows of A, and 256 rows of B
/// (`b`) or 128 (`b_half`, for the clusters that share B).
pub struct HopperMaps {
    /// A's, 128-row boxes.
    pub a: chorus::cuda::TensorMap,
    /// B's, 256-row boxes.
    pub b: chorus::cuda::TensorMap,
    /// B's, 128-row boxes.
    pub b_half: chorus::cuda::TensorMap,
    /// The elements of one K slice (128 bytes): 64 BF16, 128 FP8.
    pub slice_k: usize,
}

impl HopperMaps {
    /// The maps of A at `a` and B at `b` (device addresses) of `data_type` for an `m`×`n`×`k`
    /// product.
    pub fn new(
        data_type: chorus::cuda::TensorDataType,
        (a, b): (u64, u64),
        (m, n, k): (usize, usize, usize),
    ) -> Result<HopperMaps, Box<dyn std::error::Error>> {
        let slice_k = 128 / data_type.size() as usize;
        let map = |address, rows, box_rows| {
            swizzled_map(data_type, address, [k, rows], [slice_k as u32, box_rows])
        };
        Ok(HopperMaps {
            a: map(a, m, 128)?,
            b: map(b, n, 256)?,
            b_half: map(b, n, 128)?,
            slice_k,
        })
    }

    /// The maps for `hgemm-tma-nn` (`define-tma-hgemm … :n-major t`): A as [`HopperMaps::new`]'s,
    /// B K×N with N innermost (`hgemm`'s layout) in boxes of 128 bytes of columns by a slice of
    /// rows; `b` and `b_half` are the same map (the kernels load 256 / slice_k boxes a stage, or
    /// half of them each in a pair of blocks).
    pub fn with_n_major_b(
        data_type: chorus::cuda::TensorDataType,
        (a, b): (u64, u64),
        (m, n, k): (usize, usize, usize),
    ) -> Result<HopperMaps, Box<dyn std::error::Error>> {
        let slice_k = 128 / data_type.size() as usize;
        let slice = slice_k as u32;
        let columns = swizzled_map(data_type, b, [n, k], [slice, slice])?;
        Ok(HopperMaps {
            a: swizzled_map(data_type, a, [k, m], [slice, 128])?,
            b: columns,
            b_half: columns,
            slice_k,
        })
    }
}

/// A 2-D map of the dense row-major matrix at `address` (`dims`, innermost first) in boxes of
/// `box_dims` elements, 128-byte swizzled, with 256-byte L2 promotion: the Hopper GEMMs' maps.
fn swizzled_map(
    data_type: chorus::cuda::TensorDataType,
    address: u64,
    dims: [usize; 2],
    box_dims: [u32; 2],
) -> chorus::Result<chorus::cuda::TensorMap> {
    use chorus::cuda::{TensorL2Promotion, TensorLayout, TensorMap, TensorSwizzle};
    let mut layout = TensorLayout::dense(data_type, address, &dims.map(|d| d as u64));
    layout.swizzle = TensorSwizzle::B128;
    layout.l2_promotion = TensorL2Promotion::B256;
    Ok(TensorMap::encode_tiled(&layout, &box_dims)?)
}

/// How a Hopper GEMM kernel of `kernels/hgemm-hopper.lisp` covers C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopperSchedule {
    /// `define-hopper-gemm`: one block per 128×256 tile in a 2-D grid, C as BF16.
    PerTile,
    /// `define-hopper-gemm … :grouped`: one block per tile in a 1-D grid that the kernel maps
    /// to tiles in grouped order, C as BF16.
    Grouped,
    /// `define-hopper-gemm-persistent`: one block per multiprocessor walking the tiles, C as
    /// 32-bit words of two BF16.
    Persistent,
    /// `define-hopper-gemm-persistent … :multicast`: as `Persistent`, in clusters of two blocks
    /// that share B, each loading half of it for both (B's map has 128-row boxes).
    Multicast,
}

impl HopperSchedule {
    /// Every schedule, in the order the examples run them.
    pub const ALL: [HopperSchedule; 4] = [
        HopperSchedule::PerTile,
        HopperSchedule::Grouped,
        HopperSchedule::Persistent,
        HopperSchedule::Multicast,
    ];

    /// The kernel of this schedule among those `kernels/hgemm-hopper.lisp` defines for
    /// `base` (`hgemm-hopper`, `fp8-gemm`): `base`, `base-grouped`, `base-persistent`,
    /// `base-multicast`.
    pub fn kernel(self, base: &str) -> String {
        let suffix = match self {
            HopperSchedule::PerTile => "",
            HopperSchedule::Grouped => "-grouped",
            HopperSchedule::Persistent => "-persistent",
            HopperSchedule::Multicast => "-multicast",
        };
        format!("{base}{suffix}")
    }

    /// The launch of `kernel` of `program` for an `m`×`n` C on the current device, three
    /// warpgroups a block: a block per 128×256 tile, or (persistent) as many blocks as the
    /// device runs at once (`Program::occupancy`: one per multiprocessor at this shared
    /// memory; for `Multicast`, two per cluster that fits) and no more than the tiles.
    pub fn launch(
        self,
        program: &Program,
        kernel: &str,
        (m, n): (usize, usize),
    ) -> chorus::Result<chorus::Launch<'static>> {
        fn shape(grid: impl chorus::IntoDim3) -> chorus::Launch<'static> {
            chorus::Launch::grid(grid)
                .block(384)
                .shared_mem(HOPPER_GEMM_SHARED_BYTES)
        }
        let tiles = (m / 128) * (n / 256);
        Ok(match self {
            HopperSchedule::PerTile => shape((m / 128, n / 256)),
            HopperSchedule::Grouped => shape(tiles),
            HopperSchedule::Persistent => {
                let o = program.occupancy(kernel, &shape(1))?;
                let resident = (o.multiprocessors * o.blocks_per_multiprocessor).max(1);
                shape((resident as usize).min(tiles))
            }
            HopperSchedule::Multicast => {
                let pairs = shape(2).cluster(2);
                let clusters = program.occupancy(kernel, &pairs)?.clusters.unwrap_or(1);
                shape((2 * clusters.max(1) as usize).min(tiles) & !1).cluster(2)
            }
        })
    }

    /// `None` when the kernels of this schedule can compute an `m`×`n` C over `k` with
    /// `slice_k` elements a K slice, else why not.
    pub fn unsupported_shape(
        self,
        (m, n, k): (usize, usize, usize),
        slice_k: usize,
    ) -> Option<String> {
        let rows = if self == HopperSchedule::Multicast {
            256
        } else {
            128
        };
        let fits = |x: usize, y: usize| x.checked_mul(y).is_some_and(|p| p < 1 << 31);
        if m == 0 || n == 0 || k == 0 || m % rows != 0 || n % 256 != 0 || k % slice_k != 0 {
            Some(format!(
                "{self:?} needs M a multiple of {rows}, N of 256 and K of {slice_k}, got {m}×{n}×{k}"
            ))
        } else if !(fits(m, n) && fits(m, k) && fits(n, k)) {
            Some(format!(
                "the Hopper GEMMs index in int: {m}×{n}×{k} is too large"
            ))
        } else {
            None
        }
    }
}

/// What a Hopper GEMM kernel reads A and B through.
#[derive(Clone, Copy)]
pub enum GemmInputs<'a> {
    /// Tensor maps: the kernels whose producer drives the TMA.
    Maps(&'a HopperMaps),
    /// A and B themselves (BF16): `hgemm-ws-nn`, whose producer warps copy with cp.async.
    Blocks(&'a MemoryBlock<chorus::bf16>, &'a MemoryBlock<chorus::bf16>),
}

/// Runs the kernel of `schedule` for `base` (`HopperSchedule::kernel`) of `program` on
/// `inputs` once to compile and load it, then `iterations` times on the null stream: the
/// kernel's name, the seconds per launch and C (`m`×`n`, row-major BF16) on the host. A shape
/// the schedule cannot tile is an error, as is multicast without tensor maps.
pub fn run_hopper_gemm(
    program: &Program,
    (base, schedule): (&str, HopperSchedule),
    inputs: GemmInputs,
    (m, n, k): (usize, usize, usize),
    iterations: u32,
) -> Result<(String, f64, Vec<chorus::bf16>), Box<dyn std::error::Error>> {
    let slice_k = match inputs {
        GemmInputs::Maps(maps) => maps.slice_k,
        GemmInputs::Blocks(..) => 64,
    };
    if let Some(why) = schedule.unsupported_shape((m, n, k), slice_k) {
        return Err(why.into());
    }
    let kernel = schedule.kernel(base);
    let kernel = kernel.as_str();
    let (a, b) = match inputs {
        // The clusters that share B load half of it each.
        GemmInputs::Maps(maps) => (
            Arg::tensor_map(&maps.a),
            Arg::tensor_map(if schedule == HopperSchedule::Multicast {
                &maps.b_half
            } else {
                &maps.b
            }),
        ),
        GemmInputs::Blocks(_, _) if schedule == HopperSchedule::Multicast => {
            return Err(format!("{kernel}: only the TMA multicasts").into());
        }
        GemmInputs::Blocks(a, b) => (a.as_arg(), b.as_arg()),
    };
    // C as the kernel takes it: BF16, or (persistent) pairs of BF16 in 32-bit words, the lower
    // column in the lower half.
    enum Output {
        Bf16(MemoryBlock<chorus::bf16>),
        Pairs(MemoryBlock<u32>),
    }
    let mut c = match schedule {
        HopperSchedule::PerTile | HopperSchedule::Grouped => {
            Output::Bf16(MemoryBlock::alloc(m * n)?)
        }
        HopperSchedule::Persistent | HopperSchedule::Multicast => {
            Output::Pairs(MemoryBlock::alloc(m * n / 2)?)
        }
    };
    let launch = schedule.launch(program, kernel, (m, n))?;
    let args = [
        a,
        b,
        match &c {
            Output::Bf16(c) => c.as_arg(),
            Output::Pairs(c) => c.as_arg(),
        },
        Arg::value(m as i32),
        Arg::value(n as i32),
        Arg::value(k as i32),
    ];
    program.launch(kernel, &args, launch.clone())?; // compile and load outside the time
    chorus::synchronize()?;
    let ((), elapsed) = timed(|| {
        for _ in 0..iterations {
            program.launch(kernel, &args, launch.clone())?;
        }
        chorus::synchronize()
    })?;
    let c = match &mut c {
        Output::Bf16(c) => {
            c.sync(chorus::Direction::DeviceToHost)?;
            c.as_slice().to_vec()
        }
        Output::Pairs(c) => {
            c.sync(chorus::Direction::DeviceToHost)?;
            c.as_slice()
                .iter()
                .flat_map(|&w| [w as u16, (w >> 16) as u16].map(chorus::bf16::from_bits))
                .collect()
        }
    };
    Ok((
        kernel.to_string(),
        elapsed.as_secs_f64() / f64::from(iterations),
        c,
    ))
}

/// Checks 1024 sampled entries of `c` (M×N row-major BF16) against the exact A·Bᵀ, with A
/// (M×K) and B (N×K) row-major, read through `a` and `b` (element index → value): how many
/// differ by more than half a BF16 ulp (C's rounding, when every partial sum is exact in f32),
/// and the largest relative difference.
pub fn check_gemm_samples(
    c: &[chorus::bf16],
    (m, n, k): (usize, usize, usize),
    a: impl Fn(usize) -> f64,
    b: impl Fn(usize) -> f64,
) -> (usize, f64) {
    let (mut bad, mut worst) = (0, 0.0f64);
    for s in 0..1024 {
        let (i, j) = ((s * 7919 + 13) % m, (s * 104_729 + 5) % n);
        let want: f64 = (0..k).map(|p| a(i * k + p) * b(j * k + p)).sum();
        let got = f64::from(c[i * n + j].to_f32());
        let error = (got - want).abs();
        if error > want.abs() / 256.0 + 1e-6 {
            bad += 1;
        }
        worst = worst.max(error / want.abs().max(1.0));
    }
    (bad, worst)
}

/// Why a warp-level tensor-core example (mma.sync, ldmatrix) cannot run on the current device
/// (HIP, Metal, the CPU with 64-lane waves, a CUDA device older than sm_80), or `None`.
pub fn tensor_cores_unavailable() -> chorus::Result<Option<String>> {
    let device = chorus::current_device()?;
    let target = device.target()?;
    let has = target.has(chorus::lang::target::Capability::TensorCores);
    Ok((!has).then(|| {
        format!(
            "mma.sync and ldmatrix need warp-level tensor cores, which {} ({}) does not have",
            target.arch,
            device.backend()
        )
    }))
}

/// Why a Hopper example cannot run here (not CUDA, or not compute capability 9.0), or `None`.
pub fn hopper_unavailable(backend: Backend) -> chorus::Result<Option<String>> {
    if backend != Backend::Cuda {
        return Ok(Some(
            "wgmma and TMA need a CUDA device of compute capability 9.0".into(),
        ));
    }
    let capability = match chorus::cuda::current_compute_capability() {
        Some(c) => c,
        None => chorus::cuda::compute_capability(0).map_err(chorus::cuda::Error::from)?,
    };
    Ok((capability != (9, 0)).then(|| {
        format!(
            "wgmma needs compute capability 9.0 (sm_90a); this device is {}.{}",
            capability.0, capability.1
        )
    }))
}

// ---------------------------------------------------------------------------------------------
// Heat equation (diffuse0, diffuse1)

/// cl-cuda's diffusion problem on an nx×ny grid of the unit square: the stencil's coefficients
/// (c0, c1, c2), computed in single precision as cl-cuda does (κ = 0.1, dt = 0.2·dx²/κ), and the
/// time step.
pub fn diffusion_coefficients(nx: usize, ny: usize) -> (f32, f32, f32, f32) {
    let kappa = 0.1f32;
    let dx = 1.0 / nx as f32;
    let dy = 1.0 / ny as f32;
    let dt = 0.2 * (dx * dx).min(dy * dy) / kappa;
    let c0 = kappa * (dt / (dx * dx));
    let c1 = kappa * (dt / (dy * dy));
    let c2 = 1.0 - 2.0 * (c0 + c1);
    (c0, c1, c2, dt)
}

/// The initial field f = exp(−30(x² + y²)), x = dx(jx + ½) − ½, cell j = nx·jy + jx.
pub fn diffusion_initial(nx: usize, ny: usize) -> Vec<f32> {
    let (dx, dy) = (1.0 / nx as f32, 1.0 / ny as f32);
    let mut f = Vec::with_capacity(nx * ny);
    for jy in 0..ny {
        for jx in 0..nx {
            let x = dx * (jx as f32 + 0.5) - 0.5;
            let y = dy * (jy as f32 + 0.5) - 0.5;
            f.push((-30.0 * (x * x + y * y)).exp());
        }
    }
    f
}

/// The arguments of `diffuse0` and `diffuse1`: one step from `src` into `dst`.
pub fn diffusion_args<'a>(
    src: &'a MemoryBlock<f32>,
    dst: &'a MemoryBlock<f32>,
    nx: usize,
    ny: usize,
    c: (f32, f32, f32),
) -> [Arg<'a>; 7] {
    [
        src.as_arg(),
        dst.as_arg(),
        Arg::value(nx as i32),
        Arg::value(ny as i32),
        Arg::value(c.0),
        Arg::value(c.1),
        Arg::value(c.2),
    ]
}

/// One step of the stencil in `f64`, with the kernels' Neumann boundaries, from `f` into `out`.
pub fn diffusion_step(f: &[f64], out: &mut [f64], nx: usize, ny: usize, c: (f64, f64, f64)) {
    for jy in 0..ny {
        for jx in 0..nx {
            let j = nx * jy + jx;
            let fc = f[j];
            let fw = if jx == 0 { fc } else { f[j - 1] };
            let fe = if jx == nx - 1 { fc } else { f[j + 1] };
            let fs = if jy == 0 { fc } else { f[j - nx] };
            let fnn = if jy == ny - 1 { fc } else { f[j + nx] };
            out[j] = c.0 * (fe + fw) + c.1 * (fnn + fs) + c.2 * fc;
        }
    }
}

/// `steps` steps of [`diffusion_step`] from `initial`.
pub fn diffusion_reference(
    initial: &[f32],
    nx: usize,
    ny: usize,
    c: (f32, f32, f32),
    steps: usize,
) -> Vec<f64> {
    let c = (c.0 as f64, c.1 as f64, c.2 as f64);
    let mut f: Vec<f64> = initial.iter().map(|&x| x as f64).collect();
    let mut next = vec![0.0; f.len()];
    for _ in 0..steps {
        diffusion_step(&f, &mut next, nx, ny, c);
        std::mem::swap(&mut f, &mut next);
    }
    f
}

// ---------------------------------------------------------------------------------------------
// N-body

/// The n-body example's constants: time step, velocity damping, softening².
pub const NBODY_DT: f32 = 0.016;
/// Velocity damping per step (cl-cuda: none).
pub const NBODY_DAMPING: f32 = 1.0;
/// Softening length squared.
pub const NBODY_SOFTENING2: f32 = 0.01;

/// cl-cuda's (the CUDA SDK's) initial condition: each body at a random direction (a normalised
/// point of [−½, ½]³) and a radius uniform in [2.5, 4]·1.56, with mass 1 in w; its velocity is
/// (x × ẑ)·1.56·2.64.
pub fn nbody_initial(n: usize, random: &mut crate::Random) -> (Vec<Float4>, Vec<Float4>) {
    let (scale, vscale) = (1.56f32, 1.56f32 * 2.64);
    let mut pos = Vec::with_capacity(n);
    let mut vel = Vec::with_capacity(n);
    while pos.len() < n {
        let d = [
            random.next_f32() - 0.5,
            random.next_f32() - 0.5,
            random.next_f32() - 0.5,
        ];
        let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        if !(1e-3..=0.5).contains(&len) {
            continue;
        }
        let r = scale * (2.5 + 1.5 * random.next_f32());
        let p = [d[0] / len * r, d[1] / len * r, d[2] / len * r];
        pos.push(Float4::new(p[0], p[1], p[2], 1.0));
        // x × ẑ = (y, −x, 0)
        vel.push(Float4::new(p[1] * vscale, -p[0] * vscale, 0.0, 1.0));
    }
    (pos, vel)
}

/// The acceleration on body `i` from every body of `pos` (itself included: it adds nothing),
/// in `f64`, with the kernel's softening.
pub fn nbody_acceleration(pos: &[Float4], i: usize, softening2: f64) -> [f64; 3] {
    let p = pos[i];
    let mut a = [0.0f64; 3];
    for q in pos {
        let d = [(q.x - p.x) as f64, (q.y - p.y) as f64, (q.z - p.z) as f64];
        let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + softening2;
        let s = q.w as f64 / (d2 * d2.sqrt());
        for c in 0..3 {
            a[c] += d[c] * s;
        }
    }
    a
}

// ---------------------------------------------------------------------------------------------
// Smoothed-particle hydrodynamics

/// cl-cuda's SPH parameters (see `kernels/sph.lisp`).
pub mod sph {
    /// Smoothing length.
    pub const H: f64 = 0.005;
    /// Time step.
    pub const DT: f64 = 0.0004;
    /// Viscosity.
    pub const VISC: f64 = 0.2;
    /// Acceleration limit.
    pub const LIMIT: f64 = 200.0;
    /// Particle mass.
    pub const PMASS: f64 = 0.00020543 / 8.0;
    /// Particle radius (for the walls).
    pub const RADIUS: f64 = 0.002;
    /// Wall penetration threshold.
    pub const EPSILON: f64 = 0.00001;
    /// Wall damping.
    pub const EXTDAMP: f64 = 512.0;
    /// Simulation units per world unit.
    pub const SIMSCALE: f64 = 0.004;
    /// Pressure stiffness.
    pub const INTSTIFF: f64 = 3.0;
    /// Wall stiffness.
    pub const EXTSTIFF: f64 = 20000.0;
    /// Rest density.
    pub const RESTDENSITY: f64 = 600.0;
    /// The box.
    pub const BOX_MIN: [f64; 3] = [-10.0, 0.0, -10.0];
    /// The box.
    pub const BOX_MAX: [f64; 3] = [30.0, 50.0, 30.0];
    /// Most particles one cell of the neighbour grid holds.
    pub const CAPACITY: usize = 400;
    /// The neighbour grid's cells per axis, as `kernels/sph.lisp` declares them.
    pub const GRID: [usize; 3] = [37, 45, 37];
}

/// The neighbour grid's geometry as the kernels compute it in single precision: delta = h/simscale,
/// origin = box-min − 2·delta, ceil(extent/delta) + 4 cells per axis. The example checks that
/// it agrees with the constants of `kernels/sph.lisp`.
pub fn sph_grid_geometry() -> ([f32; 3], f32, [usize; 3]) {
    let delta = 0.005f32 / 0.004f32;
    let (lo, hi) = (
        sph::BOX_MIN.map(|x| x as f32),
        sph::BOX_MAX.map(|x| x as f32),
    );
    let origin = [0, 1, 2].map(|a| lo[a] - delta * 2.0);
    let size = [0, 1, 2].map(|a| ((hi[a] - lo[a]) / delta).ceil() as usize + 4);
    (origin, delta, size)
}

/// cl-cuda's initial fluid block: a lattice of spacing (pmass/ρ₀)^⅓/simscale from `min` + spacing
/// up to (not including) `max`, stepping in single precision as cl-cuda's loops do.
pub fn sph_initial(min: [f32; 3], max: [f32; 3]) -> Vec<Float4> {
    let pmass = 0.00020543f32 / 8.0;
    let d = (pmass / 600.0f32).powf(1.0 / 3.0) / 0.004f32;
    let mut particles = Vec::new();
    let mut x = min[0] + d;
    while x < max[0] {
        let mut y = min[1] + d;
        while y < max[1] {
            let mut z = min[2] + d;
            while z < max[2] {
                particles.push(Float4::new(x, y, z, 0.0));
                z += d;
            }
            y += d;
        }
        x += d;
    }
    particles
}

/// The SPH simulation in `f64`, the same algorithm as the kernels with a deterministic neighbour
/// order: the reference the sph example checks against.
pub struct SphReference {
    /// Positions (world units).
    pub pos: Vec<[f64; 3]>,
    /// Velocities.
    pub vel: Vec<[f64; 3]>,
    /// Densities of the last step.
    pub rho: Vec<f64>,
}

impl SphReference {
    /// A simulation of particles at `pos`, at rest.
    pub fn new(pos: &[Float4]) -> SphReference {
        SphReference {
            pos: pos
                .iter()
                .map(|p| [p.x as f64, p.y as f64, p.z as f64])
                .collect(),
            vel: vec![[0.0; 3]; pos.len()],
            rho: vec![0.0; pos.len()],
        }
    }

    /// Advances one step.
    pub fn step(&mut self) {
        use sph::*;
        let n = self.pos.len();
        let delta = H / SIMSCALE;
        let origin = BOX_MIN.map(|x| x - 2.0 * delta);
        let cell_of = |p: &[f64; 3]| -> [i64; 3] {
            [0, 1, 2].map(|a| ((p[a] - origin[a]) / delta).floor() as i64)
        };
        let index = |c: [i64; 3]| -> Option<usize> {
            let inside = (0..3).all(|a| c[a] >= 0 && (c[a] as usize) < GRID[a]);
            inside.then(|| (c[2] as usize * GRID[1] + c[1] as usize) * GRID[0] + c[0] as usize)
        };
        let mut cells: Vec<Vec<usize>> = vec![Vec::new(); GRID[0] * GRID[1] * GRID[2]];
        for (p, x) in self.pos.iter().enumerate() {
            if let Some(c) = index(cell_of(x))
                && cells[c].len() < CAPACITY
            {
                cells[c].push(p);
            }
        }
        let neighbours = |x: &[f64; 3]| -> Vec<usize> {
            let c = cell_of(x);
            let mut out = Vec::new();
            for i in -1..=1 {
                for j in -1..=1 {
                    for k in -1..=1 {
                        if let Some(cell) = index([c[0] + i, c[1] + j, c[2] + k]) {
                            out.extend_from_slice(&cells[cell]);
                        }
                    }
                }
            }
            out
        };
        let h6 = H.powi(6);
        let poly6 = 315.0 / (64.0 * std::f64::consts::PI * H.powi(9));
        let spiky = -45.0 / (std::f64::consts::PI * h6);
        let visc_lap = 45.0 / (std::f64::consts::PI * h6);
        let dr = |a: &[f64; 3], b: &[f64; 3]| [0, 1, 2].map(|c| (a[c] - b[c]) * SIMSCALE);
        let norm = |v: &[f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        let lists: Vec<Vec<usize>> = self.pos.iter().map(neighbours).collect();
        for (i, list) in lists.iter().enumerate() {
            let mut rho = 0.0;
            for &j in list {
                let r = norm(&dr(&self.pos[i], &self.pos[j]));
                if r <= H {
                    rho += PMASS * poly6 * (H * H - r * r).powi(3);
                }
            }
            self.rho[i] = rho;
        }
        let prs: Vec<f64> = self
            .rho
            .iter()
            .map(|r| (r - RESTDENSITY) * INTSTIFF)
            .collect();
        let mut acc = vec![[0.0f64; 3]; n];
        for (i, list) in lists.iter().enumerate() {
            let mut f = [0.0f64; 3];
            for &j in list {
                if i == j {
                    continue;
                }
                let d = dr(&self.pos[i], &self.pos[j]);
                let r = norm(&d);
                if r <= H {
                    let p = -PMASS * (prs[i] + prs[j]) / (2.0 * self.rho[j])
                        * spiky
                        * (H - r)
                        * (H - r)
                        / r;
                    let v = VISC * PMASS / self.rho[j] * visc_lap * (H - r);
                    for c in 0..3 {
                        f[c] += p * d[c] + v * (self.vel[j][c] - self.vel[i][c]);
                    }
                }
            }
            let mut a = [
                f[0] / self.rho[i],
                f[1] / self.rho[i] - 9.8,
                f[2] / self.rho[i],
            ];
            let x = self.pos[i];
            let v = self.vel[i];
            let walls: [(f64, f64, [f64; 3]); 6] = [
                (BOX_MIN[0], x[0], [1.0, 0.0, 0.0]),
                (x[0], BOX_MAX[0], [-1.0, 0.0, 0.0]),
                (BOX_MIN[1], x[1], [0.0, 1.0, 0.0]),
                (x[1], BOX_MAX[1], [0.0, -1.0, 0.0]),
                (BOX_MIN[2], x[2], [0.0, 0.0, 1.0]),
                (x[2], BOX_MAX[2], [0.0, 0.0, -1.0]),
            ];
            for (x0, x1, normal) in walls {
                let diff = RADIUS * 2.0 - (x1 - x0) * SIMSCALE;
                if EPSILON < diff {
                    let adj = EXTSTIFF * diff
                        - EXTDAMP * (normal[0] * v[0] + normal[1] * v[1] + normal[2] * v[2]);
                    for c in 0..3 {
                        a[c] += adj * normal[c];
                    }
                }
            }
            let speed = norm(&a);
            if LIMIT < speed {
                a = a.map(|x| x * (LIMIT / speed));
            }
            acc[i] = a;
        }
        for ((x, v), a) in self.pos.iter_mut().zip(&mut self.vel).zip(&acc) {
            for c in 0..3 {
                v[c] += a[c] * DT;
                x[c] += v[c] * DT / SIMSCALE;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_error_measures_the_difference() {
        assert_eq!(relative_error([1.0, 2.0], [1.0, 2.0]), 0.0);
        let e = relative_error([3.0, 4.0], [0.0, 5.0]);
        assert!((e - (9.0f64 + 1.0).sqrt() / 5.0).abs() < 1e-12);
        assert!(relative_error([f64::NAN], [1.0]).is_infinite());
    }

    #[test]
    fn the_sph_grid_matches_the_kernel_constants() {
        let (origin, delta, size) = sph_grid_geometry();
        assert_eq!(size, sph::GRID);
        assert_eq!(delta, 1.2499999f32);
        assert_eq!(origin, [-12.5f32, -2.4999998, -12.5]);
        assert_eq!(
            sph_initial([-10.0, 0.0, -10.0], [0.0, 40.0, 30.0]).len(),
            11 * 45 * 45
        );
    }

    #[test]
    fn diffusion_conserves_heat_with_neumann_boundaries() {
        let (nx, ny) = (16, 12);
        let (c0, c1, c2, _) = diffusion_coefficients(nx, ny);
        let f0 = diffusion_initial(nx, ny);
        let f = diffusion_reference(&f0, nx, ny, (c0, c1, c2), 50);
        let before: f64 = f0.iter().map(|&x| x as f64).sum();
        let after: f64 = f.iter().sum();
        assert!((before - after).abs() < 1e-5 * before, "{before} {after}");
        assert!(f.iter().zip(&f0).any(|(a, &b)| (a - b as f64).abs() > 1e-3));
    }

    #[test]
    fn an_isolated_pair_attracts() {
        let pos = [
            Float4::new(0.0, 0.0, 0.0, 1.0),
            Float4::new(2.0, 0.0, 0.0, 1.0),
        ];
        // The body itself adds 0 (dx = 0) thanks to the softening; the other pulls with 2/(4 + ε²)^1.5.
        let a = nbody_acceleration(&pos, 0, 0.01);
        let want = 2.0 / 4.01f64.powf(1.5);
        assert!(
            (a[0] - want).abs() < 1e-12 && a[1] == 0.0 && a[2] == 0.0,
            "{a:?}"
        );
    }

    #[test]
    fn a_resting_sph_lattice_falls_and_stays_in_the_box() {
        let mut sim = SphReference::new(&sph_initial([-10.0, 0.0, -10.0], [-6.0, 6.0, -6.0]));
        for _ in 0..5 {
            sim.step();
        }
        assert!(sim.rho.iter().all(|&r| r > 0.0));
        assert!(sim.vel.iter().any(|v| v[1] < 0.0));
        assert!(
            sim.pos
                .iter()
                .all(|p| (0..3)
                    .all(|a| p[a] > sph::BOX_MIN[a] - 1.0 && p[a] < sph::BOX_MAX[a] + 1.0))
        );
    }

    /// The CUDA C of [`super::hopper_program`].
    fn hopper_cuda_source() -> String {
        super::hopper_program()
            .and_then(|program| Ok(program.cuda_source()?))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_hopper_program_has_the_wgmma_and_the_mma_sync_gemms() {
        let source = hopper_cuda_source();
        for base in ["hgemm_hopper", "fp8_gemm", "hgemm_tma", "hgemm_tma_nn"] {
            for suffix in ["", "_grouped", "_persistent", "_multicast"] {
                let kernel = format!(" {base}{suffix}(__grid_constant__");
                assert!(source.contains(&kernel), "{kernel}");
            }
        }
        for kernel in [
            "hgemm_ws_nn",
            "hgemm_ws_nn_grouped",
            "hgemm_ws_nn_persistent",
        ] {
            let signature = format!(" {kernel}(__nv_bfloat16* __restrict__ a");
            assert!(source.contains(&signature), "{signature}");
        }
        // The mma.sync consumers call ldmatrix and mma.sync (the module's helpers).
        let tma = &source[source.rfind(" hgemm_tma(").expect("hgemm_tma")..];
        assert!(tma.contains("chorus_ldmatrix_x4("));
        assert!(tma.contains("chorus_mma_m16n8k16_bf16("));
    }

    #[test]
    fn the_tma_fed_mma_sync_warps_fence_the_async_proxy_before_releasing_a_stage() {
        let source = hopper_cuda_source();
        // Each kernel's definition, from its `__global__` line to the next one's.
        let definitions: Vec<&str> = source
            .split("\n__global__ ")
            .skip(1)
            .map(|rest| rest.split("\nextern ").next().unwrap_or(rest))
            .collect();
        let body = |name: &str| {
            let head = format!(" {name}(");
            *(definitions.iter())
                .find(|d| d.lines().next().is_some_and(|line| line.contains(&head)))
                .unwrap_or_else(|| panic!("no definition of {name}"))
        };
        // The TMA writes through the async proxy what ldmatrix read through the generic one:
        // without the fence, refilled stages were read now and then (H100, 2026-12-06).
        for base in ["hgemm_tma", "hgemm_tma_nn"] {
            for suffix in ["", "_grouped", "_persistent", "_multicast"] {
                let name = format!("{base}{suffix}");
                // The warp's one `__syncwarp` is its release (`release-warp`); the statement
                // before it must be the fence.
                let lines: Vec<&str> = body(&name).lines().map(str::trim).collect();
                let releases: Vec<usize> = (0..lines.len())
                    .filter(|&i| lines[i] == "__syncwarp();")
                    .collect();
                assert_eq!(releases.len(), 1, "{name}: one release a slice");
                assert!(
                    releases[0] > 0 && lines[releases[0] - 1] == "chorus_fence_proxy_async();",
                    "{name}: no fence right before the release"
                );
            }
        }
        // cp.async writes through the generic proxy: no fence in the main loop.
        for name in [
            "hgemm_ws_nn",
            "hgemm_ws_nn_grouped",
            "hgemm_ws_nn_persistent",
        ] {
            assert!(
                !body(name).contains("chorus_fence_proxy_async();"),
                "{name}"
            );
        }
    }

    #[test]
    fn the_prelude_defines_the_shared_macros() {
        for name in [
            "unroll",
            "inc",
            "warp-sum-down",
            "warp-scan-up",
            "float4-sum",
        ] {
            assert!(
                PRELUDE.contains(&format!("(defkernelmacro {name} ")),
                "{name}"
            );
        }
    }
}
