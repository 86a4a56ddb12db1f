//! Targets: what a back end's devices can run, and how they lay data out.
//!
//! A [`Target`] names the dialect a module is printed in ([`TargetKind`]: CUDA, HIP, Metal or
//! the CPU executor), its warp width and lane-mask width, its limits (static shared memory,
//! kernel parameter space, threads per block), the [`Capabilities`] it has, and its host layout
//! rules ([`LayoutRules`]: MSL's `float3` is 16 bytes, C's 12).
//!
//! The checker ([`crate::check::check_module`]) checks the language, for every target at once;
//! [`crate::check::validate`] then checks a checked module against one target and reports, at
//! its span, the first feature the target lacks or limit it exceeds. So a module checked once
//! can be validated (and printed) for several targets.
//!
//! Limits and capabilities are documented where they are defined, with their sources.

mod capability;
mod constant;
mod layout;

pub use capability::{Capabilities, Capability};
pub use constant::{ConstantScalars, FoldedConstants};
pub use layout::{LayoutRules, StructLayout};

use std::fmt;

/// The kind of back end a target is printed for or run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// NVIDIA GPUs through CUDA C (nvcc or NVRTC).
    Cuda,
    /// AMD GPUs through HIP (hipcc / hipRTC).
    Hip,
    /// Apple GPUs through the Metal Shading Language.
    Metal,
    /// Chorus's CPU executor, which runs the IR with CUDA's semantics.
    Cpu,
}

impl TargetKind {
    /// The name messages use (`CUDA`, `HIP`, `Metal`, `CPU`).
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Cuda => "CUDA",
            TargetKind::Hip => "HIP",
            TargetKind::Metal => "Metal",
            TargetKind::Cpu => "CPU",
        }
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one target can run and how it lays out data. Build one with [`Target::cuda`],
/// [`Target::default_cuda`], [`Target::hip`], [`Target::metal`] or [`Target::cpu`]; the fields
/// are public so that a test (or a new back end) can adjust a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Target {
    /// The back end.
    pub kind: TargetKind,
    /// The architecture: `sm_90` for CUDA, `gfx942` for HIP, `apple8` for Metal, `cpu` for the
    /// CPU executor.
    pub arch: String,
    /// CUDA's compute capability (major, minor); `None` for other kinds.
    pub compute_capability: Option<(u32, u32)>,
    /// Threads in a warp (a wave on AMD, a SIMD-group on Apple): 32, or 64 on AMD CDNA.
    pub warp_width: u32,
    /// Bits of a lane mask that name lanes: 32 where warps have 32 lanes, 64 on AMD CDNA (HIP's
    /// mask type is 64-bit on every AMD target; on 32-wide RDNA waves only the low 32 bits name
    /// lanes, so the language's 32-bit masks cover the wave).
    pub lane_mask_bits: u32,
    /// The most static shared memory (`with-shared-memory` and `:shared` globals) one kernel
    /// may use, in bytes, with everything it calls.
    pub max_static_shared_bytes: u64,
    /// The most bytes of parameters a kernel may take (laid out with the target's rules).
    pub max_kernel_param_bytes: u64,
    /// The most parameters a kernel may take, where the target counts them (Metal's buffer
    /// argument table); `None` when only their bytes are limited.
    pub max_kernel_params: Option<u32>,
    /// The most threads in one block; a launch bound may not exceed it.
    pub max_threads_per_block: u32,
    /// The language features the target has.
    pub capabilities: Capabilities,
    /// How vectors and structures are laid out in the target's memory.
    pub layout_rules: LayoutRules,
}

/// Static shared memory a CUDA kernel may declare: 48 KiB on every architecture; more needs
/// dynamic shared memory and `cudaFuncAttributeMaxDynamicSharedMemorySize` (CUDA C++
/// Programming Guide, "Shared Memory", and the "Technical Specifications" table).
const CUDA_STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// `__global__` parameter space from Volta (sm_70) with CUDA 12.1 and newer: 32 764 bytes
/// (CUDA C++ Programming Guide, "Function Parameters").
const CUDA_PARAM_BYTES: u64 = 32_764;

/// `__global__` parameter space before Volta, and with CUDA before 12.1: 4 KiB (same section).
const CUDA_PARAM_BYTES_BEFORE_VOLTA: u64 = 4096;

/// Threads per block on every CUDA architecture since sm_20, and on AMD GPUs under HIP
/// (`hipDeviceProp_t::maxThreadsPerBlock` is 1024).
const MAX_THREADS_PER_BLOCK: u32 = 1024;

