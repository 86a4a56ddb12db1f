//! Kernel-macro libraries shipped with Chorus: kernel text whose macros a unit may use. Define
//! them in the unit's expander with [`expander_with`] (so the unit's spans stay its own; the
//! facade's `Program::with_libraries`, `chorus compile -l NAME`), or, for a quick experiment,
//! put the text before the unit's own:
//!
//! ```
//! let unit = format!(
//!     "{}\n(defkernel k (void ((out float4*)))\n  (tc-with-accumulators (acc 1 2)\n    (set (aref out 0) acc-0-1)))",
//!     chorus_lang::library::TENSOR_CORE
//! );
//! assert!(chorus_lang::compile_str(&unit, "k.lisp").is_ok());
//! ```

/// The tensor-core macros (`lib/tensor-core.lisp`): `tc-unroll`, `tc-with-accumulators`,
/// `tc-bind-each`, `tc-mma-grid`, `tc-for-each-accumulator`, `tc-swizzle`, `tc-pipeline` (an
/// N-stage `cp-async` main loop), `tc-pipeline-fragments` (the same with fragments
/// double-buffered in registers) and its `tc-with-fragment-sets`, `tc-fetch-set`, `tc-fold-set`,
/// `tc-mma-set` and `tc-b-half`, and `tc-store-bf16` (an accumulator's epilogue), over the
/// built-ins of [`crate::ir::tensor`]. The manual's built-ins chapter documents them;
/// `examples/kernels/hgemm.lisp` is a BF16 GEMM written with them.
pub const TENSOR_CORE: &str = include_str!("../lib/tensor-core.lisp");

/// A kernel-macro library shipped with Chorus, to define before a unit's own macros without
/// joining the texts (which would shift the unit's line numbers): [`expander_with`],
/// `chorus compile --library NAME`, `chorus::Program::with_libraries`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Library {
    /// [`TENSOR_CORE`], `tensor-core`.
    TensorCore,
}

impl Library {
    /// Every library.
    pub const ALL: [Library; 1] = [Library::TensorCore];

    /// Its name (`tensor-core`).
    pub fn name(self) -> &'static str {
        match self {
            Library::TensorCore => "tensor-core",
        }
    }

    /// Its kernel text.
    pub fn text(self) -> &'static str {
        match self {
            Library::TensorCore => TENSOR_CORE,
        }
    }

    /// The file name its spans carry (`chorus:lib/tensor-core.lisp`): errors and expansions of
    /// its macros name the library's own lines, not the user's file.
    pub fn file_name(self) -> String {
        format!("chorus:lib/{}.lisp", self.name())
    }

    /// The library called `name`; the error lists the names there are.
    pub fn from_name(name: &str) -> Result<Library, String> {
        Library::ALL
            .into_iter()
            .find(|l| l.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Library::ALL.iter().map(|l| l.name()).collect();
                format!(
                    "no library called `{name}` (the libraries are: {})",
                    known.join(", ")
                )
            })
    }
}

/// An [`Expander`](crate::Expander) with the macros of `libraries` defined, each read as its own
/// file ([`Library::file_name`]).
///
/// ```
/// use chorus_lang::library::{Library, expander_with};
///
/// let mut expander = expander_with(&[Library::TensorCore]).unwrap();
/// assert!(expander.is_macro("tc-unroll"));
/// let forms = chorus_lang::read_str("(defkernel k (void ((a float*))) (tc-unroll (i 0 2) (set (aref a i) 1.0)))", "k.lisp").unwrap();
/// assert_eq!(expander.expand_unit(&forms).unwrap().len(), 1);
/// ```
pub fn expander_with(libraries: &[Library]) -> crate::Result<crate::Expander> {
    let mut expander = crate::Expander::new();
    for library in libraries {
        let forms = crate::read_str(library.text(), &library.file_name())?;
        // Only definitions: the unit's result is empty, its macros stay defined.
        expander.expand_unit(&forms)?;
    }
    Ok(expander)
}
