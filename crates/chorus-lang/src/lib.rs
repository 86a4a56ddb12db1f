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
//! * [`source`]: the kernel definitions of a whole CL-Cuda or Chorus source file, its host code
//!   skipped.
//! * [`expand`]: the macro expander and the macro-time Lisp it runs macros with.
//! * [`error`]: the one error type of the front end; every error names a [`span::Span`].
//! * [`types`]: the kernel types, their sizes and alignments.
//! * [`host`]: Rust types whose layout matches the kernel types (`Float4` is 16-byte aligned, as in CUDA).
//! * [`ir`]: the typed intermediate representation every back end consumes.
//! * [`cfamily`]: the C-family printer, its [`cfamily::Dialect`] trait and namer.
//! * [`cuda`]: the CUDA C dialect in one call ([`cuda::print_module`]).
//! * [`check`]: the type checker, from expanded forms to [`ir::Module`], and the validator
//!   ([`check::validate`]) that checks a module against a [`target::Target`].
//! * [`target`]: what each target (CUDA, HIP, Metal, the CPU executor) can run, its limits and
//!   its host layouts.

pub mod cfamily;
pub mod check;
pub mod cuda;
pub mod error;
pub mod expand;
pub mod form;
pub mod host;
pub mod ir;
pub mod library;
pub mod reader;
pub mod source;
pub mod span;
pub mod stack;
pub mod target;
pub mod types;

pub use error::{Error, Result};
pub use expand::{Expander, expand_str};
pub use form::{Form, FormKind};
pub use reader::{read_one, read_str};
pub use span::Span;
pub use types::Type;

/// Compiles the top-level forms of one compilation unit to its typed IR for `target`: expands
/// its macros with a fresh [`Expander`] ([`Expander::expand_unit`]), checks the result
/// ([`check::check_module`]), then validates it for `target` ([`check::validate`]): a feature
/// the target lacks or a limit it exceeds is an error at its span.
pub fn compile_forms_for(forms: &[Form], target: &target::Target) -> Result<ir::Module> {
    let expanded = Expander::new().expand_unit(forms)?;
    check_expanded(expanded, target)
}

/// Checks and validates expanded forms, dropping them before validation (memory: the forms
/// and the IR are each many times the size of the text).
fn check_expanded(expanded: Vec<Form>, target: &target::Target) -> Result<ir::Module> {
    let module = check::check_module(&expanded)?;
    drop(expanded);
    check::validate(&module, target)?;
    Ok(module)
}

/// Reads kernel text (`file` names it in spans and messages) and compiles it for `target` with
/// [`compile_forms_for`].
pub fn compile_str_for(text: &str, file: &str, target: &target::Target) -> Result<ir::Module> {
    compile_str_with(&mut Expander::new(), text, file, target)
}

/// [`compile_str_for`] with the macros of `expander` (for example the shipped libraries of
/// [`library::expander_with`]) defined before the text's own.
pub fn compile_str_with(
    expander: &mut Expander,
    text: &str,
    file: &str,
    target: &target::Target,
) -> Result<ir::Module> {
    // Each form as read is dropped once expanded, and each expanded function once checked:
    // the text's forms, their expansion and the IR never all coexist.
    let expanded = expander.expand_unit_owned(read_str(text, file)?)?;
    let module = check::check_module_owned(expanded)?;
    check::validate(&module, target)?;
    Ok(module)
}

/// [`compile_forms_for`] the default CUDA target ([`target::Target::default_cuda`], sm_90),
/// which has every feature of the language: so this checks the language and the limits of a
/// CUDA device (48 KiB of static shared memory, 32 764 bytes of kernel parameters, 1024
/// threads per block). For a module only another target can run (a HIP kernel with 64 KiB of
/// static shared memory), use [`compile_forms_for`]; for the language alone, with no target,
/// [`check::check_module`] after [`Expander::expand_unit`].
pub fn compile_forms(forms: &[Form]) -> Result<ir::Module> {
    compile_forms_for(forms, &target::Target::default_cuda())
}

/// Reads kernel text (`file` names it in spans and messages) and compiles it with
/// [`compile_forms`] (for the default CUDA target).
pub fn compile_str(text: &str, file: &str) -> Result<ir::Module> {
    compile_str_for(text, file, &target::Target::default_cuda())
}

/// Compiles the kernel definitions of a whole source file (a CL-Cuda or Chorus Lisp file with
/// its host code: see [`source`]) for `target`; returns the module and the host forms that were
/// skipped. `file` names the text in spans and messages.
pub fn compile_source_for(
    text: &str,
    file: &str,
    target: &target::Target,
) -> Result<(ir::Module, Vec<source::Skipped>)> {
    compile_source_with(&mut Expander::new(), text, file, target)
}

/// [`compile_source_for`] with the macros of `expander` (for example the shipped libraries of
/// [`library::expander_with`]) defined before the file's own.
pub fn compile_source_with(
    expander: &mut Expander,
    text: &str,
    file: &str,
    target: &target::Target,
) -> Result<(ir::Module, Vec<source::Skipped>)> {
    let source::Source { forms, skipped } = source::read_source(text, file)?;
    let expanded = expander.expand_unit(&forms)?;
    drop(forms);
    Ok((check_expanded(expanded, target)?, skipped))
}

/// [`compile_source_for`] the default CUDA target ([`target::Target::default_cuda`]).
pub fn compile_source(text: &str, file: &str) -> Result<(ir::Module, Vec<source::Skipped>)> {
    compile_source_for(text, file, &target::Target::default_cuda())
}
