//! The CUDA C dialect: what nvcc and NVRTC (`--std=c++17`) accept, with no include directory of
//! Chorus's own.
//!
//! A printed file has, in this order:
//!
//! 1. `#include` lines, only for what the module uses: `<cuda_fp16.h>` (half, half2),
//!    `<cuda_bf16.h>`, `<cuda_fp8.h>`, `<cuda_fp4.h>`, `<curand_kernel.h>` (cuRAND state and calls);
//! 2. helper functions, only those used, as `static __device__ __forceinline__` definitions
//!    (vector arithmetic such as `chorus_float3_add`, `chorus_float3_dot`, `chorus_lane_id`,
//!    `chorus_cluster_barrier`);
//! 3. structures (`struct pair {\n  int x;\n  int y;\n};`), each after the structures it
//!    contains by value;
//! 4. globals, as `extern "C" __device__ int foo = 0;` (vector and structure initializers as
//!    brace lists); a `__shared__` global has no initializer, which CUDA forbids;
//! 5. an `extern "C"` prototype of every function, then the definitions in definition order,
//!    indented by two spaces.
//!
//! # Kernel names and C names
//!
//! Every name the kernel text defines reaches C through the printer's
//! [`Namer`](super::Namer): lower case, every character other than a letter, digit or `_` becomes
//! `_` (`vec-add-kernel` → `vec_add_kernel`, `%foo` → `_foo`), a trailing `*` becomes `_p`, a
//! leading digit gets a `_` prefix, a C or C++ keyword gets a `_` suffix (`int` → `int_`), and a
//! name CUDA already uses ([`RESERVED`]: `norm`, `sin`, `dim3`, `atomicadd` …) gets `_1`. Names
//! are unique (functions, globals and structures in the module; locals within their function);
//! [`PrintedModule::names`](super::PrintedModule::names) maps the kernel-language names of
//! functions and globals to them. The printer invents no names of its own except the ones below,
//! all of which start with `chorus_`:
//!
//! * functions and globals keep their exact C name in the object file: both are declared
//!   `extern "C"`, so `cuModuleGetFunction` and `cuModuleGetGlobal` find `vec_add_kernel` and
//!   `foo` by those names (no C++ mangling, no package prefix);
//! * helpers are named `chorus_<what>` (`chorus_float3_add`), the dynamic shared memory array
//!   is `chorus_dyn_smem`, and the temporaries of a `do` whose steps read each other's variables
//!   are `<variable>_next` (made unique within the function).
//!
//! `cuda-asm` text is copied verbatim (with a `;` added when it ends in neither `;` nor `}`), so
//! it must use the C names above.
//!
//! # Statements
//!
//! As the seed shows them: `if (T) {…} else {…}` (an `if` alone in an `else` becomes `else if`),
//! a `{…}` block for each `let` (and `symbol-macrolet`, `macrolet`), `x = v;`, `return v;`,
//! `while (T) {…}`, `switch (E) { case 1: {… break;} default: {…} }` with no fall-through,
//! `__shared__ float b[16][16];`, `extern __shared__ __align__(16) unsigned char
//! chorus_dyn_smem[];` with `int* s = (int*)chorus_dyn_smem;` for dynamic shared memory,
//! `__launch_bounds__(N, M)` on the kernel, `printf("…", a);` with the format C-escaped. `for`
//! and `do` print as `for (int i = 0; (i < n); i = (i + 1)) {…}`. A `do` of several variables
//! declares them in one declaration when they share a type (`for (int a = 0, b = 0; …)`; the
//! seed's `for ( int a = 0, int b = 0; …)` is not C), else in a block around the loop; its steps
//! are parallel, so a step whose variable a later step reads goes through a temporary:
//! `x_next = y, y = (x + y), x = x_next`.
//!
//! # Expressions
//!
//! Expressions are fully parenthesised as cl-cuda printed them (`((blockDim.x * blockIdx.x) +
//! threadIdx.x)`, left folds, `(c ? a : b)`); the operand of a unary operator or cast is always
//! in parentheses (`-(x)`, `!(a > 15)`, `&(a[i])`, `(unsigned int)(-1)`). Conditions of `if`,
//! `while` and `switch` are written without a second pair of parentheses (`if (i < n) {`).
//!
//! Implicit conversions the checker inserted ([`crate::ir::ExprKind::Cast`] with `implicit: true`) are
//! folded into literals (`(+ x 1)` on a float `x` prints `(x + 1.0f)`), left to C where C
//! performs exactly the same conversion (an initializer, an assignment, a `return`, a call of a
//! device function, the other operand of an arithmetic operator whose type is already the
//! target), and printed everywhere else (`printf` arguments, conversions to and from `half`,
//! arguments of CUDA's overloaded intrinsics).
//!
//! # Index variables
//!
//! The kernel language types `thread-idx-x` and the other index variables as `int`, while CUDA's
//! `threadIdx.x` is `unsigned int`. The printer writes them plain, as cl-cuda did
//! (`int i = ((blockDim.x * blockIdx.x) + threadIdx.x);`), and adds `(int)(…)` only where
//! unsigned arithmetic could give another result than the language's `int`: the operand of a
//! comparison, division, remainder, right shift, intrinsic or `printf`, and an index computed
//! with arithmetic (`a[(int)(threadIdx.x - 1)]`). Storing into an `int`, `+`, `-`, `*` and the
//! bitwise operators need no cast, since they agree modulo 2³². Arithmetic on the 8- and 16-bit
//! integer types, which C promotes to `int`, is handled the same way.

