//! The HIP C++ dialect: what hipcc and hipRTC accept for AMD GPUs, from ROCm 5.2 (Debian 12's
//! packages, the compiler tier's) to ROCm 6.
//!
//! HIP keeps CUDA's spellings for nearly everything (`__global__`, `__shared__`,
//! `__launch_bounds__`, `threadIdx.x`, `atomicAdd`, the device math library, `__half` and its
//! intrinsics, `make_float3`), so the output is the CUDA dialect's ([`super::cuda`], which
//! documents the layout and the naming) with these differences:
//!
//! * every file starts with `#include <hip/hip_runtime.h>` (hipcc needs it; hipRTC accepts it);
//!   `half` and `half2` add `<hip/hip_fp16.h>` before it;
//! * warp operations use HIP's forms without a mask (`__shfl`, `__shfl_up`, `__shfl_down`,
//!   `__shfl_xor`, `__ballot`, `__all`, `__any`), which every ROCm has (the `*_sync` forms need
//!   ROCm 6.2 and `HIP_ENABLE_WARP_SYNC_BUILTINS`). On 32-lane waves a mask that is not the
//!   constant full mask still counts: `ballot-sync` prints `(unsigned int)(__ballot(p) & m)`,
//!   `all-sync` `(__ballot(!(p)) & m) == 0`, `any-sync` `(__ballot(p) & m) != 0`, and
//!   `activemask` `(unsigned int)__ballot(1)`; shuffles read from lanes the mask names, as in
//!   CUDA, so dropping the mask changes nothing. `syncwarp` is a wavefront-scope release fence,
//!   `__builtin_amdgcn_wave_barrier()` and an acquire fence;
//! * `__launch_bounds__(N, W)`: HIP's second value is a minimum of waves per execution unit
//!   (SIMD), derived from the language's minimum of blocks per multiprocessor as
//!   `ceil(blocks × ceil(N / wave) / 4)` (four SIMDs per compute unit);
//! * `atomic-min` and `atomic-max` print clang's `__hip_atomic_fetch_min`/`_max` (relaxed,
//!   device scope), since ROCm 5's `atomicMin`/`atomicMax` have no `long long` overloads;
//! * `lane-id` masks the linear thread index with the wave's width (63 on 64-lane waves), and
//!   `warp-size` is HIP's `warpSize`.
//!
//! # 64-lane waves (CDNA)
//!
//! The language's lane masks are 32-bit `uint`s. On a 64-lane target, validation
//! ([`crate::check::validate`]) accepts a warp operation only when its mask operand is the
//! constant full mask `(uint -1)`, which this dialect widens to the whole wave (it prints the
//! mask-free form); any other mask, and an operation whose result is a mask (`ballot-sync`,
//! `activemask`, the matches), is an error at its span. Shuffle widths and offsets are the
//! kernel's: a reduction written for 32 lanes (`shfl-down-sync` from 16) reduces each half of a
//! 64-lane wave separately, which is what the CPU executor's wave64 mode computes too.
//!
//! # What HIP lacks
//!
//! The HIP targets ([`crate::target::Target::hip`]) lack clusters, inline CUDA C/PTX
//! (`cuda-asm`), 16-bit and half atomics, warp reductions and matches, `bfloat16`, `fp8`, `fp4`
//! and the device random-number library, so validation refuses them at their spans before this
//! printer runs; the dialect refuses them too (an error at the form) when called directly.

use super::cuda::{self, RESERVED};
use super::{Dialect, Helper, IndexSpelling};
use crate::ir::{FunctionKind, GlobalQualifier, IndexVar, LaunchBounds};
use crate::target::{Target, TargetKind};
use crate::types::{ScalarType, Type, VectorType};
use std::sync::LazyLock;

/// The HIP dialect for waves of 32 or 64 lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hip {
    wave64: bool,
}