impl Target {
    /// The target a short name gives, as `chorus compile --target` takes it: `cuda` (sm_90,
    /// [`Target::default_cuda`]), `sm_XY` or `cuda:sm_XY` (`sm_90a` is sm_90), an AMD processor
    /// `gfxNNN` or `hip:gfxNNN` ([`Target::hip`]), `metal` (Apple8) or `metal:appleN`
    /// ([`Target::metal`]), `cpu` ([`Target::cpu`]). The error says what the names are.
    ///
    /// ```
    /// use chorus_lang::target::Target;
    ///
    /// assert_eq!(Target::from_name("sm_80").unwrap().compute_capability, Some((8, 0)));
    /// assert_eq!(Target::from_name("hip:gfx90a").unwrap().warp_width, 64);
    /// assert_eq!(Target::from_name("metal").unwrap().arch, "apple8");
    /// assert!(Target::from_name("sm_9").unwrap_err().contains("sm_XY"));
    /// ```
    pub fn from_name(name: &str) -> Result<Target, String> {
        const NAMES: &str = "cuda, sm_XY (sm_70 … sm_120), hip:gfxNNN (gfx90a, gfx942, gfx950, \
                             gfx1030, gfx1100, gfx1200, gfx1201), metal, metal:apple7 … apple9, cpu";
        let unknown = || format!("unknown target `{name}`; the targets are {NAMES}");
        let name = name.trim();
        let cuda = name.strip_prefix("cuda:").unwrap_or(name);
        if let Some(digits) = cuda.strip_prefix("sm_") {
            let digits = digits.strip_suffix('a').unwrap_or(digits);
            let (major, minor) = match digits.len() {
                2 | 3 if digits.bytes().all(|b| b.is_ascii_digit()) => {
                    digits.split_at(digits.len() - 1)
                }
                _ => return Err(unknown()),
            };
            let (major, minor) = (
                major.parse().map_err(|_| unknown())?,
                minor.parse().map_err(|_| unknown())?,
            );
            return Ok(Target::cuda(major, minor));
        }
        let hip = name.strip_prefix("hip:").unwrap_or(name);
        if hip.starts_with("gfx") {
            return Target::hip(hip).ok_or_else(unknown);
        }
        match name {
            "cuda" => Ok(Target::default_cuda()),
            "metal" => Target::metal(8).ok_or_else(unknown),
            "cpu" => Ok(Target::cpu()),
            _ => {
                let family = name.strip_prefix("metal:apple").ok_or_else(unknown)?;
                family
                    .parse()
                    .ok()
                    .and_then(Target::metal)
                    .ok_or_else(unknown)
            }
        }
    }

    /// A CUDA device of compute capability `major.minor` (`Target::cuda(9, 0)` for an H100 or
    /// H200). Capabilities follow the CUDA C++ Programming Guide's feature table, as each
    /// [`Capability`] documents; limits: 48 KiB of static shared memory, 1024 threads per block,
    /// 32 764 bytes of kernel parameters from sm_70 (4 KiB before), 32-lane warps.
    pub fn cuda(major: u32, minor: u32) -> Target {
        let at_least = |m: u32, n: u32| (major, minor) >= (m, n);
        use Capability::*;
        let capabilities = Capabilities::of(&[
            Float64,
            Fp8,
            Fp4,
            Atomic64,
            FloatAtomics,
            DeviceRandom,
            InlineAsm,
            Printf,
            ManagedMemory,
            DeviceGlobals,
            SharedGlobals,
            DynamicSharedMemory,
            LaunchBounds,
            LaunchMinBlocks,
            WarpShuffle,
            WarpVote,
            WarpSync,
            SystemFence,
            Recursion,
            Textures,
        ])
        .with_if(Float16, at_least(5, 3))
        .with_if(DoubleAtomics, at_least(6, 0))
        .with_if(Atomic16, at_least(7, 0))
        .with_if(HalfAtomics, at_least(7, 0))
        .with_if(WarpMatch, at_least(7, 0))
        .with_if(BFloat16, at_least(8, 0))
        .with_if(WarpReduce, at_least(8, 0))
        .with_if(Clusters, at_least(9, 0))
        .with_if(TensorCores, at_least(8, 0))
        .with_if(AsyncCopy, at_least(8, 0))
        .with_if(Fp8TensorCores, at_least(8, 9))
        .with_if(TensorMemoryAccess, at_least(9, 0))
        .with_if(WarpgroupMma, (major, minor) == (9, 0));
        Target {
            kind: TargetKind::Cuda,
            arch: format!("sm_{major}{minor}"),
            compute_capability: Some((major, minor)),
            warp_width: 32,
            lane_mask_bits: 32,
            max_static_shared_bytes: CUDA_STATIC_SHARED_BYTES,
            max_kernel_param_bytes: if at_least(7, 0) {
                CUDA_PARAM_BYTES
            } else {
                CUDA_PARAM_BYTES_BEFORE_VOLTA
            },
            max_kernel_params: None,
            max_threads_per_block: MAX_THREADS_PER_BLOCK,
            capabilities,
            layout_rules: LayoutRules::C,
        }
    }