use super::{Dialect, Helper, IndexSpelling, Operands};
use crate::ir::{Axis, FunctionKind, GlobalQualifier, IndexVar, LaunchBounds};
use crate::types::{ScalarType, Type, VectorType};
use std::fmt::Write;

/// The CUDA C dialect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cuda;

/// The headers a CUDA C file may include, in the order it includes them.
pub const HEADERS: &[&str] = &[
    "cuda_fp16.h",
    "cuda_bf16.h",
    "cuda_fp8.h",
    "cuda_fp4.h",
    "curand_kernel.h",
];

/// Lower-case names CUDA C code already uses, which a kernel-text name must not take: the
/// device math library (single and double precision), intrinsics and builtin variables with
/// lower-case names, vector and builtin types, cuRAND, and the C library functions the headers
/// declare (`stdlib.h` comes in through `curand_kernel.h`).
pub const RESERVED: &[&str] = &[
    // Device math, double and single precision.
    "acos",
    "acosf",
    "acosh",
    "acoshf",
    "asin",
    "asinf",
    "asinh",
    "asinhf",
    "atan",
    "atanf",
    "atan2",
    "atan2f",
    "atanh",
    "atanhf",
    "cbrt",
    "cbrtf",
    "ceil",
    "ceilf",
    "copysign",
    "copysignf",
    "cos",
    "cosf",
    "cosh",
    "coshf",
    "cospi",
    "cospif",
    "cyl_bessel_i0",
    "cyl_bessel_i0f",
    "cyl_bessel_i1",
    "cyl_bessel_i1f",
    "erf",
    "erff",
    "erfc",
    "erfcf",
    "erfcinv",
    "erfcinvf",
    "erfcx",
    "erfcxf",
    "erfinv",
    "erfinvf",
    "exp",
    "expf",
    "exp10",
    "exp10f",
    "exp2",
    "exp2f",
    "expm1",
    "expm1f",
    "fabs",
    "fabsf",
    "fdim",
    "fdimf",
    "fdivide",
    "fdividef",
    "floor",
    "floorf",
    "fma",
    "fmaf",
    "fmax",
    "fmaxf",
    "fmin",
    "fminf",
    "fmod",
    "fmodf",
    "frexp",
    "frexpf",
    "hypot",
    "hypotf",
    "ilogb",
    "ilogbf",
    "isfinite",
    "isinf",
    "isnan",
    "j0",
    "j0f",
    "j1",
    "j1f",
    "jn",
    "jnf",
    "ldexp",
    "ldexpf",
    "lgamma",
    "lgammaf",
    "llrint",
    "llrintf",
    "llround",
    "llroundf",
    "log",
    "logf",
    "log10",
    "log10f",
    "log1p",
    "log1pf",
    "log2",
    "log2f",
    "logb",
    "logbf",
    "lrint",
    "lrintf",
    "lround",
    "lroundf",
    "modf",
    "modff",
    "nan",
    "nanf",
    "nearbyint",
    "nearbyintf",
    "nextafter",
    "nextafterf",
    "norm",
    "normf",
    "norm3d",
    "norm3df",
    "norm4d",
    "norm4df",
    "normcdf",
    "normcdff",
    "normcdfinv",
    "normcdfinvf",
    "pow",
    "powf",
    "powi",
    "powif",
    "rcbrt",
    "rcbrtf",
    "remainder",
    "remainderf",
    "remquo",
    "remquof",
    "rhypot",
    "rhypotf",
    "rint",
    "rintf",
    "rnorm",
    "rnormf",
    "rnorm3d",
    "rnorm3df",
    "rnorm4d",
    "rnorm4df",
    "round",
    "roundf",
    "rsqrt",
    "rsqrtf",
    "scalbln",
    "scalblnf",
    "scalbn",
    "scalbnf",
    "signbit",
    "sin",
    "sinf",
    "sincos",
    "sincosf",
    "sincospi",
    "sincospif",
    "sinh",
    "sinhf",
    "sinpi",
    "sinpif",
    "sqrt",
    "sqrtf",
    "tan",
    "tanf",
    "tanh",
    "tanhf",
    "tgamma",
    "tgammaf",
    "trunc",
    "truncf",
    "y0",
    "y0f",
    "y1",
    "y1f",
    "yn",
    "ynf",
    "abs",
    "labs",
    "llabs",
    "min",
    "max",
    "umin",
    "umax",
    "llmin",
    "llmax",
    "ullmin",
    "ullmax",
    "fmaf_rn",
    "fmaf_rz",
    "fmaf_ru",
    "fmaf_rd",
    "hexp",
    "hexp2",
    "hexp10",
    "hlog",
    "hlog2",
    "hlog10",
    "hsin",
    "hcos",
    "hsqrt",
    "hrsqrt",
    "hrcp",
    "hfloor",
    "hceil",
    "htrunc",
    "hrint",
    "h2exp",
    "h2log",
    "h2sin",
    "h2cos",
    "h2sqrt",
    // Intrinsics and builtin variables without a `__` prefix.
    "printf",
    "malloc",
    "free",
    "memcpy",
    "memset",
    "assert",
    "clock",
    "clock64",
    // Vector and builtin types.
    "char1",
    "char2",
    "char3",
    "char4",
    "uchar1",
    "uchar2",
    "uchar3",
    "uchar4",
    "short1",
    "short2",
    "short3",
    "short4",
    "ushort1",
    "ushort2",
    "ushort3",
    "ushort4",
    "int1",
    "int2",
    "int3",
    "int4",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "long1",
    "long2",
    "long3",
    "long4",
    "ulong1",
    "ulong2",
    "ulong3",
    "ulong4",
    "longlong1",
    "longlong2",
    "longlong3",
    "longlong4",
    "ulonglong1",
    "ulonglong2",
    "ulonglong3",
    "ulonglong4",
    "float1",
    "float2",
    "float3",
    "float4",
    "double1",
    "double2",
    "double3",
    "double4",
    "dim3",
    "half",
    "half2",
    "nv_bfloat16",
    "nv_bfloat162",
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
    "wchar_t",
    "nullptr_t",
    "texture",
    "surface",
    "std",
    "cuda",
    "nvcuda",
    "cooperative_groups",
    // Constructors of the vector types.
    "make_char1",
    "make_char2",
    "make_char3",
    "make_char4",
    "make_uchar2",
    "make_uchar4",
    "make_short2",
    "make_short4",
    "make_int1",
    "make_int2",
    "make_int3",
    "make_int4",
    "make_uint2",
    "make_uint3",
    "make_uint4",
    "make_long2",
    "make_longlong2",
    "make_float1",
    "make_float2",
    "make_float3",
    "make_float4",
    "make_double2",
    "make_double3",
    "make_double4",
    // cuRAND.
    "curand",
    "curand_init",
    "curand_uniform",
    "curand_uniform_double",
    "curand_normal",
    "curand_normal_double",
    "curand_normal2",
    "curand_normal2_double",
    "curand_normal4",
    "curand_uniform4",
    "curand_log_normal",
    "curand_log_normal_double",
    "curand_poisson",
    "curand_discrete",
    "curandstate",
    "curandstate_t",
    // Texture and surface objects (texture_indirect_functions.h, surface_indirect_functions.h).
    "cudatextureobject_t",
    "cudasurfaceobject_t",
    "tex1dfetch",
    "tex1d",
    "tex2d",
    "tex3d",
    "surf1dread",
    "surf2dread",
    "surf3dread",
    "surf1dwrite",
    "surf2dwrite",
    "surf3dwrite",
    "cudaboundarymodetrap",
    "cudaboundarymodeclamp",
    "cudaboundarymodezero",
    // The C library the headers declare.
    "random",
    "rand",
    "srand",
    "calloc",
    "realloc",
    "exit",
    "abort",
    "memmove",
    "memcmp",
    "strlen",
    "strcpy",
    "strcmp",
    "strncpy",
    "strncmp",
    "strcat",
    "atoi",
    "atof",
    "atol",
    "atoll",
    "strtol",
    "strtod",
    "qsort",
    "bsearch",
    "time",
    "div",
    "ldiv",
    "lldiv",
    "getenv",
    "system",
    "puts",
    "putchar",
    "fprintf",
    "sprintf",
    "snprintf",
    "scanf",
    "fopen",
    "fclose",
    "stdin",
    "stdout",
    "stderr",
    "errno",
    "offsetof",
    "va_start",
    "va_end",
    "va_arg",
    "va_list",
    "signal",
    "raise",
    "setjmp",
    "longjmp",
    "alloca",
    // Words C++ treats specially in some positions.
    "unsigned",
    "signed",
    "long",
    "nullptr",
    "extern",
    "register",
    "typeof",
];