impl Hip {
    /// The dialect of 32-lane waves (RDNA: gfx1030, gfx1100).
    pub const WAVE32: Hip = Hip { wave64: false };
    /// The dialect of 64-lane waves (CDNA: gfx90a, gfx942).
    pub const WAVE64: Hip = Hip { wave64: true };

    /// The dialect for a HIP `target` (by its warp width); `None` for another kind of target or
    /// a width other than 32 and 64.
    pub fn for_target(target: &Target) -> Option<Hip> {
        match (target.kind, target.warp_width) {
            (TargetKind::Hip, 32) => Some(Hip::WAVE32),
            (TargetKind::Hip, 64) => Some(Hip::WAVE64),
            _ => None,
        }
    }
}

/// The header every HIP file includes.
pub const RUNTIME_HEADER: &str = "hip/hip_runtime.h";

/// The headers a HIP file may include, in the order it includes them.
pub const HEADERS: &[&str] = &["hip/hip_fp16.h", RUNTIME_HEADER];

/// Lower-case names HIP code already uses beyond CUDA's ([`RESERVED`]): HIP's namespaces,
/// types and functions without a `__` prefix.
pub const HIP_ONLY_RESERVED: &[&str] = &[
    "hip",
    "hip_bfloat16",
    "hiplaunchkernelggl",
    "hipthreadidx_x",
    "hipblockidx_x",
    "hipblockdim_x",
    "hipgriddim_x",
    "warpsize",
    "rocprim",
    "hiprand",
    "amd",
    "ockl",
    "ocml",
];

/// CUDA's reserved words and HIP's ([`HIP_ONLY_RESERVED`]).
static ALL_RESERVED: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| RESERVED.iter().chain(HIP_ONLY_RESERVED).copied().collect());

/// True when `text` is how the printer spells the 32-bit full mask: `(uint -1)` prints
/// `(unsigned int)(-1)`; a `uint` literal prints in decimal or hex.
fn is_full_mask(text: &str) -> bool {
    matches!(
        text.trim(),
        "(unsigned int)(-1)" | "4294967295u" | "4294967295U" | "0xffffffffu" | "0xFFFFFFFFu"
    )
}

impl Hip {
    /// A warp operation's mask `mask` on this dialect's waves: `None` where no masking is
    /// needed (the full mask, widened on 64-lane waves), `Some(mask)` on 32-lane waves, and an
    /// error (`Err`) for a partial mask on 64-lane waves.
    fn mask<'a>(&self, mask: &'a str) -> Result<Option<&'a str>, ()> {
        match (is_full_mask(mask), self.wave64) {
            (true, _) => Ok(None),
            (false, false) => Ok(Some(mask)),
            (false, true) => Err(()),
        }
    }

    /// A shuffle: HIP's mask-free form with the value, lane or offset, and width.
    fn shuffle(&self, name: &str, args: &[&str]) -> Option<String> {
        let (mask, rest) = args.split_first()?;
        self.mask(mask).ok()?;
        Some(format!("{name}({})", rest.join(", ")))
    }

    /// `ballot-sync`, `all-sync` and `any-sync`.
    fn vote(&self, intrinsic: &str, args: &[&str]) -> Option<String> {
        let [mask, predicate] = args else {
            return None;
        };
        let mask = self.mask(mask).ok()?;
        Some(match (intrinsic, mask) {
            ("__ballot_sync", _) if self.wave64 => return None,
            ("__ballot_sync", None) => format!("(unsigned int)__ballot({predicate})"),
            ("__ballot_sync", Some(m)) => format!("(unsigned int)(__ballot({predicate}) & {m})"),
            ("__all_sync", None) => format!("__all({predicate})"),
            ("__all_sync", Some(m)) => format!("(int)((__ballot(!({predicate})) & {m}) == 0)"),
            ("__any_sync", None) => format!("__any({predicate})"),
            ("__any_sync", Some(m)) => format!("(int)((__ballot({predicate}) & {m}) != 0)"),
            _ => return None,
        })
    }
}

