//! The Metal Shading Language dialect: MSL 3.2 (macOS 15 / iOS 18, Apple7 GPUs and newer: M1,
//! A14 and later), compiled by `MTLDevice newLibraryWithSource` with
//! `MTLLanguageVersion3_2`.
//!
//! A printed file has, in this order: `#include <metal_stdlib>`, `using namespace metal;` and
//! Chorus's MSL helpers (templates for atomics, shuffles with CUDA's widths, votes and the math
//! functions MSL lacks, all named `chorus_…`; the atomics are defined once per address space,
//! or once when `CHORUS_SHIM_ONE_ADDRESS_SPACE` is defined, as the Linux conformance shim of
//! `chorus-metal` does, whose address spaces are all one); the printer's helpers (vector arithmetic as
//! `static inline` functions); structures; the globals' structures; a prototype of every function;
//! the definitions.
//!
//! # Kernels and their arguments
//!
//! A kernel is `kernel void name(…)`. Its parameter `i` is bound to buffer index `i`: a pointer
//! is `device T* name [[buffer(i)]]`, a value `constant T& name [[buffer(i)]]` (the host passes
//! it with `setBytes`, laid out by [`crate::target::LayoutRules::Msl`]). So a kernel may not
//! assign to a by-value parameter or take its address (MSL makes it `constant`; validation
//! refuses both at their span for the Metal target); copy it into a `let` first. After
//! its own parameters a kernel declares only the thread-position attributes it uses, itself or
//! through the device functions it calls: `uint3 chorus_tid [[thread_position_in_threadgroup]]`
//! (`thread-idx-*`), `chorus_bid [[threadgroup_position_in_grid]]` (`block-idx-*`),
//! `chorus_bdim [[threads_per_threadgroup]]` (`block-dim-*`), `chorus_gdim
//! [[threadgroups_per_grid]]` (`grid-dim-*`), `uint chorus_lane [[thread_index_in_simdgroup]]`
//! (`lane-id` and the shuffles), and `threadgroup uchar* chorus_dyn_smem [[threadgroup(0)]]`
//! for `with-dynamic-shared-memory` (its size is the launch's dynamic shared memory, set with
//! `setThreadgroupMemoryLength:atIndex:0`). Device functions that need them take the same
//! values as plain parameters, and every call passes them on. A kernel is found in the library
//! by its printed name (MSL does not mangle kernel names).
//!
//! # Pointers and address spaces
//!
//! Every pointer has the address space it points into ([`super::spaces`]): `device` for
//! buffers, `threadgroup` for `with-shared-memory` arrays and dynamic shared memory, `thread`
//! for the address of a local, `constant` for a `:constant` global. A variable or device
//! function parameter that would receive pointers into two spaces is an error at its form.
//!
//! # What differs from CUDA
//!
//! * Barriers: `syncthreads` is `threadgroup_barrier(mem_flags::mem_device |
//!   mem_flags::mem_threadgroup)`; `syncwarp` is `simdgroup_barrier`; the fences are
//!   `atomic_thread_fence` at device or threadgroup scope.
//! * Warp collectives map to SIMD-group functions (`simd_shuffle`, `simd_ballot`, `simd_all`,
//!   `simd_any`, `simd_active_threads_mask`, `simd_sum`, `simd_min`, …). Apple GPUs' SIMD-groups
//!   have 32 threads, formed from the linear thread index in the threadgroup as CUDA forms warps.
//!   **Masks are ignored**: MSL has no member masks; every active thread of the SIMD-group takes
//!   part. CUDA requires the mask to name exactly the threads that reach the call, so kernels
//!   that pass `(uint -1)` or `(activemask)` behave alike; a mask naming fewer threads than are
//!   active gives another result. A shuffle's `width` (segments of 2, 4, 8 or 16 lanes) is
//!   computed from the lane with CUDA's rules (a lane outside the segment gets its own value).
//!   `match-*-sync` has no MSL equivalent (a capability error).
//! * Atomics are MSL's `atomic_fetch_*_explicit` with `memory_order_relaxed` (CUDA's atomics
//!   are relaxed too) on `atomic_int`, `atomic_uint` and, in device memory, `atomic_float`;
//!   `atomic-inc`, `atomic-dec` and `atomic-cas` are compare-exchange loops. 64-bit and 16-bit
//!   atomics are capability errors.
//! * `half` and `bfloat` are native types with operators; `__float2half(x)` becomes `half(x)`.
//!   MSL has no `double`, `fp8`, `fp4`, device cuRAND, `printf`, clusters or inline PTX: the
//!   Metal target ([`crate::target::Target::metal`]) lacks those capabilities, so validation
//!   refuses them at their span before printing.
//! * Math: MSL's overloaded functions (`sin`, `rsqrt`, `fast::exp` for the fast variants). MSL
//!   has no `expm1`, `log1p`, `cbrt`, `hypot`, `erf` or `erfc`: helpers compute them (the
//!   `erf`/`erfc` helpers to about 1.2e-7 relative error, Numerical Recipes' Chebyshev fit,
//!   not CUDA's correctly-rounded-within-2-ulp functions).
//! * Vectors: `float2`, `float3` (16 bytes, aligned to 16, unlike CUDA's 12), `float4`,
//!   `int2`, `int4`, `uint2`, `uint4`, `half2`, with MSL's constructors (`float3(x, y, z)`).
//! * Globals: `:constant` and `:device` globals, not as program-scope variables (MSL has only
//!   `constant` ones, which must be initialized in the source, so the host could change one
//!   only by compiling the library again). The `:constant` ones are the fields of one
//!   structure, `struct chorus_globals_t`, that a kernel reading any of them takes by reference
//!   after its own parameters, `constant chorus_globals_t& chorus_globals [[buffer(N)]]` with
//!   `N` its parameter count; the `:device` ones are the fields of a second structure,
//!   `struct chorus_device_globals_t`, in device memory, which a kernel reading or writing any
//!   of them takes after that,
//!   `device chorus_device_globals_t& chorus_device_globals [[buffer(M)]]` (`M` is `N + 1`
//!   when the kernel also reads constant globals, else `N`). Device functions that use them
//!   take the same references (`constant chorus_globals_t& chorus_globals`, then
//!   `device chorus_device_globals_t& chorus_device_globals`) and every call passes them on;
//!   `bar` is `chorus_globals.bar`, `foo` is `chorus_device_globals.foo`, and
//!   `(pointer foo)` is a `device` pointer, so atomics on a device global work as on a buffer.
//!   The host keeps the constant structure's bytes (the initializers first, in MSL's layout)
//!   and binds them at each dispatch (`setBytes`), so a write from the host is a copy, as with
//!   CUDA's `cudaMemcpyToSymbol`; it keeps the device structure in one buffer per loaded
//!   program, made from the initializers, which kernels and host read and write.
//!   `:shared` and `:managed` globals are capability errors.

