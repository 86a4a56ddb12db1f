//! The kernel-language front end and CUDA C printer this crate drives (chorus-lang's), named in
//! one place.

// With `#line` directives: compiler diagnostics name the kernel text's lines.
pub(crate) use chorus_lang::cuda::print_module_for_compiler as print_module;
pub(crate) use chorus_lang::{compile_forms, compile_str};