impl Dialect for Cuda {
    fn name(&self) -> &'static str {
        "CUDA C"
    }

    fn reserved_words(&self) -> &'static [&'static str] {
        RESERVED
    }

    fn headers(&self) -> &'static [&'static str] {
        HEADERS
    }

    fn type_header(&self, ty: &Type) -> Option<&'static str> {
        match ty {
            Type::Scalar(ScalarType::Half) | Type::Vector(VectorType::Half2) => Some("cuda_fp16.h"),
            Type::Scalar(ScalarType::BFloat16) => Some("cuda_bf16.h"),
            Type::Scalar(ScalarType::Fp8) => Some("cuda_fp8.h"),
            Type::Scalar(ScalarType::Fp4) => Some("cuda_fp4.h"),
            Type::CurandStateXorwow => Some("curand_kernel.h"),
            _ => None,
        }
    }

    fn intrinsic_header(&self, intrinsic: &str) -> Option<&'static str> {
        intrinsic
            .starts_with("curand_")
            .then_some("curand_kernel.h")
    }

    fn type_name(&self, ty: &Type) -> Option<&'static str> {
        Some(match ty {
            Type::Void => "void",
            Type::Bool => "bool",
            Type::Scalar(s) => scalar_name(*s),
            Type::Vector(VectorType::Half2) => "__half2",
            Type::Vector(v) => v.name(),
            Type::CurandStateXorwow => "curandStateXORWOW_t",
            Type::TextureObject => "cudaTextureObject_t",
            Type::SurfaceObject => "cudaSurfaceObject_t",
            // Spelled by the printer with their helper definitions (`cfamily/hopper.rs`).
            Type::Pointer(_) | Type::Struct(_) | Type::TensorMap | Type::WgmmaAccumulator(_) => {
                return None;
            }
        })
    }

    fn vector_constructor(&self, vector: VectorType) -> Option<&'static str> {
        Some(vector_constructor(vector))
    }

    fn linkage(&self) -> &'static str {
        "extern \"C\" "
    }

    fn function_qualifier(&self, kind: FunctionKind) -> &'static str {
        match kind {
            FunctionKind::Kernel => "__global__ ",
            FunctionKind::Device => "__device__ ",
        }
    }

    fn global_qualifier(&self, qualifier: GlobalQualifier) -> Option<&'static str> {
        match qualifier {
            GlobalQualifier::Device => Some("__device__"),
            GlobalQualifier::Constant => Some("__constant__"),
            GlobalQualifier::Shared => Some("__shared__"),
            GlobalQualifier::Managed => Some("__managed__"),
            GlobalQualifier::Restrict => None,
        }
    }

    fn global_has_initializer(&self, qualifiers: &[GlobalQualifier]) -> bool {
        // CUDA forbids initializers on shared variables, and a shared variable has no symbol
        // the host could look up.
        !qualifiers.contains(&GlobalQualifier::Shared)
    }

    fn restrict(&self) -> &'static str {
        " __restrict__"
    }

    fn launch_bounds(&self, bounds: &LaunchBounds) -> Option<String> {
        let mut args = vec![bounds.max_threads.to_string()];
        if bounds.min_blocks.is_some() || bounds.max_cluster.is_some() {
            args.push(bounds.min_blocks.unwrap_or(0).to_string());
        }
        if let Some(c) = bounds.max_cluster {
            args.push(c.to_string());
        }
        Some(format!("__launch_bounds__({})", args.join(", ")))
    }

    fn index_variable(&self, var: IndexVar) -> Option<IndexSpelling> {
        let axis = |a: Axis| match a {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        };
        let text = match var {
            IndexVar::ThreadIdx(a) => format!("threadIdx.{}", axis(a)),
            IndexVar::BlockIdx(a) => format!("blockIdx.{}", axis(a)),
            IndexVar::BlockDim(a) => format!("blockDim.{}", axis(a)),
            IndexVar::GridDim(a) => format!("gridDim.{}", axis(a)),
            IndexVar::ClusterDim(a) => format!("__clusterDim().{}", axis(a)),
            IndexVar::ClusterIdx(a) => format!("__clusterIdx().{}", axis(a)),
            IndexVar::BlockInCluster(a) => format!("__clusterRelativeBlockIdx().{}", axis(a)),
            IndexVar::WarpSize => {
                return Some(IndexSpelling::Expr {
                    text: "warpSize".into(),
                    unsigned: false,
                });
            }
            IndexVar::LaneId => return Some(IndexSpelling::Helper(Helper::LaneId)),
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
        // 16-byte aligned, as dynamic shared memory is: `cp-async` of 16 bytes and
        // `ldmatrix` rows need it (PTX), and so do `uint4`/`float4` accesses into the array.
        Some(format!("__shared__ __align__(16) {element} {name}{dims};"))
    }

    fn dynamic_shared_array(&self, name: &str) -> Option<String> {
        Some(format!(
            "extern __shared__ __align__(16) unsigned char {name}[];"
        ))
    }

    fn call(&self, intrinsic: &str, args: &[&str]) -> Option<String> {
        Some(format!("{intrinsic}({})", args.join(", ")))
    }

    fn helper_definition(&self, helper: Helper, name: &str) -> Option<String> {
        Some(helper_definition(helper, name, self.warp_width()))
    }
}