use super::{AddressSpace, Dialect, FunctionUses, Helper, IndexSpelling, Operands};
use crate::ir::{Axis, Builtin, FunctionKind, GlobalQualifier, IndexVar, LaunchBounds};
use crate::types::{ScalarType, Type, VectorType};
use std::fmt::Write;

/// The MSL dialect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Msl;

/// The MSL language version the printed text needs (`MTLLanguageVersion3_2`).
pub const LANGUAGE_VERSION: (u32, u32) = (3, 2);

/// The name of the dynamic threadgroup memory parameter (the printer's dynamic shared array).
const DYNAMIC_SHARED: &str = super::printer::DYNAMIC_SHARED;

/// What follows `#include <metal_stdlib>`: the namespace and Chorus's helper templates.
pub const PRELUDE: &str = r#"#include <metal_stdlib>
using namespace metal;

// Chorus helpers (MSL 3.2).
template <typename T> struct chorus_atomic_of;
template <> struct chorus_atomic_of<int> { typedef atomic_int type; };
template <> struct chorus_atomic_of<uint> { typedef atomic_uint type; };
template <> struct chorus_atomic_of<float> { typedef atomic_float type; };
#define CHORUS_ATOMIC_FETCH(SPACE, NAME, FN) \
  template <typename T> static inline T chorus_atomic_##NAME(SPACE T* p, T v) \
  { return FN((SPACE typename chorus_atomic_of<T>::type*)p, v, memory_order_relaxed); }
#define CHORUS_ATOMIC_UPDATE(SPACE) \
  CHORUS_ATOMIC_FETCH(SPACE, add, atomic_fetch_add_explicit) \
  CHORUS_ATOMIC_FETCH(SPACE, sub, atomic_fetch_sub_explicit) \
  CHORUS_ATOMIC_FETCH(SPACE, min, atomic_fetch_min_explicit) \
  CHORUS_ATOMIC_FETCH(SPACE, max, atomic_fetch_max_explicit) \
  CHORUS_ATOMIC_FETCH(SPACE, and, atomic_fetch_and_explicit) \
  CHORUS_ATOMIC_FETCH(SPACE, or, atomic_fetch_or_explicit) \
  CHORUS_ATOMIC_FETCH(SPACE, xor, atomic_fetch_xor_explicit) \
  CHORUS_ATOMIC_FETCH(SPACE, exch, atomic_exchange_explicit) \
  template <typename T> static inline T chorus_atomic_cas(SPACE T* p, T expected, T desired) \
  { \
    SPACE typename chorus_atomic_of<T>::type* a = (SPACE typename chorus_atomic_of<T>::type*)p; \
    T old = expected; \
    while (!atomic_compare_exchange_weak_explicit(a, &old, desired, memory_order_relaxed, \
                                                  memory_order_relaxed)) { \
      if (old != expected) return old; \
    } \
    return expected; \
  } \
  template <typename T> static inline T chorus_atomic_inc(SPACE T* p, T limit) \
  { \
    SPACE typename chorus_atomic_of<T>::type* a = (SPACE typename chorus_atomic_of<T>::type*)p; \
    T old = atomic_load_explicit(a, memory_order_relaxed); \
    while (!atomic_compare_exchange_weak_explicit(a, &old, (old >= limit) ? T(0) : T(old + 1), \
                                                  memory_order_relaxed, memory_order_relaxed)) {} \
    return old; \
  } \
  template <typename T> static inline T chorus_atomic_dec(SPACE T* p, T limit) \
  { \
    SPACE typename chorus_atomic_of<T>::type* a = (SPACE typename chorus_atomic_of<T>::type*)p; \
    T old = atomic_load_explicit(a, memory_order_relaxed); \
    while (!atomic_compare_exchange_weak_explicit(a, &old, \
                                                  (old == 0 || old > limit) ? limit : T(old - 1), \
                                                  memory_order_relaxed, memory_order_relaxed)) {} \
    return old; \
  }
#ifndef CHORUS_SHIM_ONE_ADDRESS_SPACE
CHORUS_ATOMIC_UPDATE(device)
CHORUS_ATOMIC_UPDATE(threadgroup)
#else
CHORUS_ATOMIC_UPDATE()
#endif
#undef CHORUS_ATOMIC_UPDATE
#undef CHORUS_ATOMIC_FETCH

// Shuffles with CUDA's segment widths; `lane` is [[thread_index_in_simdgroup]].
template <typename T> static inline T chorus_shfl(T v, int src, int width, uint lane)
{ return simd_shuffle(v, ushort((int(lane) & ~(width - 1)) + (src & (width - 1)))); }
template <typename T> static inline T chorus_shfl_up(T v, uint delta, int width, uint lane)
{
  int src = int(lane) - int(delta);
  return simd_shuffle(v, ushort(src < (int(lane) & ~(width - 1)) ? int(lane) : src));
}
template <typename T> static inline T chorus_shfl_down(T v, uint delta, int width, uint lane)
{
  int src = int(lane) + int(delta);
  return simd_shuffle(v, ushort(src >= (int(lane) & ~(width - 1)) + width ? int(lane) : src));
}
template <typename T> static inline T chorus_shfl_xor(T v, int mask, int width, uint lane)
{
  int src = int(lane) ^ mask;
  return simd_shuffle(v, ushort(src >= (int(lane) & ~(width - 1)) + width ? int(lane) : src));
}
static inline uint chorus_ballot(bool p) { return uint(static_cast<ulong>(simd_ballot(p))); }
static inline uint chorus_active_mask()
{ return uint(static_cast<ulong>(simd_active_threads_mask())); }
// Float to integer as CUDA converts: toward zero, saturating, NaN to 0 (MSL leaves values out
// of range undefined).
template <typename I> struct chorus_limits;
#define CHORUS_LIMITS(I, LOW, HIGH, MIN, MAX) \
  template <> struct chorus_limits<I> { \
    static constexpr float low = LOW; static constexpr float high = HIGH; \
    static constexpr I min = MIN; static constexpr I max = MAX; };
