//! Chorus's Metal backend.
//!
//! On every host: [`print_msl`] validates a checked module for a Metal target
//! ([`chorus_lang::target::Target::metal`]) and prints it as MSL, with each kernel's argument
//! binding ([`KernelBinding`]). The conformance shim (`shim/msl_shim.h`, run by
//! `tests/msl_shim.rs`) compiles that MSL as C++ on Linux and runs it on the CPU.
//!
//! On Apple targets (macOS, iOS): the runtime, through `objc2-metal`.

mod msl;

pub use msl::{KernelBinding, MslProgram, print_msl};