impl Dialect for Hip {
    fn name(&self) -> &'static str {
        "HIP C++"
    }

    fn reserved_words(&self) -> &'static [&'static str] {
        &ALL_RESERVED
    }

    fn headers(&self) -> &'static [&'static str] {
        HEADERS
    }

    fn type_header(&self, ty: &Type) -> Option<&'static str> {
        match ty {
            Type::Scalar(ScalarType::Half) | Type::Vector(VectorType::Half2) => {
                Some("hip/hip_fp16.h")
            }
            _ => None,
        }
    }

    fn intrinsic_header(&self, _intrinsic: &str) -> Option<&'static str> {
        None
    }

    fn prelude(&self) -> &'static str {
        "#include <hip/hip_runtime.h>\n"
    }

    fn type_name(&self, ty: &Type) -> Option<&'static str> {
        match ty {
            Type::Scalar(ScalarType::BFloat16 | ScalarType::Fp8 | ScalarType::Fp4)
            | Type::CurandStateXorwow => None,
            other => cuda::Cuda.type_name(other),
        }
    }

    fn vector_constructor(&self, vector: VectorType) -> Option<&'static str> {
        Some(cuda::vector_constructor(vector))
    }

    fn linkage(&self) -> &'static str {
        "extern \"C\" "
    }

    fn function_qualifier(&self, kind: FunctionKind) -> &'static str {
        cuda::Cuda.function_qualifier(kind)
    }

    fn global_qualifier(&self, qualifier: GlobalQualifier) -> Option<&'static str> {
        cuda::Cuda.global_qualifier(qualifier)
    }

    fn global_has_initializer(&self, qualifiers: &[GlobalQualifier]) -> bool {
        cuda::Cuda.global_has_initializer(qualifiers)
    }

    fn restrict(&self) -> &'static str {
        " __restrict__"
    }

    fn launch_bounds(&self, bounds: &LaunchBounds) -> Option<String> {
        if bounds.max_cluster.is_some() {
            return None;
        }
        let wave = self.warp_width();
        Some(match bounds.min_blocks {
            None => format!("__launch_bounds__({})", bounds.max_threads),
            Some(blocks) => {
                let waves = u64::from(blocks) * u64::from(bounds.max_threads.div_ceil(wave));
                let per_simd = waves.div_ceil(4).max(1);
                format!("__launch_bounds__({}, {per_simd})", bounds.max_threads)
            }
        })
    }

    fn index_variable(&self, var: IndexVar) -> Option<IndexSpelling> {
        match var {
            IndexVar::ClusterDim(_) | IndexVar::ClusterIdx(_) | IndexVar::BlockInCluster(_) => None,
            other => cuda::Cuda.index_variable(other),
        }
    }

    fn warp_width(&self) -> u32 {
        if self.wave64 { 64 } else { 32 }
    }

    fn shared_array(&self, element: &str, name: &str, dims: &str) -> Option<String> {
        Some(format!("__shared__ {element} {name}{dims};"))
    }

    fn dynamic_shared_array(&self, name: &str) -> Option<String> {
        Some(format!(
            "extern __shared__ __align__(16) unsigned char {name}[];"
        ))
    }

    fn call(&self, intrinsic: &str, args: &[&str]) -> Option<String> {
        match intrinsic {
            "__shfl_sync" => self.shuffle("__shfl", args),
            "__shfl_up_sync" => self.shuffle("__shfl_up", args),
            "__shfl_down_sync" => self.shuffle("__shfl_down", args),
            "__shfl_xor_sync" => self.shuffle("__shfl_xor", args),
            "__ballot_sync" | "__all_sync" | "__any_sync" => self.vote(intrinsic, args),
            "__activemask" if !self.wave64 => Some("(unsigned int)__ballot(1)".into()),
            "__syncwarp" => {
                if let Some(mask) = args.first() {
                    self.mask(mask).ok()?;
                }
                Some(
                    "(__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"wavefront\"), \
                     __builtin_amdgcn_wave_barrier(), \
                     __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"wavefront\"))"
                        .into(),
                )
            }
            // ROCm 5 has no `long long` overloads of atomicMin/atomicMax; clang's HIP
            // built-ins take every integer type (device scope, relaxed, as CUDA's atomics).
            "atomicMin" | "atomicMax" => {
                let [pointer, value] = args else {
                    return None;
                };
                let op = if intrinsic == "atomicMin" {
                    "min"
                } else {
                    "max"
                };
                Some(format!(
                    "__hip_atomic_fetch_{op}({pointer}, {value}, __ATOMIC_RELAXED, \
                     __HIP_MEMORY_SCOPE_AGENT)"
                ))
            }
            "__activemask"
            | "__match_any_sync"
            | "__match_all_sync"
            | "__threadfence_cluster"
            | "__clusterRelativeBlockRank"
            | "__nv_bfloat16_raw" => None,
            other
                if other.starts_with("__reduce_")
                    || other.starts_with("curand")
                    || other.contains("bfloat16") =>
            {
                None
            }
            other => Some(format!("{other}({})", args.join(", "))),
        }
    }

    fn helper_definition(&self, helper: Helper, name: &str) -> Option<String> {
        match helper {
            // Validation refuses them all before printing (HIP has no such instructions).
            Helper::ClusterBarrier | Helper::Tensor(_) | Helper::Hopper(_) => None,
            other => Some(cuda::helper_definition(other, name, self.warp_width())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_widen_only_when_full() {
        assert!(is_full_mask("(unsigned int)(-1)") && is_full_mask("4294967295u"));
        assert!(!is_full_mask("m") && !is_full_mask("255u"));
        assert_eq!(
            Hip::WAVE64.call("__shfl_down_sync", &["4294967295u", "v", "16"]),
            Some("__shfl_down(v, 16)".into())
        );
        assert_eq!(
            Hip::WAVE64.call("__shfl_down_sync", &["m", "v", "16"]),
            None
        );
        assert_eq!(
            Hip::WAVE32.call("__ballot_sync", &["m", "p"]),
            Some("(unsigned int)(__ballot(p) & m)".into())
        );
        assert_eq!(
            Hip::WAVE64.call("__ballot_sync", &["4294967295u", "p"]),
            None
        );
        assert_eq!(
            Hip::WAVE64.call("__all_sync", &["4294967295u", "p"]),
            Some("__all(p)".into())
        );
        assert_eq!(
            Hip::WAVE32.call("__any_sync", &["m", "p"]),
            Some("(int)((__ballot(p) & m) != 0)".into())
        );
    }

    #[test]
    fn launch_bounds_become_waves_per_simd() {
        let bounds = |max_threads, min_blocks| LaunchBounds {
            max_threads,
            min_blocks,
            max_cluster: None,
        };
        assert_eq!(
            Hip::WAVE64.launch_bounds(&bounds(256, None)).unwrap(),
            "__launch_bounds__(256)"
        );
        // 2 blocks of 4 waves: 8 waves over 4 SIMDs.
        assert_eq!(
            Hip::WAVE64.launch_bounds(&bounds(256, Some(2))).unwrap(),
            "__launch_bounds__(256, 2)"
        );
        assert_eq!(
            Hip::WAVE32.launch_bounds(&bounds(256, Some(2))).unwrap(),
            "__launch_bounds__(256, 4)"
        );
        let cluster = LaunchBounds {
            max_cluster: Some(2),
            ..bounds(128, None)
        };
        assert_eq!(Hip::WAVE64.launch_bounds(&cluster), None);
    }

    #[test]
    fn lane_ids_use_the_wave_width() {
        let lane = Hip::WAVE64
            .helper_definition(Helper::LaneId, "chorus_lane_id")
            .unwrap();
        assert!(lane.contains("& 63u);"), "{lane}");
        assert_eq!(Hip::WAVE64.warp_width(), 64);
        assert_eq!(Hip::WAVE32.warp_width(), 32);
    }
}