CHORUS_LIMITS(char, -128.0f, 128.0f, -128, 127)
CHORUS_LIMITS(uchar, 0.0f, 256.0f, 0, 255)
CHORUS_LIMITS(short, -32768.0f, 32768.0f, -32768, 32767)
CHORUS_LIMITS(ushort, 0.0f, 65536.0f, 0, 65535)
CHORUS_LIMITS(int, -2147483648.0f, 2147483648.0f, -2147483647 - 1, 2147483647)
CHORUS_LIMITS(uint, 0.0f, 4294967296.0f, 0u, 4294967295u)
CHORUS_LIMITS(long, -9223372036854775808.0f, 9223372036854775808.0f, -9223372036854775807l - 1l,
              9223372036854775807l)
CHORUS_LIMITS(ulong, 0.0f, 18446744073709551616.0f, 0ul, 18446744073709551615ul)
#undef CHORUS_LIMITS
template <typename I> static inline I chorus_float_to(float x)
{
  if (isnan(x)) return I(0);
  if (x <= chorus_limits<I>::low) return chorus_limits<I>::min;
  if (x >= chorus_limits<I>::high) return chorus_limits<I>::max;
  return I(x);
}
template <typename T> static inline int chorus_ffs(T x) { return x == 0 ? 0 : int(ctz(x)) + 1; }
template <typename T> static inline T chorus_recip(T x) { return T(1) / x; }

// Math MSL lacks.
static inline float chorus_expm1(float x)
{
  float u = exp(x);
  if (u == 1.0f) return x;
  float um1 = u - 1.0f;
  if (um1 == -1.0f) return -1.0f;
  return um1 * x / log(u);
}
static inline float chorus_log1p(float x)
{
  float u = 1.0f + x;
  return (u == 1.0f) ? x : log(u) * x / (u - 1.0f);
}
static inline float chorus_cbrt(float x)
{
  if (x == 0.0f || isinf(x) || isnan(x)) return x;
  float y = copysign(pow(fabs(x), 1.0f / 3.0f), x);
  return y - (y * y * y - x) / (3.0f * y * y);
}
static inline float chorus_hypot(float x, float y)
{
  float a = fabs(x), b = fabs(y);
  float m = max(a, b), n = min(a, b);
  if (isinf(m)) return m;
  if (m == 0.0f) return 0.0f;
  float r = n / m;
  return m * sqrt(1.0f + r * r);
}
static inline float chorus_erfc(float x)
{
  float z = fabs(x);
  float t = 1.0f / (1.0f + 0.5f * z);
  float r = t * exp(-z * z - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f
    + t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f
    + t * (-0.82215223f + t * 0.17087277f)))))))));
  return x >= 0.0f ? r : 2.0f - r;
}
static inline float chorus_erf(float x)
{
  if (fabs(x) < 0.5f) {
    float x2 = x * x;
    return 1.1283791671f * x * (1.0f - x2 * (1.0f / 3.0f - x2 * (0.1f - x2 * (1.0f / 42.0f
      - x2 / 216.0f))));
  }
  return 1.0f - chorus_erfc(x);
}
"#;

