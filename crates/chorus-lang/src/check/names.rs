//! C names for the things a module defines.
//!
//! The mapping, from kernel-language name to C identifier:
//! * Every name goes through [`c_identifier`]: lower case, `-` and other punctuation become `_`
//!   (`vec-add-kernel` → `vec_add_kernel`, `%foo` → `_foo`), C/CUDA keywords get a `_` suffix
//!   (`int` → `int_`). There is **no package prefix** (cl-cuda's `pkg_name_` is gone): a module
//!   is its own compilation unit, so the names the host looks up (`cuModuleGetFunction`,
//!   `cuModuleGetGlobal`) are the plain C names.
//! * Gensyms made by the macro expander (`#:g12`) lose the `#:` and read as `g12`.
//! * Functions, globals and structures share one namespace and are unique in the module, in
//!   definition order: structures first, then globals, then functions. When two names map to
//!   the same identifier (`a-b` and `a_b`), the later one gets `_1`, `_2` … appended.
//! * Locals and parameters are unique within their function (never shadowing one another, so
//!   a nested `(let ((x …)) …)` declares `x_1`), never equal to a module-level name, to a C math
//!   function or CUDA intrinsic the back ends call, nor start with `chorus_` (reserved for the
//!   printers' helper functions).
//! * Structure fields are unique within their structure.

use crate::ir::c_identifier;
use crate::reader::GENSYM_PREFIX;
use std::collections::HashSet;
use std::sync::LazyLock;

/// Identifiers the C back end calls by name, which a local must not shadow.
const CALLED_BY_BACK_ENDS: &[&str] = &[
    "exp",
    "expf",
    "exp2",
    "exp2f",
    "expm1",
    "expm1f",
    "log",
    "logf",
    "log2",
    "log2f",
    "log10",
    "log10f",
    "log1p",
    "log1pf",
    "sin",
    "sinf",
    "cos",
    "cosf",
    "tan",
    "tanf",
    "asin",
    "asinf",
    "acos",
    "acosf",
    "atan",
    "atanf",
    "atan2",
    "atan2f",
    "sinh",
    "sinhf",
    "cosh",
    "coshf",
    "tanh",
    "tanhf",
    "sqrt",
    "sqrtf",
    "rsqrt",
    "rsqrtf",
    "cbrt",
    "cbrtf",
    "pow",
    "powf",
    "hypot",
    "hypotf",
    "floor",
    "floorf",
    "ceil",
    "ceilf",
    "round",
    "roundf",
    "trunc",
    "truncf",
    "erf",
    "erff",
    "erfc",
    "erfcf",
    "fma",
    "fmaf",
    "fmod",
    "fmodf",
    "fmin",
    "fminf",
    "fmax",
    "fmaxf",
    "fabs",
    "fabsf",
    "llabs",
    "curand_init",
    "curand_uniform",
    "curand_uniform_double",
    "curand_normal",
    "curand_normal_double",
    "make_int2",
    "make_int4",
    "make_uint2",
    "make_uint4",
    "make_float2",
    "make_float3",
    "make_float4",
    "make_double2",
    "make_double3",
    "make_double4",
    "unsigned",
    "signed",
    "long",
    "nullptr",
    "extern",
    "__shared__",
];

/// C library functions that headers a module may include declare (`stdlib.h` comes in through
/// `curand_kernel.h`): a kernel or global of that name would clash with them in C.
const C_LIBRARY: &[&str] = &[
    "random",
    "rand",
    "srand",
    "malloc",
    "free",
    "calloc",
    "realloc",
    "exit",
    "abort",
    "assert",
    "memcpy",
    "memset",
    "memmove",
    "memcmp",
    "strlen",
    "strcpy",
    "strcmp",
    "atoi",
    "atof",
    "qsort",
    "clock",
    "clock64",
    "time",
    "abs",
    "labs",
    "div",
    "ldiv",
    "signbit",
    "isnan",
    "isinf",
    "isfinite",
    "ldexp",
    "frexp",
    "modf",
    "nan",
    "copysign",
    "remainder",
    "rint",
    "lrint",
    "lround",
    "exp10",
    "logb",
    "lgamma",
    "tgamma",
    "erfinv",
    "erfcinv",
    "sincos",
];

