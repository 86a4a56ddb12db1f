//! What a target can run: one [`Capability`] per language feature that not every target has,
//! and the set of them a target has ([`Capabilities`]), as naga's `valid::Capabilities`.

use std::fmt;

/// A language feature that some targets lack. The validator
/// ([`crate::check::validate`]) reports each use of one the target does not have, at its span.
///
/// Sources, for the CUDA columns: the CUDA C++ Programming Guide (CUDA 13.0), sections
/// "Compute Capabilities" (feature table), "Atomic Functions", "Warp Shuffle Functions",
/// "Warp Match Functions", "Warp Reduce Functions", "Thread Block Clusters"; for HIP: the HIP
/// documentation of ROCm 6.2 ("HIP programming guide: Warp cross-lane functions", "Atomic
/// functions", "Kernel language C++ support") and the AMD Instinct and Radeon ISA manuals; for
/// Metal: the Metal Shading Language Specification 3.1 (MSL) and Apple's Metal Feature Set
/// Tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// `double` and the `double2`/`double3`/`double4` vectors. Every CUDA and HIP device; MSL has
    /// no 64-bit floating type (MSL 3.1 §2.1: "double is not supported").
    Float64,
    /// `half` and `half2`. CUDA: arithmetic from sm_53 (`cuda_fp16.h`); HIP: every target
    /// (`hip_fp16.h`); MSL: `half` is a core type.
    Float16,
    /// `bfloat16`. CUDA: sm_80 (native `__nv_bfloat16` arithmetic, `cuda_bf16.h`); HIP:
    /// `__hip_bfloat16` (`amd_hip_bf16.h`) on every target; MSL 3.1 adds `bfloat`.
    BFloat16,
    /// `fp8` (OCP E4M3) and its conversions. The language uses it as a storage type (convert
    /// before arithmetic), so CUDA has it on every architecture: `cuda_fp8.h` converts in
    /// hardware from sm_89 and in software before. HIP: gfx942, gfx950 and gfx12
    /// (`amd_hip_fp8.h`; gfx942's hardware format is the FNUZ variant, converted by the
    /// header). No MSL type.
    Fp8,
    /// `fp4` (OCP E2M1) and its conversions, a storage type as `fp8`: CUDA converts in hardware
    /// from sm_100 and in software before (`cuda_fp4.h`, CUDA 12.8 and newer); HIP: gfx950
    /// (`amd_hip_fp4.h`). No MSL type.
    Fp4,
    /// Atomics on 64-bit integers (`atomic-add` … on `uint64*`, `int64*`). CUDA: every
    /// supported architecture (64-bit `atomicMin`/`atomicMax` from sm_35); HIP: every target;
    /// MSL 3.1 has only `atomic_ulong` min/max on Apple8 and newer, not the full set.
    Atomic64,
    /// `atomic-cas` on `uint16*`. CUDA: `atomicCAS(unsigned short int*, …)` from sm_70. Neither
    /// HIP nor MSL has 16-bit atomics.
    Atomic16,
    /// `atomic-add` and `atomic-exch` on `float*`. CUDA: sm_20; HIP: every target; MSL 3.0 and
    /// newer: `atomic_float` in device memory (Apple7 and newer).
    FloatAtomics,
    /// `atomic-add` on `double*`. CUDA: sm_60; HIP: every target (a CAS loop where the
    /// hardware has none). Not in MSL (no `double`).
    DoubleAtomics,
    /// `atomic-add` on `half*` and `bfloat16*`. CUDA: `__half` from sm_70, `__nv_bfloat16` from
    /// sm_80. HIP documents packed `__half2` atomics only; MSL has none.
    HalfAtomics,
    /// Thread-block clusters: the `cluster-*` index variables, `cluster-rank`,
    /// `cluster-barrier`, `threadfence-cluster` and a launch bound's cluster size. CUDA sm_90
    /// and newer only.
    Clusters,
    /// The device random-number generator (`curand-state-xorwow` and the `curand-*`
    /// built-ins): CUDA's cuRAND device API; HIP's hipRAND/rocRAND device API has an XORWOW
    /// state; the CPU executor reproduces cuRAND's sequences. Metal has no device library.
    DeviceRandom,
    /// `cuda-asm`: inline CUDA C or PTX, emitted verbatim, so only a CUDA compiler accepts it.
    InlineAsm,
    /// `printf` from device code. CUDA: sm_20; HIP: every target; MSL 3.1 has none (`os_log`
    /// arrives with MSL 3.2).
    Printf,
    /// `:managed` globals (`__managed__`, unified memory). CUDA: sm_30; HIP: `__managed__`;
    /// Metal has no managed program-scope variables.
    ManagedMemory,
    /// `:device` globals: mutable program-scope variables in device memory that the host reads
    /// and writes by name. CUDA and HIP (`__device__`); Metal as the fields of a structure in a
    /// device buffer the host keeps per program and binds after a kernel's arguments (MSL 3.1
    /// §4.2 allows program-scope variables only in the `constant` address space).
    DeviceGlobals,
    /// `:shared` globals: one per block at program scope. CUDA and HIP (`__shared__` at file
    /// scope); MSL 3.1 §4.4 allows `threadgroup` variables only inside kernel functions.
    SharedGlobals,
    /// `with-dynamic-shared-memory`. CUDA (`extern __shared__`), HIP (`extern __shared__`
    /// / `HIP_DYNAMIC_SHARED`), Metal (a `threadgroup` buffer argument sized with
    /// `setThreadgroupMemoryLength`).
    DynamicSharedMemory,
    /// `(declare (launch-bounds N))`: a maximum block size. CUDA and HIP `__launch_bounds__`;
    /// MSL `[[max_total_threads_per_threadgroup(N)]]`.
    LaunchBounds,
    /// A launch bound's second value, the minimum resident blocks per multiprocessor. CUDA;
    /// HIP's second `__launch_bounds__` value is a minimum of waves per execution unit, which a
    /// HIP printer derives from it. Metal has no equivalent: a hint,
    /// not a meaning, so the MSL printer drops it.
    LaunchMinBlocks,
    /// `shfl-sync`, `shfl-up-sync`, `shfl-down-sync`, `shfl-xor-sync`. CUDA sm_30; HIP
    /// `__shfl*`; MSL `simd_shuffle*`.
    WarpShuffle,
    /// `ballot-sync`, `all-sync`, `any-sync`, `activemask`. CUDA; HIP `__ballot`, `__all`,
    /// `__any`, `__activemask`; MSL `simd_ballot`, `simd_all`, `simd_any`,
    /// `simd_active_threads_mask`.
    WarpVote,
    /// `match-any-sync`, `match-all-sync`. CUDA sm_70; HIP `__match_any`/`__match_all`; no
    /// MSL equivalent.
    WarpMatch,
    /// `reduce-OP-sync`. CUDA sm_80 (`__reduce_*_sync`); not in HIP (ROCm/clr issue 10);
    /// MSL `simd_sum`, `simd_min`, `simd_max`, `simd_and`, `simd_or`, `simd_xor`.
    WarpReduce,
    /// `syncwarp`. CUDA `__syncwarp`; HIP `__syncwarp` (a wave executes in lockstep); MSL
    /// `simdgroup_barrier`.
    WarpSync,
    /// `threadfence-system`: a fence ordering writes for the host and other devices. CUDA
    /// `__threadfence_system`, HIP `__threadfence_system`; MSL 3.1 has no system scope.
    SystemFence,
    /// Functions that call themselves, directly or through others. CUDA (sm_20) and HIP
    /// allocate a stack; MSL 3.1 §2.1 forbids recursive calls.
    Recursion,
    /// Texture and surface objects: the `texture-object` and `surface-object` types and the
    /// `tex1d-fetch`, `tex1d`/`tex2d`/`tex3d` and `surfNd-read`/`surfNd-write` built-ins. CUDA:
    /// texture objects from sm_30 (CUDA C++ Programming Guide, "Texture and Surface Memory");
    /// the CPU executor reproduces their filtering and addressing. HIP has
    /// `hipTextureObject_t`/`hipSurfaceObject_t` with `tex2D<T>` and friends; MSL has
    /// `texture2d<T>` arguments with samplers (a different binding model, for its printer to
    /// map or refuse).
    Textures,
    /// Warp-level matrix multiply-accumulate and matrix loads: `mma-sync` (f16, bf16, tf32,
    /// 8-bit integers) and `ldmatrix`. CUDA sm_80 (PTX ISA "Warp-level matrix instructions":
    /// the bf16, tf32 and m16n8k32 integer shapes need sm_80); the CPU executor runs them over
    /// the 32 lanes of a warp. HIP's MFMA and Metal's simdgroup matrices have other shapes
    /// and layouts: not these built-ins.
    TensorCores,
    /// `mma-sync` on fp8 (`:e4m3`, `:e5m2`, m16n8k32). CUDA sm_89 and newer.
    Fp8TensorCores,
    /// `cp-async` (global → shared copies that bypass the registers) with
    /// `cp-async-commit`, `cp-async-wait` and `cp-async-wait-all`. CUDA sm_80; the CPU
    /// executor completes each copy at once.
    AsyncCopy,
    /// Hopper's asynchronous data movement: `tensor-map` parameters and the `tma-*` bulk
    /// tensor copies, transaction-counting mbarriers (`mbarrier-arrive-expect-tx`,
    /// `mbarrier-try-wait` with a phase parity) and `fence-proxy-async`. CUDA sm_90 and newer
    /// (PTX ISA 8.0, "cp.async.bulk.tensor", "mbarrier"); neither HIP nor MSL has them, and the
    /// CPU executor does not model the async proxy.
    TensorMemoryAccess,
    /// Warpgroup matrix multiply-accumulate (`wgmma-*`, accumulators, matrix descriptors) and
    /// register reallocation (`setmaxnreg-inc`/`-dec`): PTX's arch-specific features of
    /// sm_90a, so CUDA compute capability 9.0 exactly (Blackwell has no `wgmma`), compiled for
    /// `sm_90a`. No HIP, MSL or CPU equivalent.
    WarpgroupMma,
}