/// Lower-case names MSL code already uses, which a kernel-text name must not take: address
/// spaces and attributes' words, types, the standard library's functions, and the prelude's
/// macros.
pub const RESERVED: &[&str] = &[
    // Address spaces, function qualifiers and other keywords of MSL.
    "device",
    "constant",
    "threadgroup",
    "threadgroup_imageblock",
    "thread",
    "kernel",
    "vertex",
    "fragment",
    "visible",
    "stitchable",
    "object",
    "mesh",
    "ray_data",
    "object_data",
    "metal",
    "std",
    "restrict",
    "as_type",
    "static_cast",
    "reinterpret_cast",
    "const_cast",
    "dynamic_cast",
    "typeof",
    "decltype",
    "nullptr",
    "unsigned",
    "signed",
    "long",
    "extern",
    "register",
    // Types.
    "char",
    "uchar",
    "short",
    "ushort",
    "uint",
    "ulong",
    "half",
    "bfloat",
    "size_t",
    "ptrdiff_t",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "intptr_t",
    "uintptr_t",
    "bool2",
    "bool3",
    "bool4",
    "char2",
    "char3",
    "char4",
    "uchar2",
    "uchar3",
    "uchar4",
    "short2",
    "short3",
    "short4",
    "ushort2",
    "ushort3",
    "ushort4",
    "int2",
    "int3",
    "int4",
    "uint2",
    "uint3",
    "uint4",
    "long2",
    "long3",
    "long4",
    "ulong2",
    "ulong3",
    "ulong4",
    "half2",
    "half3",
    "half4",
    "bfloat2",
    "bfloat3",
    "bfloat4",
    "float2",
    "float3",
    "float4",
    "packed_float2",
    "packed_float3",
    "packed_float4",
    "packed_half2",
    "packed_half3",
    "packed_half4",
    "packed_int2",
    "packed_int3",
    "packed_int4",
    "packed_uint2",
    "packed_uint3",
    "packed_uint4",
    "float2x2",
    "float3x3",
    "float4x4",
    "half2x2",
    "half3x3",
    "half4x4",
    "simd_vote",
    "atomic",
    "atomic_int",
    "atomic_uint",
    "atomic_bool",
    "atomic_float",
    "atomic_ulong",
    "texture1d",
    "texture2d",
    "texture3d",
    "texture2d_array",
    "texturecube",
    "depth2d",
    "sampler",
    "array",
    "array_ref",
    "vec",
    "matrix",
    "access",
    "mem_flags",
    "memory_order",
    "memory_order_relaxed",
    "memory_order_seq_cst",
    "memory_order_acquire",
    "memory_order_release",
    "memory_order_acq_rel",
    "thread_scope",
    "thread_scope_device",
    "thread_scope_threadgroup",
    "thread_scope_simdgroup",
    // Synchronization, SIMD-group and atomic functions.
    "threadgroup_barrier",
    "simdgroup_barrier",
    "atomic_thread_fence",
    "atomic_load_explicit",
    "atomic_store_explicit",
    "atomic_exchange_explicit",
    "atomic_compare_exchange_weak_explicit",
    "atomic_fetch_add_explicit",
    "atomic_fetch_sub_explicit",
    "atomic_fetch_min_explicit",
    "atomic_fetch_max_explicit",
    "atomic_fetch_and_explicit",
    "atomic_fetch_or_explicit",
    "atomic_fetch_xor_explicit",
    "simd_shuffle",
    "simd_shuffle_up",
    "simd_shuffle_down",
    "simd_shuffle_xor",
    "simd_shuffle_rotate_up",
    "simd_shuffle_rotate_down",
    "simd_shuffle_and_fill_up",
    "simd_shuffle_and_fill_down",
    "simd_broadcast",
    "simd_broadcast_first",
    "simd_ballot",
    "simd_all",
    "simd_any",
    "simd_active_threads_mask",
    "simd_is_first",
    "simd_sum",
    "simd_product",
    "simd_min",
    "simd_max",
    "simd_and",
    "simd_or",
    "simd_xor",
    "simd_prefix_exclusive_sum",
    "simd_prefix_inclusive_sum",
    "simd_prefix_exclusive_product",
    "simd_prefix_inclusive_product",
    "quad_shuffle",
    "quad_ballot",
    "quad_sum",
    // Math, common, integer, geometric and relational functions.
    "abs",
    "absdiff",
    "acos",
    "acosh",
    "acospi",
    "addsat",
    "all",
    "any",
    "asin",
    "asinh",
    "asinpi",
    "atan",
    "atan2",
    "atan2pi",
    "atanh",
    "atanpi",
    "ceil",
    "clamp",
    "clz",
    "copysign",
    "cos",
    "cosh",
    "cospi",
    "cross",
    "ctz",
    "degrees",
    "distance",
    "divide",
    "dot",
    "exp",
    "exp10",
    "exp2",
    "extract_bits",
    "fabs",
    "faceforward",
    "fast",
    "fdim",
    "floor",
    "fma",
    "fmax",
    "fmax3",
    "fmedian3",
    "fmin",
    "fmin3",
    "fmod",
    "fract",
    "frexp",
    "hadd",
    "ilogb",
    "insert_bits",
    "isfinite",
    "isinf",
    "isnan",
    "isnormal",
    "isordered",
    "isunordered",
    "ldexp",
    "length",
    "length_squared",
    "log",
    "log10",
    "log2",
    "mad",
    "mad24",
    "madhi",
    "madsat",
    "max",
    "max3",
    "median3",
    "min",
    "min3",
    "mix",
    "modf",
    "mul24",
    "mulhi",
    "nan",
    "nextafter",
    "normalize",
    "popcount",
    "pow",
    "powr",
    "precise",
    "radians",
    "reflect",
    "refract",
    "reverse_bits",
    "rhadd",
    "rint",
    "rotate",
    "round",
    "rsqrt",
    "saturate",
    "select",
    "sign",
    "signbit",
    "sin",
    "sincos",
    "sinh",
    "sinpi",
    "smoothstep",
    "sqrt",
    "step",
    "subsat",
    "tan",
    "tanh",
    "tanpi",
    "trunc",
    "infinity",
    "os_log",
];