/// The CUDA C spelling of a scalar type.
pub(super) fn scalar_name(s: ScalarType) -> &'static str {
    match s {
        ScalarType::Int8 => "signed char",
        ScalarType::UInt8 => "unsigned char",
        ScalarType::Int16 => "short",
        ScalarType::UInt16 => "unsigned short",
        ScalarType::Int => "int",
        ScalarType::UInt => "unsigned int",
        ScalarType::Int64 => "long long",
        ScalarType::UInt64 => "unsigned long long",
        ScalarType::SizeT => "size_t",
        ScalarType::Half => "__half",
        ScalarType::BFloat16 => "__nv_bfloat16",
        ScalarType::Fp8 => "__nv_fp8_e4m3",
        ScalarType::Fp4 => "__nv_fp4_e2m1",
        ScalarType::Float => "float",
        ScalarType::Double => "double",
    }
}

/// The constructor of a vector type (`make_float3`, `__halves2half2`).
pub(super) fn vector_constructor(vector: VectorType) -> &'static str {
    match vector {
        VectorType::Int2 => "make_int2",
        VectorType::Int4 => "make_int4",
        VectorType::UInt2 => "make_uint2",
        VectorType::UInt4 => "make_uint4",
        VectorType::Half2 => "__halves2half2",
        VectorType::Float2 => "make_float2",
        VectorType::Float3 => "make_float3",
        VectorType::Float4 => "make_float4",
        VectorType::Double2 => "make_double2",
        VectorType::Double3 => "make_double3",
        VectorType::Double4 => "make_double4",
    }
}

