//! The Chorus kernel language.
//!
//! Data flows one way (see `ARCHITECTURE.md` at the workspace root):
//!
//! ```text
//! text ──reader──> Form ──expander──> Form ──checker──> ir::Module ──C-family printer──> CUDA C
//! ```
//!
//! * [`span`] and [`form`]: S-expressions that remember where they came from.
//! * [`reader`]: kernel text to forms.
//! * [`expand`]: the macro expander and the macro-time Lisp it runs macros with.
//! * [`error`]: the one error type of the front end; every error names a [`span::Span`].
//! * [`types`]: the kernel types, their sizes and alignments.
//! * [`host`]: Rust types whose layout matches the kernel types (`Float4` is 16-byte aligned, as in CUDA).
//! * [`ir`]: the typed intermediate representation every back end consumes.
//! * [`cfamily`]: the C-family printer, its [`cfamily::Dialect`] trait and namer.
//! * [`cuda`]: the CUDA C dialect in one call ([`cuda::print_module`]).
//! * [`check`]: the type checker, from expanded forms to [`ir::Module`].

pub mod cfamily;
pub mod check;
pub mod cuda;
pub mod error;
pub mod expand;
pub mod form;
pub mod host;
pub mod ir;
pub mod reader;
pub mod span;
mod stack;
pub mod types;

pub use error::{Error, Result};
pub use expand::{Expander, expand_str};
pub use form::{Form, FormKind};
pub use reader::{read_one, read_str};
pub use span::Span;
pub use types::Type;

/// Compiles the top-level forms of one compilation unit to its typed IR: expands its macros
/// with a fresh [`Expander`] ([`Expander::expand_unit`]), then checks the result
/// ([`check::check_module`]).
pub fn compile_forms(forms: &[Form]) -> Result<ir::Module> {
    let expanded = Expander::new().expand_unit(forms)?;
    check::check_module(&expanded)
}

/// Reads kernel text (`file` names it in spans and messages) and compiles it with
/// [`compile_forms`].
pub fn compile_str(text: &str, file: &str) -> Result<ir::Module> {
    compile_forms(&read_str(text, file)?)
}