impl Dialect for Msl {
    fn name(&self) -> &'static str {
        "Metal Shading Language"
    }

    fn reserved_words(&self) -> &'static [&'static str] {
        RESERVED
    }

    fn headers(&self) -> &'static [&'static str] {
        // `metal_stdlib` is included by the prelude, before its helpers.
        &[]
    }

    fn type_header(&self, _ty: &Type) -> Option<&'static str> {
        None
    }

    fn intrinsic_header(&self, _intrinsic: &str) -> Option<&'static str> {
        None
    }

    fn prelude(&self) -> &'static str {
        PRELUDE
    }

    fn type_name(&self, ty: &Type) -> Option<&'static str> {
        Some(match ty {
            Type::Void => "void",
            Type::Bool => "bool",
            Type::Scalar(s) => scalar_name(*s)?,
            Type::Vector(v) => vector_name(*v)?,
            // Textures and surfaces are refused by validation (Metal's target lacks the
            // capability) before anything is printed.
            Type::CurandStateXorwow
            | Type::TextureObject
            | Type::SurfaceObject
            | Type::TensorMap
            | Type::WgmmaAccumulator(_)
            | Type::Pointer(_)
            | Type::Struct(_) => return None,
        })
    }

    fn vector_constructor(&self, vector: VectorType) -> Option<&'static str> {
        vector_name(vector)
    }

    fn linkage(&self) -> &'static str {
        // MSL does not mangle the names of kernels; device functions are internal.
        ""
    }

    fn function_qualifier(&self, kind: FunctionKind) -> &'static str {
        match kind {
            FunctionKind::Kernel => "kernel ",
            FunctionKind::Device => "",
        }
    }

    fn global_qualifier(&self, qualifier: GlobalQualifier) -> Option<&'static str> {
        match qualifier {
            // Spaces of the structures that hold the globals (`globals_parameter`): MSL 3.2 §4
            // has program-scope variables in the constant address space only.
            GlobalQualifier::Constant => Some("constant"),
            GlobalQualifier::Device => Some("device"),
            GlobalQualifier::Shared | GlobalQualifier::Managed | GlobalQualifier::Restrict => None,
        }
    }

    fn global_has_initializer(&self, _qualifiers: &[GlobalQualifier]) -> bool {
        true
    }

    fn restrict(&self) -> &'static str {
        // An aliasing hint only; MSL has no documented restrict qualifier.
        ""
    }

    fn launch_bounds(&self, bounds: &LaunchBounds) -> Option<String> {
        // The minimum of resident blocks is an occupancy hint Metal has no word for: dropped.
        if bounds.max_cluster.is_some() {
            return None;
        }
        Some(format!(
            "[[max_total_threads_per_threadgroup({})]]",
            bounds.max_threads
        ))
    }

    fn launch_bounds_first(&self) -> bool {
        true
    }

    fn globals_parameter(&self, space: AddressSpace, buffer: Option<usize>) -> Option<String> {
        let (ty, name) = super::globals_structure(space)?;
        let space = space.keyword();
        Some(match buffer {
            Some(index) => format!("{space} {ty}& {name} [[buffer({index})]]"),
            None => format!("{space} {ty}& {name}"),
        })
    }

    fn kernel_parameter(&self, index: usize, ty: &str, name: &str) -> String {
        if ty.ends_with('*') {
            format!("{ty} {name} [[buffer({index})]]")
        } else {
            format!("constant {ty}& {name} [[buffer({index})]]")
        }
    }

    fn implicit_parameters(&self, kind: FunctionKind, uses: &FunctionUses) -> Vec<String> {
        let kernel = kind == FunctionKind::Kernel;
        implicit(uses)
            .into_iter()
            .map(|p| {
                if kernel {
                    format!("{} {} [[{}]]", p.ty, p.name, p.attribute)
                } else {
                    format!("{} {}", p.ty, p.name)
                }
            })
            .collect()
    }

    fn implicit_arguments(&self, callee: &FunctionUses) -> Vec<String> {
        implicit(callee)
            .into_iter()
            .map(|p| p.name.to_string())
            .collect()
    }

    fn address_spaces(&self) -> bool {
        true
    }

    fn pointer_type(&self, pointee: &str, space: AddressSpace, innermost: bool) -> String {
        if innermost {
            format!("{} {pointee}*", space.keyword())
        } else {
            format!("{pointee} {}*", space.keyword())
        }
    }

    fn index_variable(&self, var: IndexVar) -> Option<IndexSpelling> {
        let axis = |a: Axis| match a {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        };
        let text = match var {
            IndexVar::ThreadIdx(a) => format!("chorus_tid.{}", axis(a)),
            IndexVar::BlockIdx(a) => format!("chorus_bid.{}", axis(a)),
            IndexVar::BlockDim(a) => format!("chorus_bdim.{}", axis(a)),
            IndexVar::GridDim(a) => format!("chorus_gdim.{}", axis(a)),
            IndexVar::LaneId => "chorus_lane".into(),
            IndexVar::WarpSize => {
                return Some(IndexSpelling::Expr {
                    text: "32".into(),
                    unsigned: false,
                });
            }
            IndexVar::ClusterDim(_) | IndexVar::ClusterIdx(_) | IndexVar::BlockInCluster(_) => {
                return None;
            }
        };
        Some(IndexSpelling::Expr {
            text,
            unsigned: true,
        })
    }

    fn warp_width(&self) -> u32 {
        32
    }

    fn shared_array(&self, element: &str, name: &str, dims: &str) -> Option<String> {
        Some(format!("threadgroup {element} {name}{dims};"))
    }

    fn dynamic_shared_array(&self, _name: &str) -> Option<String> {
        // A kernel parameter (`implicit_parameters`), not a declaration.
        Some(String::new())
    }

    fn call(&self, intrinsic: &str, args: &[&str]) -> Option<String> {
        call(intrinsic, args)
    }

    fn long_suffixes(&self) -> (&'static str, &'static str) {
        // MSL has no `long long`; its `long` and `ulong` are 64-bit.
        ("l", "ul")
    }

    fn float_to_integer(&self, integer: &str, value: &str) -> Option<String> {
        Some(format!("chorus_float_to<{integer}>({value})"))
    }

    fn helper_definition(&self, helper: Helper, name: &str) -> Option<String> {
        helper_definition(helper, name)
    }
}

/// One implicit parameter: its type, name and kernel attribute.
struct Implicit {
    ty: &'static str,
    name: &'static str,
    attribute: &'static str,
}

/// The implicit parameters a function with `uses` takes, in a fixed order.
fn implicit(uses: &FunctionUses) -> Vec<Implicit> {
    let mut out = Vec::new();
    let mut add = |present: bool, ty, name, attribute| {
        if present {
            out.push(Implicit {
                ty,
                name,
                attribute,
            });
        }
    };
    add(
        uses.reads_any(|v| matches!(v, IndexVar::ThreadIdx(_))),
        "uint3",
        "chorus_tid",
        "thread_position_in_threadgroup",
    );
    add(
        uses.reads_any(|v| matches!(v, IndexVar::BlockIdx(_))),
        "uint3",
        "chorus_bid",
        "threadgroup_position_in_grid",
    );
    add(
        uses.reads_any(|v| matches!(v, IndexVar::BlockDim(_))),
        "uint3",
        "chorus_bdim",
        "threads_per_threadgroup",
    );
    add(
        uses.reads_any(|v| matches!(v, IndexVar::GridDim(_))),
        "uint3",
        "chorus_gdim",
        "threadgroups_per_grid",
    );
    let shuffles = [
        Builtin::ShflSync,
        Builtin::ShflUpSync,
        Builtin::ShflDownSync,
        Builtin::ShflXorSync,
    ];
    add(
        uses.reads(IndexVar::LaneId) || shuffles.iter().any(|b| uses.calls(*b)),
        "uint",
        "chorus_lane",
        "thread_index_in_simdgroup",
    );
    add(
        uses.dynamic_shared,
        "threadgroup uchar*",
        DYNAMIC_SHARED,
        "threadgroup(0)",
    );
    out
}

/// The MSL spelling of a scalar type; `None` for those MSL lacks.
fn scalar_name(s: ScalarType) -> Option<&'static str> {
    Some(match s {
        ScalarType::Int8 => "char",
        ScalarType::UInt8 => "uchar",
        ScalarType::Int16 => "short",
        ScalarType::UInt16 => "ushort",
        ScalarType::Int => "int",
        ScalarType::UInt => "uint",
        ScalarType::Int64 => "long",
        ScalarType::UInt64 => "ulong",
        ScalarType::SizeT => "size_t",
        ScalarType::Half => "half",
        ScalarType::BFloat16 => "bfloat",
        ScalarType::Float => "float",
        ScalarType::Double | ScalarType::Fp8 | ScalarType::Fp4 => return None,
    })
}

