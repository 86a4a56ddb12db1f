//! Identifiers for the C family: legal, collision-free and readable.
//!
//! The IR keeps kernel-language names; a printer names everything it emits with a [`Namer`]
//! made from its dialect's reserved words. The mapping, from kernel-language name to identifier:
//! * a gensym (`#:g12`) loses the `#:` (`g12`);
//! * ASCII letters are lower-cased, digits kept, `*` becomes `_p`, every other ASCII character
//!   `_` (`vec-add-kernel` → `vec_add_kernel`, `%foo` → `_foo`, `a*` → `a_p`); a character
//!   outside ASCII becomes `_u` and its code point in hex (`λ` → `_u3bb`), so distinct names
//!   stay distinct and readable;
//! * a leading digit gets a `_` prefix; a name starting with `__` (reserved to the
//!   implementation: `__syncthreads`) or with the printers' own `chorus_` prefix gets a `v`
//!   (`v__syncthreads`, `v_chorus_tmp`);
//! * a C or C++ keyword or alternative token, or one of a few names C code cannot take apart
//!   from its type (`half`, `float4`), gets a `_` suffix (`int` → `int_`, `and` → `and_`);
//! * the dialect's reserved words (its intrinsics, builtin types, device math and C library, such
//!   as `norm`, `sin`, `dim3`) and names already handed out in the scope get `_1`, `_2` …
//!   appended (`norm` → `norm_1`, the second `x` of a function → `x_1`).
//!
//! Functions, globals and structures share the module's namespace; locals are unique within
//! their function and never equal to a module-level name; fields are unique within their
//! structure. Naming is linear: a function's scope refers to the module's names instead of
//! copying them, and the next suffix to try for each base name is remembered, so `n` locals
//! named `x` cost O(n), not O(n²).

use crate::reader::GENSYM_PREFIX;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// The prefix of every helper function and variable the printers invent (`chorus_float3_add`,
/// `chorus_dyn_smem`): no name from kernel text may start with it.
pub const HELPER_PREFIX: &str = "chorus_";

/// C and C++ keywords and alternative tokens, and type names that would make a declaration
/// ambiguous, in every dialect: such a name gets a `_` suffix.
pub const C_KEYWORDS: &[&str] = &[
    // C.
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    // C++ keywords.
    "alignas",
    "alignof",
    "asm",
    "bool",
    "catch",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "concept",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "false",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "nullptr",
    "operator",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_assert",
    "static_cast",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    // C++ identifiers with special meaning, and the alternative tokens.
    "final",
    "override",
    "import",
    "module",
    "and",
    "and_eq",
    "bitand",
    "bitor",
    "compl",
    "not",
    "not_eq",
    "or",
    "or_eq",
    "xor",
    "xor_eq",
    // Names Chorus has always suffixed with `_`.
    "half",
    "half2",
    "main",
    "min",
    "max",
    "abs",
    "printf",
    "float2",
    "float3",
    "float4",
    "double2",
    "double3",
    "double4",
    "int2",
    "int4",
    "uint2",
    "uint4",
    "size_t",
];

/// A kernel-language name as a legal C identifier, before uniqueness (see the
/// [module documentation](self)). `keywords` are the words that get a `_` suffix.
pub fn legal_identifier(name: &str, keywords: &HashSet<&'static str>) -> String {
    let name = name.strip_prefix(GENSYM_PREFIX).unwrap_or(name);
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            c if c.is_ascii_alphanumeric() => out.push(c.to_ascii_lowercase()),
            '*' => out.push_str("_p"),
            c if c.is_ascii() => out.push('_'),
            c => {
                let _ = write!(out, "_u{:x}", u32::from(c));
            }
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if out.starts_with("__") {
        out.insert(0, 'v');
    } else if out.starts_with(HELPER_PREFIX) {
        out.insert_str(0, "v_");
    }
    if keywords.contains(out.as_str()) {
        out.push('_');
    }
    out
}

/// One scope's names: those handed out, and the next numeric suffix to try for each base.
#[derive(Clone, Debug, Default)]
struct Scope {
    used: HashSet<String>,
    next_suffix: HashMap<String, u32>,
}

impl Scope {
    fn clear(&mut self) {
        self.used.clear();
        self.next_suffix.clear();
    }
}

/// Hands out identifiers for one printed module: module-level names, then each function's
/// locals in turn, then each structure's fields (see the [module documentation](self)).
#[derive(Clone, Debug)]
pub struct Namer {
    /// Words that get a `_` suffix.
    keywords: HashSet<&'static str>,
    /// Words that are taken in every scope but fields (the dialect's).
    reserved: HashSet<&'static str>,
    module: Scope,
    function: Scope,
    fields: Scope,
}