    /// The CUDA target for code that knows no device: sm_90 (Hopper, the project's reference
    /// device), which has every feature of the language. [`crate::compile_str`] validates
    /// against it.
    pub fn default_cuda() -> Target {
        Target::cuda(9, 0)
    }

    /// Chorus's CPU executor (`chorus-cpu`): everything but inline CUDA C/PTX, clusters and
    /// the Hopper features (TMA, transaction mbarriers, wgmma),
    /// with a CUDA device's limits (48 KiB static shared memory, 1024 threads per block,
    /// 32 764 bytes of parameters) so that a kernel it accepts also runs on a GPU.
    pub fn cpu() -> Target {
        Target {
            kind: TargetKind::Cpu,
            arch: "cpu".into(),
            compute_capability: None,
            warp_width: 32,
            lane_mask_bits: 32,
            max_static_shared_bytes: CUDA_STATIC_SHARED_BYTES,
            max_kernel_param_bytes: CUDA_PARAM_BYTES,
            max_kernel_params: None,
            max_threads_per_block: MAX_THREADS_PER_BLOCK,
            capabilities: Capabilities::all()
                .without(Capability::InlineAsm)
                .without(Capability::Clusters)
                .without(Capability::TensorMemoryAccess)
                .without(Capability::WarpgroupMma),
            layout_rules: LayoutRules::C,
        }
    }

    /// An AMD GPU under HIP, by its LLVM processor name: `gfx90a` (MI200, CDNA2), `gfx942`
    /// (MI300, CDNA3), `gfx950` (MI350, CDNA4), all with 64-lane waves and 64-bit masks;
    /// `gfx1030` (RDNA2), `gfx1100` (RDNA3), `gfx1200`/`gfx1201` (RDNA4), with 32-lane waves.
    /// `None` for another name.
    ///
    /// Limits: 64 KiB of LDS per workgroup (160 KiB on gfx950; CDNA3/CDNA4 ISA guides and
    /// `hipDeviceProp_t::sharedMemPerBlock`), 1024 threads per block, and 4 KiB of kernel
    /// arguments, the portable limit HIP documents for `hipLaunchKernel` arguments.
    ///
    /// Capabilities are what the HIP dialect ([`crate::cfamily::hip`]) prints for every ROCm
    /// from 5.2 (Debian 12's, the compiler tier's) on: not `bfloat16`, `fp8`, `fp4`, warp
    /// matches and the device random-number library, which need ROCm 6 headers
    /// (`amd_hip_bf16.h`, `amd_hip_fp8.h`, the `*_sync` warp built-ins) or hipRAND; nor
    /// clusters, inline CUDA C/PTX, 16-bit and half atomics and warp reductions, which HIP has
    /// not. On 64-lane waves the 32-bit lane masks of the language are limited to the full
    /// mask (see [`crate::cfamily::hip`]).
    pub fn hip(arch: &str) -> Option<Target> {
        use Capability::*;
        let (wave64, lds_kib) = match arch {
            "gfx90a" | "gfx942" => (true, 64),
            "gfx950" => (true, 160),
            "gfx1030" | "gfx1100" | "gfx1200" | "gfx1201" => (false, 64),
            _ => return None,
        };
        let capabilities = Capabilities::of(&[
            Float64,
            Float16,
            Atomic64,
            FloatAtomics,
            DoubleAtomics,
            Printf,
            ManagedMemory,
            DeviceGlobals,
            SharedGlobals,
            DynamicSharedMemory,
            LaunchBounds,
            LaunchMinBlocks,
            WarpShuffle,
            WarpVote,
            WarpSync,
            SystemFence,
            Recursion,
        ]);
        let lanes = if wave64 { 64 } else { 32 };
        Some(Target {
            kind: TargetKind::Hip,
            arch: arch.into(),
            compute_capability: None,
            warp_width: lanes,
            lane_mask_bits: lanes,
            max_static_shared_bytes: lds_kib * 1024,
            max_kernel_param_bytes: 4096,
            max_kernel_params: None,
            max_threads_per_block: MAX_THREADS_PER_BLOCK,
            capabilities,
            layout_rules: LayoutRules::C,
        })
    }