/// The MSL spelling (and constructor) of a vector type.
fn vector_name(v: VectorType) -> Option<&'static str> {
    Some(match v {
        VectorType::Int2 => "int2",
        VectorType::Int4 => "int4",
        VectorType::UInt2 => "uint2",
        VectorType::UInt4 => "uint4",
        VectorType::Half2 => "half2",
        VectorType::Float2 => "float2",
        VectorType::Float3 => "float3",
        VectorType::Float4 => "float4",
        VectorType::Double2 | VectorType::Double3 | VectorType::Double4 => return None,
    })
}

/// MSL's spelling of a call of the printer's CUDA intrinsic `intrinsic`.
fn call(intrinsic: &str, args: &[&str]) -> Option<String> {
    let arg = |i: usize| args.get(i).copied().unwrap_or("0");
    let join = || args.join(", ");
    let binary = |op: &str| format!("({} {op} {})", arg(0), arg(1));
    Some(match intrinsic {
        "__syncthreads" => {
            "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)".into()
        }
        "__syncwarp" => "simdgroup_barrier(mem_flags::mem_threadgroup)".into(),
        // The scoped fence (flags, order, scope) is MSL 3.2's, the language version this
        // dialect asks for ([`LANGUAGE_VERSION`]); older versions have only barriers. Not yet
        // compiled by Apple's compiler (no Mac here): the shim defines the same signature.
        "__threadfence" => {
            "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)"
                .into()
        }
        "__threadfence_block" => "atomic_thread_fence(mem_flags::mem_device | \
             mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_threadgroup)"
            .into(),
        // Shuffles: (mask, value, lane-or-delta [, width]); the mask is dropped (module docs).
        "__shfl_sync" | "__shfl_up_sync" | "__shfl_down_sync" | "__shfl_xor_sync" => {
            let helper = match intrinsic {
                "__shfl_sync" => "chorus_shfl",
                "__shfl_up_sync" => "chorus_shfl_up",
                "__shfl_down_sync" => "chorus_shfl_down",
                _ => "chorus_shfl_xor",
            };
            let width = args.get(3).copied().unwrap_or("32");
            format!("{helper}({}, {}, {width}, chorus_lane)", arg(1), arg(2))
        }
        "__ballot_sync" => format!("chorus_ballot({})", arg(1)),
        "__all_sync" => format!("int(simd_all({}))", arg(1)),
        "__any_sync" => format!("int(simd_any({}))", arg(1)),
        "__activemask" => "chorus_active_mask()".into(),
        "__reduce_add_sync" => format!("simd_sum({})", arg(1)),
        "__reduce_min_sync" => format!("simd_min({})", arg(1)),
        "__reduce_max_sync" => format!("simd_max({})", arg(1)),
        "__reduce_and_sync" => format!("simd_and({})", arg(1)),
        "__reduce_or_sync" => format!("simd_or({})", arg(1)),
        "__reduce_xor_sync" => format!("simd_xor({})", arg(1)),
        "atomicAdd" => format!("chorus_atomic_add({})", join()),
        "atomicSub" => format!("chorus_atomic_sub({})", join()),
        "atomicExch" => format!("chorus_atomic_exch({})", join()),
        "atomicMin" => format!("chorus_atomic_min({})", join()),
        "atomicMax" => format!("chorus_atomic_max({})", join()),
        "atomicAnd" => format!("chorus_atomic_and({})", join()),
        "atomicOr" => format!("chorus_atomic_or({})", join()),
        "atomicXor" => format!("chorus_atomic_xor({})", join()),
        "atomicInc" => format!("chorus_atomic_inc({})", join()),
        "atomicDec" => format!("chorus_atomic_dec({})", join()),
        "atomicCAS" => format!("chorus_atomic_cas({})", join()),
        // half and bfloat: native types with operators and conversions.
        "__half2float" | "__bfloat162float" => format!("float({})", arg(0)),
        "__float2half" | "__int2half_rn" | "__uint2half_rn" | "__ll2half_rn" | "__ull2half_rn"
        | "__short2half_rn" | "__ushort2half_rn" => {
            format!("half({})", arg(0))
        }
        "__float2bfloat16"
        | "__int2bfloat16_rn"
        | "__uint2bfloat16_rn"
        | "__ll2bfloat16_rn"
        | "__ull2bfloat16_rn"
        | "__short2bfloat16_rn"
        | "__ushort2bfloat16_rn" => {
            format!("bfloat({})", arg(0))
        }
        "__half2half2" => format!("half2({})", arg(0)),
        "__halves2half2" => format!("half2({})", join()),
        "__hadd" | "__hadd2" => binary("+"),
        "__hsub" | "__hsub2" => binary("-"),
        "__hmul" | "__hmul2" => binary("*"),
        "__hdiv" | "__h2div" => binary("/"),
        "__heq" => binary("=="),
        "__hne" => binary("!="),
        "__hlt" => binary("<"),
        "__hgt" => binary(">"),
        "__hle" => binary("<="),
        "__hge" => binary(">="),
        "__hneg" | "__hneg2" => format!("-({})", arg(0)),
        "__hfma" | "__hfma2" | "fmaf" => format!("fma({})", join()),
        "__hmax" => format!("max({})", join()),
        "__hmin" => format!("min({})", join()),
        "__habs" | "llabs" | "abs" => format!("abs({})", join()),
        "hrcp" => format!("chorus_recip({})", arg(0)),
        "hexp" | "hexp2" | "hlog" | "hlog2" | "hlog10" | "hsin" | "hcos" | "hsqrt" | "hrsqrt"
        | "hfloor" | "hceil" | "htrunc" => format!("{}({})", &intrinsic[1..], join()),
        // Fast float variants.
        "__expf" => format!("fast::exp({})", arg(0)),
        "__sinf" => format!("fast::sin({})", arg(0)),
        "__cosf" => format!("fast::cos({})", arg(0)),
        "__logf" => format!("fast::log({})", arg(0)),
        "__log2f" => format!("fast::log2({})", arg(0)),
        "__fdividef" => format!("fast::divide({})", join()),
        "__saturatef" => format!("saturate({})", arg(0)),
        // Math MSL lacks: the prelude's helpers.
        "expm1f" => format!("chorus_expm1({})", arg(0)),
        "log1pf" => format!("chorus_log1p({})", arg(0)),
        "cbrtf" => format!("chorus_cbrt({})", arg(0)),
        "hypotf" => format!("chorus_hypot({})", join()),
        "erff" => format!("chorus_erf({})", arg(0)),
        "erfcf" => format!("chorus_erfc({})", arg(0)),
        "expf" | "exp2f" | "logf" | "log2f" | "log10f" | "sinf" | "cosf" | "tanf" | "asinf"
        | "acosf" | "atanf" | "atan2f" | "sinhf" | "coshf" | "tanhf" | "sqrtf" | "rsqrtf"
        | "powf" | "floorf" | "ceilf" | "roundf" | "truncf" | "fabsf" | "fminf" | "fmaxf"
        | "fmodf" => format!("{}({})", &intrinsic[..intrinsic.len() - 1], join()),
        "min" | "max" => format!("{intrinsic}({})", join()),
        // Vector constructors (`vector_constructor` names them after their types).
        "int2" | "int4" | "uint2" | "uint4" | "half2" | "float2" | "float3" | "float4" => {
            format!("{intrinsic}({})", join())
        }
        // Bit operations: MSL's return the argument's type, CUDA's int (or unsigned).
        "__clz" | "__clzll" => format!("int(clz({}))", arg(0)),
        "__popc" | "__popcll" => format!("int(popcount({}))", arg(0)),
        "__brev" => format!("reverse_bits(uint({}))", arg(0)),
        "__brevll" => format!("reverse_bits(ulong({}))", arg(0)),
        "__ffs" | "__ffsll" => format!("chorus_ffs({})", arg(0)),
        // Validation refuses what needs these (no double, printf, cuRAND, clusters, match).
        _ => return None,
    })
}