impl Namer {
    /// A namer that treats [`C_KEYWORDS`] as keywords and `reserved` (a dialect's intrinsics,
    /// types and library) as taken.
    pub fn new(reserved: &[&'static str]) -> Namer {
        Namer {
            keywords: C_KEYWORDS.iter().copied().collect(),
            reserved: reserved.iter().copied().collect(),
            module: Scope::default(),
            function: Scope::default(),
            fields: Scope::default(),
        }
    }

    /// A fresh module-level name (structure, global or function) for `name`.
    pub fn module_name(&mut self, name: &str) -> String {
        let base = legal_identifier(name, &self.keywords);
        let (reserved, module) = (&self.reserved, &mut self.module);
        fresh(&base, module, |n| reserved.contains(n))
    }

    /// Starts naming the locals of another function: the previous function's are forgotten.
    pub fn begin_function(&mut self) {
        self.function.clear();
    }

    /// A fresh name for a local of the current function.
    pub fn local_name(&mut self, name: &str) -> String {
        let base = legal_identifier(name, &self.keywords);
        self.fresh_local(&base)
    }

    /// A fresh local name for a printer's temporary made from `base` (an identifier already):
    /// `base`, else `base_`, `base__` …, as the CUDA printer has always named them.
    pub fn temporary(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        while self.local_taken(&name) {
            name.push('_');
        }
        self.function.used.insert(name.clone());
        name
    }

    /// Starts naming the fields of another structure.
    pub fn begin_struct(&mut self) {
        self.fields.clear();
    }

    /// A fresh name for a field of the current structure. Fields live in their structure's
    /// namespace, so only keywords and the other fields are avoided.
    pub fn field_name(&mut self, name: &str) -> String {
        let base = legal_identifier(name, &self.keywords);
        fresh(&base, &mut self.fields, |_| false)
    }

    fn local_taken(&self, name: &str) -> bool {
        self.function.used.contains(name)
            || self.module.used.contains(name)
            || self.reserved.contains(name)
    }

    fn fresh_local(&mut self, base: &str) -> String {
        if !self.local_taken(base) {
            self.function.used.insert(base.to_string());
            return base.to_string();
        }
        // Suffixes below the module's next one for this base are taken at module level.
        let start = self
            .function
            .next_suffix
            .get(base)
            .or_else(|| self.module.next_suffix.get(base))
            .copied()
            .unwrap_or(1);
        let mut n = start;
        let mut candidate = format!("{base}_{n}");
        while self.local_taken(&candidate) {
            n += 1;
            candidate = format!("{base}_{n}");
        }
        self.function.next_suffix.insert(base.to_string(), n + 1);
        self.function.used.insert(candidate.clone());
        candidate
    }
}

/// `base` if free in `scope`, else the first free `base_N` (N from the scope's memory of
/// `base`), marked as used.
fn fresh(base: &str, scope: &mut Scope, reserved: impl Fn(&str) -> bool) -> String {
    let taken = |scope: &Scope, n: &str| scope.used.contains(n) || reserved(n);
    if !taken(scope, base) {
        scope.used.insert(base.to_string());
        return base.to_string();
    }
    let mut n = scope.next_suffix.get(base).copied().unwrap_or(1);
    let mut candidate = format!("{base}_{n}");
    while taken(scope, &candidate) {
        n += 1;
        candidate = format!("{base}_{n}");
    }
    scope.next_suffix.insert(base.to_string(), n + 1);
    scope.used.insert(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legal(name: &str) -> String {
        legal_identifier(name, &C_KEYWORDS.iter().copied().collect())
    }

    #[test]
    fn identifiers_are_legal_and_readable() {
        assert_eq!(legal("vec-add-kernel"), "vec_add_kernel");
        assert_eq!(legal("%foo"), "_foo");
        assert_eq!(legal("VecAdd_kernel"), "vecadd_kernel");
        assert_eq!(legal("int"), "int_");
        assert_eq!(legal("constexpr"), "constexpr_");
        assert_eq!(legal("and"), "and_");
        assert_eq!(legal("1x"), "_1x");
        assert_eq!(legal("a*"), "a_p");
        assert_eq!(legal("#:g12"), "g12");
        assert_eq!(legal("__syncthreads"), "v__syncthreads");
        assert_eq!(legal("chorus-tmp"), "v_chorus_tmp");
        assert_eq!(legal("λ"), "_u3bb");
        assert_eq!(legal("café"), "caf_ue9");
        assert_ne!(legal("é"), legal("è"));
    }

    #[test]
    fn names_are_unique_in_their_scope() {
        let mut namer = Namer::new(&["sin", "random", "norm"]);
        assert_eq!(namer.module_name("vec-add"), "vec_add");
        assert_eq!(namer.module_name("vec_add"), "vec_add_1");
        assert_eq!(namer.module_name("random"), "random_1");
        assert_eq!(namer.module_name("norm"), "norm_1");
        namer.begin_function();
        assert_eq!(namer.local_name("x"), "x");
        assert_eq!(namer.local_name("x"), "x_1");
        assert_eq!(namer.local_name("#:g12"), "g12");
        assert_eq!(namer.local_name("vec-add"), "vec_add_2");
        assert_eq!(namer.local_name("sin"), "sin_1");
        assert_eq!(namer.local_name("float"), "float_");
        assert_eq!(namer.temporary("x_next"), "x_next");
        assert_eq!(namer.temporary("x_next"), "x_next_");
        namer.begin_function();
        assert_eq!(namer.local_name("x"), "x");
        namer.begin_struct();
        assert_eq!(namer.field_name("sin"), "sin");
        assert_eq!(namer.field_name("x"), "x");
        assert_eq!(namer.field_name("x"), "x_1");
    }

    #[test]
    fn many_equal_names_are_named_in_linear_time() {
        // With a probe from `_1` each time this would take 50 000² / 2 set lookups.
        let mut namer = Namer::new(&[]);
        namer.begin_function();
        for i in 0..50_000 {
            let name = namer.local_name("x");
            if i > 0 {
                assert_eq!(name, format!("x_{i}"));
            }
        }
    }
}
