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
