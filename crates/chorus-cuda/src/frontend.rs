//! The kernel-language front end and CUDA C printer this crate drives (chorus-lang's), named in
//! one place.

use chorus_lang::cfamily::{PrintOptions, PrintedModule, print_for_target};
use chorus_lang::target::Target;

pub(crate) use chorus_lang::{compile_forms, compile_str};

/// Validates `module` for a CUDA device of compute capability `arch` (the default CUDA target
/// when no device is known: compiling already validated for it) and prints it as CUDA C, with
/// `#line` directives so that compiler diagnostics name the kernel text's lines. A feature the
/// device lacks or a limit it exceeds is an error at its span rather than the CUDA compiler's.
pub(crate) fn print_for_arch(
    module: &chorus_lang::ir::Module,
    arch: Option<(u32, u32)>,
) -> chorus_lang::Result<PrintedModule> {
    let target = match arch {
        Some((major, minor)) => Target::cuda(major, minor),
        None => Target::default_cuda(),
    };
    let options = PrintOptions {
        line_directives: true,
    };
    print_for_target(module, &target, &options)
}
