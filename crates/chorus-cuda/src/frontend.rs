//! The kernel-language front end and CUDA C printer this crate drives (chorus-lang's), named in
//! one place.

pub(crate) use chorus_lang::cuda::print_module;
pub(crate) use chorus_lang::{compile_forms, compile_str};