impl Capability {
    /// Every capability, in declaration order.
    pub const ALL: [Capability; 33] = [
        Capability::Float64,
        Capability::Float16,
        Capability::BFloat16,
        Capability::Fp8,
        Capability::Fp4,
        Capability::Atomic64,
        Capability::Atomic16,
        Capability::FloatAtomics,
        Capability::DoubleAtomics,
        Capability::HalfAtomics,
        Capability::Clusters,
        Capability::DeviceRandom,
        Capability::InlineAsm,
        Capability::Printf,
        Capability::ManagedMemory,
        Capability::DeviceGlobals,
        Capability::SharedGlobals,
        Capability::DynamicSharedMemory,
        Capability::LaunchBounds,
        Capability::LaunchMinBlocks,
        Capability::WarpShuffle,
        Capability::WarpVote,
        Capability::WarpMatch,
        Capability::WarpReduce,
        Capability::WarpSync,
        Capability::SystemFence,
        Capability::Recursion,
        Capability::Textures,
        Capability::TensorCores,
        Capability::Fp8TensorCores,
        Capability::AsyncCopy,
        Capability::TensorMemoryAccess,
        Capability::WarpgroupMma,
    ];

    /// What the feature is, as error messages say it ("`cuda-asm` needs inline assembly, …").
    pub fn description(self) -> &'static str {
        match self {
            Capability::Float64 => "64-bit floating point",
            Capability::Float16 => "16-bit floating point (half)",
            Capability::BFloat16 => "bfloat16 floating point",
            Capability::Fp8 => "8-bit floating point (fp8)",
            Capability::Fp4 => "4-bit floating point (fp4)",
            Capability::Atomic64 => "64-bit integer atomics",
            Capability::Atomic16 => "16-bit atomics",
            Capability::FloatAtomics => "atomics on float",
            Capability::DoubleAtomics => "atomics on double",
            Capability::HalfAtomics => "atomics on half and bfloat16",
            Capability::Clusters => "thread-block clusters",
            Capability::DeviceRandom => "a device random-number library",
            Capability::InlineAsm => "inline assembly",
            Capability::Printf => "printf from device code",
            Capability::ManagedMemory => "managed (unified) memory",
            Capability::DeviceGlobals => "mutable device globals",
            Capability::SharedGlobals => "shared-memory globals at program scope",
            Capability::DynamicSharedMemory => "dynamic shared memory",
            Capability::LaunchBounds => "launch bounds",
            Capability::LaunchMinBlocks => "a minimum of resident blocks in launch bounds",
            Capability::WarpShuffle => "warp shuffles",
            Capability::WarpVote => "warp votes",
            Capability::WarpMatch => "warp match operations",
            Capability::WarpReduce => "warp reductions",
            Capability::WarpSync => "warp barriers",
            Capability::SystemFence => "system-wide memory fences",
            Capability::Recursion => "recursion",
            Capability::Textures => "texture and surface objects",
            Capability::TensorCores => "warp-level tensor cores (mma.sync, ldmatrix)",
            Capability::Fp8TensorCores => "fp8 tensor cores",
            Capability::AsyncCopy => "asynchronous copies to shared memory (cp.async)",
            Capability::TensorMemoryAccess => {
                "tensor memory access (TMA) and transaction mbarriers"
            }
            Capability::WarpgroupMma => "warpgroup MMA (wgmma) and register reallocation (sm_90a)",
        }
    }

    /// The bit of this capability in a [`Capabilities`] set.
    const fn bit(self) -> u64 {
        1 << self as u32
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// A set of [`Capability`]s.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Capabilities(u64);

impl Capabilities {
    /// No capability.
    pub const NONE: Capabilities = Capabilities(0);

    /// Every capability.
    pub fn all() -> Capabilities {
        Capabilities::of(&Capability::ALL)
    }

    /// The set of `capabilities`.
    pub fn of(capabilities: &[Capability]) -> Capabilities {
        capabilities
            .iter()
            .fold(Capabilities::NONE, |set, c| set.with(*c))
    }

    /// True when `capability` is in the set.
    pub fn contains(self, capability: Capability) -> bool {
        self.0 & capability.bit() != 0
    }

    /// The set with `capability` added.
    #[must_use]
    pub fn with(self, capability: Capability) -> Capabilities {
        Capabilities(self.0 | capability.bit())
    }

    /// The set with `capability` removed.
    #[must_use]
    pub fn without(self, capability: Capability) -> Capabilities {
        Capabilities(self.0 & !capability.bit())
    }

    /// The set with `capability` added when `present` holds.
    #[must_use]
    pub fn with_if(self, capability: Capability, present: bool) -> Capabilities {
        if present { self.with(capability) } else { self }
    }

    /// The capabilities both sets have: what a module valid for two targets may use.
    #[must_use]
    pub fn intersection(self, other: Capabilities) -> Capabilities {
        Capabilities(self.0 & other.0)
    }

    /// The capabilities in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }
}

impl fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}