/// A set of C identifiers in use, handing out fresh ones.
#[derive(Clone, Debug, Default)]
pub struct Namer {
    /// The names handed out (and, for a namer of locals, the module's).
    used: HashSet<String>,
    /// The fixed names that are taken too: kept apart so that a namer is cheap to make.
    reserved: Reserved,
}

/// Which of the fixed name lists a [`Namer`] treats as taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Reserved {
    #[default]
    Nothing,
    /// [`CALLED_BY_BACK_ENDS`].
    BackEnds,
    /// [`CALLED_BY_BACK_ENDS`] and [`C_LIBRARY`].
    BackEndsAndCLibrary,
}

impl Reserved {
    /// Whether `name` is on one of the lists.
    fn contains(self, name: &str) -> bool {
        static BACK_ENDS: LazyLock<HashSet<&str>> =
            LazyLock::new(|| CALLED_BY_BACK_ENDS.iter().copied().collect());
        static LIBRARY: LazyLock<HashSet<&str>> =
            LazyLock::new(|| C_LIBRARY.iter().copied().collect());
        match self {
            Reserved::Nothing => false,
            Reserved::BackEnds => BACK_ENDS.contains(name),
            Reserved::BackEndsAndCLibrary => BACK_ENDS.contains(name) || LIBRARY.contains(name),
        }
    }
}

impl Namer {
    /// A namer for module-level names (structures, globals, functions): the C functions the
    /// back ends call and the C library's functions are taken, so a kernel named `random` or
    /// `sin` gets `random_1` / `sin_1` instead of failing in the CUDA compiler.
    pub fn for_module() -> Namer {
        Namer {
            used: HashSet::new(),
            reserved: Reserved::BackEndsAndCLibrary,
        }
    }

    /// A namer for the locals of one function: module-level names are already taken.
    pub fn for_locals(module_names: &Namer) -> Namer {
        let reserved = match module_names.reserved {
            Reserved::BackEndsAndCLibrary => Reserved::BackEndsAndCLibrary,
            Reserved::Nothing | Reserved::BackEnds => Reserved::BackEnds,
        };
        Namer {
            used: module_names.used.clone(),
            reserved,
        }
    }

    /// Whether `name` is taken.
    fn is_taken(&self, name: &str) -> bool {
        self.used.contains(name) || self.reserved.contains(name)
    }

    /// A fresh, readable C identifier for the kernel-language name `name`, marked as used.
    pub fn fresh(&mut self, name: &str) -> String {
        let mut base = c_identifier(name.strip_prefix(GENSYM_PREFIX).unwrap_or(name));
        if base.starts_with("chorus_") {
            base.insert_str(0, "v_");
        }
        let mut candidate = base.clone();
        let mut n = 0;
        while self.is_taken(&candidate) {
            n += 1;
            candidate = format!("{base}_{n}");
        }
        self.used.insert(candidate.clone());
        candidate
    }
}

/// The kernel-language name as users should read it in messages (`#:g12` → `g12`).
pub fn display_name(name: &str) -> &str {
    name.strip_prefix(GENSYM_PREFIX).unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_names_are_unique_and_readable() {
        let mut module = Namer::default();
        assert_eq!(module.fresh("vec-add"), "vec_add");
        assert_eq!(module.fresh("vec_add"), "vec_add_1");
        let mut locals = Namer::for_locals(&module);
        assert_eq!(locals.fresh("x"), "x");
        assert_eq!(locals.fresh("x"), "x_1");
        assert_eq!(locals.fresh("#:g12"), "g12");
        assert_eq!(locals.fresh("vec-add"), "vec_add_2");
        assert_eq!(locals.fresh("sin"), "sin_1");
        assert_eq!(locals.fresh("chorus-tmp"), "v_chorus_tmp");
        assert_eq!(locals.fresh("float"), "float_");
        let mut module = Namer::for_module();
        assert_eq!(module.fresh("random"), "random_1");
        assert_eq!(module.fresh("sin"), "sin_1");
        assert_eq!(module.fresh("vec-add"), "vec_add");
    }
}