/// The MSL definition of `helper`, named `name`: MSL's vectors have component-wise operators.
fn helper_definition(helper: Helper, name: &str) -> Option<String> {
    const PREFIX: &str = "static inline";
    let mut out = String::new();
    match helper {
        Helper::VectorBinary(op, v, operands) => {
            let (ty, element) = (vector_name(v)?, scalar_name(v.element())?);
            let params = match operands {
                Operands::VectorVector => format!("{ty} a, {ty} b"),
                Operands::VectorScalar => format!("{ty} a, {element} b"),
                Operands::ScalarVector => format!("{element} a, {ty} b"),
            };
            let _ = write!(
                out,
                "{PREFIX} {ty} {name}({params})\n{{\n  return a {} b;\n}}\n",
                op.symbol()
            );
        }
        Helper::VectorNeg(v) => {
            let ty = vector_name(v)?;
            let _ = write!(out, "{PREFIX} {ty} {name}({ty} a)\n{{\n  return -a;\n}}\n");
        }
        Helper::VectorRecip(v) => {
            let ty = vector_name(v)?;
            let _ = write!(
                out,
                "{PREFIX} {ty} {name}({ty} a)\n{{\n  return {ty}(1) / a;\n}}\n"
            );
        }
        Helper::VectorDot(v) => {
            let (ty, element) = (vector_name(v)?, scalar_name(v.element())?);
            let mut sum = String::new();
            for (i, c) in v.components().iter().enumerate() {
                let term = format!("(a.{c} * b.{c})");
                sum = if i == 0 {
                    term
                } else {
                    format!("({sum} + {term})")
                };
            }
            let _ = write!(
                out,
                "{PREFIX} {element} {name}({ty} a, {ty} b)\n{{\n  return {sum};\n}}\n"
            );
        }
        Helper::FloorMod(s) => {
            let ty = scalar_name(s)?;
            let rem = if s.is_integer() {
                format!("({ty})(a % b)")
            } else {
                "fmod(a, b)".into()
            };
            let _ = write!(
                out,
                "{PREFIX} {ty} {name}({ty} a, {ty} b)\n{{\n  {ty} r = {rem};\n  return (r != 0 && ((r < 0) != (b < 0))) ? ({ty})(r + b) : r;\n}}\n"
            );
        }
        // The lane is a kernel attribute (`chorus_lane`); clusters do not exist in Metal.
        Helper::LaneId | Helper::ClusterBarrier | Helper::Tensor(_) | Helper::Hopper(_) => {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_words_are_lower_case() {
        for word in RESERVED {
            assert_eq!(*word, word.to_ascii_lowercase());
        }
    }

    #[test]
    fn shuffles_drop_the_mask_and_take_the_lane() {
        assert_eq!(
            call("__shfl_down_sync", &["4294967295u", "v", "3"]).unwrap(),
            "chorus_shfl_down(v, 3, 32, chorus_lane)"
        );
        assert_eq!(
            call("__shfl_xor_sync", &["m", "v", "9", "8"]).unwrap(),
            "chorus_shfl_xor(v, 9, 8, chorus_lane)"
        );
        assert!(call("__match_any_sync", &["m", "v"]).is_none());
        assert!(call("printf", &["\"x\""]).is_none());
    }

    #[test]
    fn kernel_parameters_bind_buffers() {
        assert_eq!(
            Msl.kernel_parameter(0, "device float*", "a"),
            "device float* a [[buffer(0)]]"
        );
        assert_eq!(
            Msl.kernel_parameter(2, "int", "n"),
            "constant int& n [[buffer(2)]]"
        );
    }

    #[test]
    fn by_value_kernel_parameters_are_constant_on_metal() {
        let metal = crate::target::Target::metal(8).unwrap();
        let assign =
            "(defkernel k (void ((a int*) (n int)))\n  (set n (+ n 1))\n  (set (aref a 0) n))";
        let e = crate::compile_str_for(assign, "k.lisp", &metal).unwrap_err();
        assert_eq!((e.span.line, e.span.column), (2, 3), "{e}");
        assert!(
            e.message
                .contains("assignment to the by-value parameter `n`")
                && e.message.contains("copy it into a `let`"),
            "{e}"
        );
        // CUDA's by-value parameters are locals.
        assert!(
            crate::compile_str_for(assign, "k.lisp", &crate::target::Target::cuda(9, 0)).is_ok()
        );
        let field = "(defkernel-struct pair (x int) (y int))\n\
                     (defkernel k (void ((p pair) (out int*)))\n  (set (pair-x p) 3)\n  (set (aref out 0) (pair-x p)))";
        let e = crate::compile_str_for(field, "f.lisp", &metal).unwrap_err();
        assert_eq!(e.span.line, 3, "{e}");
        assert!(e.message.contains("parameter `p`"), "{e}");
        let address = "(defkernel (get :device) (int ((q int*))) (return (aref q 0)))\n\
                       (defkernel k (void ((n int) (out int*)))\n  (set (aref out 0) (get (pointer n))))";
        let e = crate::compile_str_for(address, "p.lisp", &metal).unwrap_err();
        assert_eq!(e.span.line, 3, "{e}");
        assert!(
            e.message
                .contains("the address of the by-value parameter `n`"),
            "{e}"
        );
        // Pointer parameters, a `let` copy and device functions' parameters are fine.
        let fine = "(defkernel (bump :device) (int ((m int))) (set m (+ m 1)) (return m))\n\
                    (defkernel k (void ((a int*) (n int)))\n  (let ((m n)) (set m (+ m 1)) (set (aref a 0) (bump m))))";
        assert!(crate::compile_str_for(fine, "ok.lisp", &metal).is_ok());
    }

    #[test]
    fn a_shared_global_printed_without_validation_is_an_error_at_it() {
        // Validation refuses it first for the Metal target; the printer still never prints
        // what no structure holds.
        let module = crate::compile_str(
            "(defglobal c 1 :constant)\n(defglobal s 0 :shared)\n\
             (defkernel k (void ((out int*)))\n  (set (aref out 0) (+ c s)))",
            "s.lisp",
        )
        .unwrap();
        let e = super::super::print_module(&module, &Msl, &super::super::PrintOptions::default())
            .unwrap_err();
        assert_eq!(e.span.line, 2, "{e}");
        assert!(e.message.contains("`:shared` global"), "{e}");
    }

    #[test]
    fn globals_are_fields_of_a_structure_the_host_binds_after_the_arguments() {
        let metal = crate::target::Target::metal(8).unwrap();
        let text = "(defglobal h (half 1.5) :constant)\n(defglobal bar 2 :constant)\n\
                    (defglobal foo 0)\n(defglobal hits 0 :device)\n\
                    (defkernel (get-bar :device) (int ()) (return bar))\n\
                    (defkernel (twice :device) (int ()) (return (* 2 (get-bar))))\n\
                    (defkernel (bump :device) (void ()) (set foo (+ foo (twice))))\n\
                    (defkernel (pure :device) (int ((x int))) (return x))\n\
                    (defkernel k (void ((out float*) (n int)))\n  \
                    (set (aref out 0) (+ (float h) (float (twice)) (float (pure n)))))\n\
                    (defkernel both (void ((out int*)))\n  (bump)\n  \
                    (atomic-add (pointer hits) 1)\n  (set (aref out 0) foo))\n\
                    (defkernel only-device (void ((out int*)))\n  (set (aref out 0) hits))\n\
                    (defkernel none (void ((out float*)))\n  (set (aref out 0) 1.0))";
        let module = crate::compile_str_for(text, "g.lisp", &metal).unwrap();
        let code =
            super::super::print_for_target(&module, &metal, &super::super::PrintOptions::default())
                .unwrap()
                .code;
        assert!(
            code.contains("struct chorus_globals_t {\n  half h;\n  int bar;\n};"),
            "{code}"
        );
        assert!(
            code.contains("struct chorus_device_globals_t {\n  int foo;\n  int hits;\n};"),
            "{code}"
        );
        // No program-scope variables: the host stores the initializers.
        assert!(!code.contains("constant half h"), "{code}");
        assert!(
            code.contains(
                "kernel void k(device float* out [[buffer(0)]], constant int& n [[buffer(1)]], \
                 constant chorus_globals_t& chorus_globals [[buffer(2)]]"
            ),
            "{code}"
        );
        // Through two calls to the function that reads it; not to one that reads none.
        assert!(
            code.contains("int get_bar(constant chorus_globals_t& chorus_globals)"),
            "{code}"
        );
        assert!(code.contains("return chorus_globals.bar;"), "{code}");
        assert!(code.contains("get_bar(chorus_globals)"), "{code}");
        assert!(code.contains("twice(chorus_globals)"), "{code}");
        assert!(code.contains("int pure(int x)"), "{code}");
        // The device structure after the constant one, in device functions and kernels; a
        // device global's address is a device pointer, for atomics.
        assert!(
            code.contains(
                "void bump(constant chorus_globals_t& chorus_globals, \
                 device chorus_device_globals_t& chorus_device_globals)"
            ),
            "{code}"
        );
        assert!(
            code.contains(
                "chorus_device_globals.foo = (chorus_device_globals.foo + twice(chorus_globals));"
            ),
            "{code}"
        );
        assert!(
            code.contains(
                "kernel void both(device int* out [[buffer(0)]], \
                 constant chorus_globals_t& chorus_globals [[buffer(1)]], \
                 device chorus_device_globals_t& chorus_device_globals [[buffer(2)]])"
            ),
            "{code}"
        );
        assert!(
            code.contains("bump(chorus_globals, chorus_device_globals);"),
            "{code}"
        );
        assert!(
            code.contains("chorus_atomic_add(&(chorus_device_globals.hits), 1)"),
            "{code}"
        );
        assert!(
            code.contains(
                "kernel void only_device(device int* out [[buffer(0)]], \
                 device chorus_device_globals_t& chorus_device_globals [[buffer(1)]])"
            ),
            "{code}"
        );
        assert!(
            code.contains("kernel void none(device float* out [[buffer(0)]])"),
            "{code}"
        );
    }
}
