//! CUDA C in one call: the C-family printer ([`crate::cfamily`]) with the CUDA dialect
//! ([`Cuda`], which documents the output).

use crate::cfamily::{self, PrintOptions, PrintedModule};
use crate::error::Result;
use crate::ir;

pub use crate::cfamily::cuda::{Cuda, HEADERS, RESERVED};

/// Prints `module` as one CUDA C file, with its headers and the names of its kernels, device
/// functions and globals. An error names the form CUDA C cannot express, or an expression nested
/// too deeply to print.
pub fn print_module(module: &ir::Module) -> Result<PrintedModule> {
    cfamily::print_module(module, &Cuda, &PrintOptions::default())
}

/// As [`print_module`], with `#line` directives so that nvcc's and NVRTC's diagnostics name the
/// kernel text's lines instead of the generated file's: for compiling, not for reading.
pub fn print_module_for_compiler(module: &ir::Module) -> Result<PrintedModule> {
    let options = PrintOptions {
        line_directives: true,
    };
    cfamily::print_module(module, &Cuda, &options)
}
