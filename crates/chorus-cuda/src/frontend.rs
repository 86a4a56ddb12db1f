//! The kernel-language front end and CUDA C printer this crate drives (chorus-lang's), named in
//! one place.

// With `#line` directives: compiler diagnostics name the kernel text's lines.
pub(crate) use chorus_lang::cuda::print_module_for_compiler as print_module;
pub(crate) use chorus_lang::{compile_forms, compile_str};

/// Validates `module` against a CUDA device of compute capability `arch` (see
/// [`chorus_lang::target::Target::cuda`]), so that a feature the device lacks or a limit it
/// exceeds is an error at its span rather than the CUDA compiler's. With no device known
/// (`None`) nothing is checked here: compiling already validated for the default CUDA target.
pub(crate) fn validate_for_arch(
    module: &chorus_lang::ir::Module,
    arch: Option<(u32, u32)>,
) -> chorus_lang::Result<()> {
    match arch {
        Some((major, minor)) => {
            chorus_lang::check::validate(module, &chorus_lang::target::Target::cuda(major, minor))
        }
        None => Ok(()),
    }
}