    /// An Apple GPU of family `apple_family` (7: M1/A14, 8: M2/A15, 9: M3/A17 and newer) through
    /// MSL 3.2 (macOS 15, iOS 18), which needs Apple7 or newer; `None` for an older or unknown
    /// family. A launch bound's minimum of resident blocks is accepted and dropped (an
    /// occupancy hint Metal has no word for; [`crate::cfamily::msl`]).
    ///
    /// Limits (Metal Feature Set Tables): 32 KiB of threadgroup memory, 1024 threads per
    /// threadgroup, 32-lane SIMD-groups (`simd_vote` is 64-bit but only 32 lanes exist), 31
    /// buffer arguments per kernel, and 4 KiB of argument bytes, the most `setBytes` passes.
    /// Layouts are MSL's ([`LayoutRules::Msl`]). `:constant` and `:device` globals are the
    /// fields of structures the host binds after a kernel's arguments ([`crate::cfamily::msl`]),
    /// so they take buffer indices of those 31.
    pub fn metal(apple_family: u32) -> Option<Target> {
        use Capability::*;
        if !(7..=9).contains(&apple_family) {
            return None;
        }
        Some(Target {
            kind: TargetKind::Metal,
            arch: format!("apple{apple_family}"),
            compute_capability: None,
            warp_width: 32,
            lane_mask_bits: 32,
            max_static_shared_bytes: 32 * 1024,
            max_kernel_param_bytes: 4096,
            max_kernel_params: Some(31),
            max_threads_per_block: 1024,
            capabilities: Capabilities::of(&[
                Float16,
                BFloat16,
                FloatAtomics,
                DeviceGlobals,
                DynamicSharedMemory,
                LaunchBounds,
                LaunchMinBlocks,
                WarpShuffle,
                WarpVote,
                WarpReduce,
                WarpSync,
            ]),
            layout_rules: LayoutRules::Msl,
        })
    }

    /// True when the target has `capability`.
    pub fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(capability)
    }
}

impl Default for Target {
    /// [`Target::default_cuda`].
    fn default() -> Target {
        Target::default_cuda()
    }
}

impl fmt::Display for Target {
    /// `CUDA target sm_90`, `HIP target gfx942`, `Metal target apple8`, `CPU target`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TargetKind::Cpu => write!(f, "CPU target"),
            kind => write!(f, "{kind} target {}", self.arch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_capabilities_follow_the_compute_capability() {
        let turing = Target::cuda(7, 5);
        assert!(!turing.has(Capability::BFloat16) && !turing.has(Capability::Clusters));
        assert!(turing.has(Capability::WarpMatch) && !turing.has(Capability::WarpReduce));
        let hopper = Target::cuda(9, 0);
        assert!(hopper.has(Capability::Clusters) && hopper.has(Capability::BFloat16));
        assert_eq!(hopper.max_kernel_param_bytes, 32_764);
        assert_eq!(Target::cuda(6, 1).max_kernel_param_bytes, 4096);
        assert_eq!(hopper.to_string(), "CUDA target sm_90");
        assert_eq!(Target::default(), hopper);
        assert!(hopper.has(Capability::WarpgroupMma) && hopper.has(Capability::TensorMemoryAccess));
        let blackwell = Target::cuda(10, 0);
        assert!(
            blackwell.has(Capability::TensorMemoryAccess)
                && !blackwell.has(Capability::WarpgroupMma)
        );
        assert!(!Target::cuda(8, 9).has(Capability::TensorMemoryAccess));
    }

    #[test]
    fn the_cpu_lacks_only_inline_asm_clusters_and_hopper() {
        let missing: Vec<Capability> = Capability::ALL
            .into_iter()
            .filter(|c| !Target::cpu().has(*c))
            .collect();
        assert_eq!(
            missing,
            [
                Capability::Clusters,
                Capability::InlineAsm,
                Capability::TensorMemoryAccess,
                Capability::WarpgroupMma
            ]
        );
    }

    #[test]
    fn hip_wave_widths() {
        for (arch, lanes) in [
            ("gfx90a", 64),
            ("gfx942", 64),
            ("gfx1030", 32),
            ("gfx1100", 32),
        ] {
            let t = Target::hip(arch).expect(arch);
            assert_eq!((t.warp_width, t.lane_mask_bits), (lanes, lanes), "{arch}");
            assert!(!t.has(Capability::InlineAsm) && !t.has(Capability::Clusters));
        }
        assert!(Target::hip("gfx000").is_none());
    }

    #[test]
    fn metal_has_no_double_and_32_kib_of_threadgroup_memory() {
        let m = Target::metal(8).unwrap();
        assert!(!m.has(Capability::Float64) && m.has(Capability::Float16));
        assert_eq!(m.max_static_shared_bytes, 32 * 1024);
        assert!(Target::metal(6).is_none());
        assert_eq!(
            Capabilities::of(&[Capability::Printf, Capability::Float16])
                .intersection(m.capabilities),
            Capabilities::of(&[Capability::Float16])
        );
    }
}
