//! Kernel-macro libraries shipped with Chorus, as kernel text to put before a unit's own.
//!
//! ```
//! let unit = format!(
//!     "{}\n(defkernel k (void ((out float4*)))\n  (tc-with-accumulators (acc 1 2)\n    (set (aref out 0) acc-0-1)))",
//!     chorus_lang::library::TENSOR_CORE
//! );
//! assert!(chorus_lang::compile_str(&unit, "k.lisp").is_ok());
//! ```

/// The tensor-core macros (`lib/tensor-core.lisp`): `tc-unroll`, `tc-with-accumulators`,
/// `tc-bind-each`, `tc-mma-grid`, `tc-for-each-accumulator`, `tc-swizzle` and `tc-pipeline`
/// (an N-stage `cp-async` main loop), over the built-ins of [`crate::ir::tensor`]. The manual's
/// built-ins chapter documents them; `examples/kernels/hgemm.lisp` is a BF16 GEMM written
/// with them.
pub const TENSOR_CORE: &str = include_str!("../lib/tensor-core.lisp");

/// The shipped libraries by name, as `chorus compile --library NAME` takes them: name, text.
pub const LIBRARIES: [(&str, &str); 1] = [("tensor-core", TENSOR_CORE)];

/// The library called `name` (see [`LIBRARIES`]).
pub fn by_name(name: &str) -> Option<&'static str> {
    LIBRARIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, text)| text)
}

/// The file name a library's spans carry (`chorus:lib/tensor-core.lisp`): errors and expansions
/// of its macros name the library's own lines, not the user's file.
pub fn file_name(name: &str) -> String {
    format!("chorus:lib/{name}.lisp")
}

/// An [`Expander`](crate::Expander) with the macros of the libraries called `names` defined,
/// each read as its own file (see [`file_name`]); the name that is no library is the error.
pub fn expander_with(names: &[&str]) -> Result<crate::Expander, String> {
    let mut expander = crate::Expander::new();
    for &name in names {
        let Some(text) = by_name(name) else {
            let known: Vec<&str> = LIBRARIES.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "no library called `{name}` (the libraries are: {})",
                known.join(", ")
            ));
        };
        let forms = crate::read_str(text, &file_name(name)).map_err(|e| e.to_string())?;
        // Only definitions: the unit's result is empty, its macros stay defined.
        expander.expand_unit(&forms).map_err(|e| e.to_string())?;
    }
    Ok(expander)
}