/// The CUDA C spelling of `1` in `element`.
fn one(element: ScalarType) -> &'static str {
    match element {
        ScalarType::Float => "1.0f",
        ScalarType::Double => "1.0",
        ScalarType::Half => "__float2half(1.0f)",
        ScalarType::UInt => "1u",
        _ => "1",
    }
}

/// The CUDA C definition of `helper`, named `name`, ending in a newline; `warp` is the warp
/// width (a power of two).
pub(super) fn helper_definition(helper: Helper, name: &str, warp: u32) -> String {
    const PREFIX: &str = "static __device__ __forceinline__";
    let mut out = String::new();
    let ty = |v: VectorType| match v {
        VectorType::Half2 => "__half2",
        other => other.name(),
    };
    match helper {
        Helper::VectorBinary(op, v, operands) => {
            let (element, make, ty) = (scalar_name(v.element()), vector_constructor(v), ty(v));
            let (params, left, right): (String, &str, &str) = match operands {
                Operands::VectorVector => (format!("{ty} a, {ty} b"), "a.", "b."),
                Operands::VectorScalar => (format!("{ty} a, {element} s"), "a.", "s"),
                Operands::ScalarVector => (format!("{element} s, {ty} b"), "s", "b."),
            };
            let components: Vec<String> = v
                .components()
                .iter()
                .map(|c| {
                    let l = if left.ends_with('.') {
                        format!("{left}{c}")
                    } else {
                        left.into()
                    };
                    let r = if right.ends_with('.') {
                        format!("{right}{c}")
                    } else {
                        right.into()
                    };
                    format!("({l} {} {r})", op.symbol())
                })
                .collect();
            let _ = write!(
                out,
                "{PREFIX} {ty} {name}({params})\n{{\n  return {make}({});\n}}\n",
                components.join(", ")
            );
        }
        Helper::VectorNeg(v) | Helper::VectorRecip(v) => {
            let (make, ty) = (vector_constructor(v), ty(v));
            let components: Vec<String> = v
                .components()
                .iter()
                .map(|c| match helper {
                    Helper::VectorNeg(_) => format!("-(a.{c})"),
                    _ => format!("({} / a.{c})", one(v.element())),
                })
                .collect();
            let _ = write!(
                out,
                "{PREFIX} {ty} {name}({ty} a)\n{{\n  return {make}({});\n}}\n",
                components.join(", ")
            );
        }
        Helper::VectorDot(v) => {
            let (element, ty) = (scalar_name(v.element()), ty(v));
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
        Helper::LaneId => {
            // Warps are formed from the linear thread index (x fastest), so this is the lane on
            // every block shape.
            let _ = write!(
                out,
                "{PREFIX} int {name}()\n{{\n  return (int)((threadIdx.x + (blockDim.x * (threadIdx.y + (blockDim.y * threadIdx.z)))) & {}u);\n}}\n",
                warp - 1
            );
        }
        Helper::FloorMod(s) => {
            // The truncating remainder, moved by one divisor when its sign differs from the
            // divisor's (Common Lisp's `mod`).
            let (ty, rem) = match s {
                ScalarType::Float => ("float", "fmodf(a, b)".to_string()),
                ScalarType::Double => ("double", "fmod(a, b)".to_string()),
                other => {
                    let ty = scalar_name(other);
                    (ty, format!("({ty})(a % b)"))
                }
            };
            let _ = write!(
                out,
                "{PREFIX} {ty} {name}({ty} a, {ty} b)\n{{\n  {ty} r = {rem};\n  return (r != 0 && ((r < 0) != (b < 0))) ? ({ty})(r + b) : r;\n}}\n"
            );
        }
        Helper::Tensor(op) => out.push_str(&super::tensor::cuda_definition(op, name, PREFIX)),
        Helper::Hopper(h) => out = super::hopper::definition(h, name),
        Helper::ClusterBarrier => {
            // What cooperative_groups::this_cluster().sync() does, without the header.
            let _ = write!(
                out,
                "{PREFIX} void {name}()\n{{\n  asm volatile(\"barrier.cluster.arrive;\\n\\tbarrier.cluster.wait;\" ::: \"memory\");\n}}\n"
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfamily::VectorOp;

    fn definition(helper: Helper) -> String {
        helper_definition(helper, &helper.name(), 32)
    }

    #[test]
    fn vector_helpers_are_component_wise() {
        let add = Helper::VectorBinary(VectorOp::Add, VectorType::Float3, Operands::VectorVector);
        assert_eq!(
            definition(add),
            "static __device__ __forceinline__ float3 chorus_float3_add(float3 a, float3 b)\n{\n  \
             return make_float3((a.x + b.x), (a.y + b.y), (a.z + b.z));\n}\n"
        );
        let scale =
            Helper::VectorBinary(VectorOp::Mul, VectorType::Double2, Operands::ScalarVector);
        assert_eq!(scale.name(), "chorus_scalar_mul_double2");
        assert!(definition(scale).contains("(double s, double2 b)"));
        assert!(definition(scale).contains("make_double2((s * b.x), (s * b.y))"));
        let dot = Helper::VectorDot(VectorType::Float4);
        assert!(
            definition(dot)
                .contains("return ((((a.x * b.x) + (a.y * b.y)) + (a.z * b.z)) + (a.w * b.w));")
        );
        assert!(definition(Helper::VectorRecip(VectorType::Int2)).contains("(1 / a.x)"));
        assert!(definition(Helper::LaneId).contains("& 31u);"));
    }

    #[test]
    fn reserved_words_are_lower_case() {
        for word in RESERVED {
            assert_eq!(*word, word.to_ascii_lowercase());
        }
    }
}
