//! NVRTC: compiling CUDA C in process.

use crate::diagnostics::{compile_error, source_file_name};
use crate::error::{Error, Result};
use crate::image::ImageKind;
use crate::nvrtc_loader;
use cudarc::nvrtc::sys::{self, nvrtcProgram, nvrtcResult};
use std::ffi::{CStr, CString};

/// NVRTC's version, as `(major, minor)`.
pub fn nvrtc_version() -> Result<(u32, u32)> {
    // Asked once: it is part of every cache key.
    static VERSION: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded; the function writes two ints.
    check("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok(*VERSION.get_or_init(|| (major.max(0) as u32, minor.max(0) as u32)))
}

fn ensure_nvrtc() -> Result<()> {
    match &nvrtc_loader::nvrtc().missing {
        None => Ok(()),
        Some(why) => Err(Error::NvrtcNotFound {
            reason: why.clone(),
        }),
    }
}

fn check(call: &str, result: nvrtcResult) -> Result<()> {
    if result == nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: NVRTC is loaded; it returns a static string.
    let text = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(result)) };
    Err(Error::Compile {
        compiler: "nvrtc".into(),
        name: call.into(),
        log: format!("{call}: {}", text.to_string_lossy()),
        excerpt: String::new(),
    })
}

/// Destroys the program on every path out of [`nvrtc_compile`].
struct Program(nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed once.
        unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

/// The options NVRTC is given besides the user's: C++17, the architecture (`-arch=sm_XY`,
/// which lets NVRTC emit both PTX and cubin) and the toolkit's include directories (for
/// `cuda_fp16.h`, `cuda_bf16.h` …).
pub(crate) fn nvrtc_options(arch: (u32, u32), user: &[String]) -> Vec<String> {
    nvrtc_options_for(arch, false, user)
}

/// [`nvrtc_options`], for the arch-specific variant (`sm_90a`) when `arch_specific` (see
/// [`crate::with_arch_option_for`]).
pub(crate) fn nvrtc_options_for(
    arch: (u32, u32),
    arch_specific: bool,
    user: &[String],
) -> Vec<String> {
    let mut options = vec!["--std=c++17".to_owned()];
    if !user.iter().any(|o| crate::is_arch_option(o)) {
        let suffix = if arch_specific { "a" } else { "" };
        options.push(format!(
            "--gpu-architecture=sm_{}{}{suffix}",
            arch.0, arch.1
        ));
    }
    for dir in nvrtc_loader::toolkit_include_dirs() {
        options.push(format!("--include-path={}", dir.display()));
    }
    // `-arch=native` is an nvcc option NVRTC does not know; the architecture is explicit here.
    options.extend(user.iter().filter(|o| *o != "-arch=native").cloned());
    options
}

/// Compiles `source` with NVRTC to PTX or cubin with exactly `options`. On failure the error
/// has NVRTC's log and the source lines it points at.
pub fn nvrtc_compile(
    source: &str,
    name: &str,
    kind: ImageKind,
    options: &[String],
) -> Result<Vec<u8>> {
    let program = compile_program(source, name, options)?;
    match kind {
        ImageKind::Ptx => program_output(&program, Output::Ptx),
        ImageKind::Cubin => program_output(&program, Output::Cubin),
    }
}

/// What [`nvrtc_compile_relocatable`] produces: an input of the driver's linker
/// (`chorus_driver::Linker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RelocatableOutput {
    /// Relocatable PTX (`-rdc=true`), JIT-compiled by the linker.
    Ptx,
    /// A relocatable cubin (`-rdc=true`) for the architecture.
    Cubin,
    /// LTO-IR (`-rdc=true -dlto`), for link-time optimization (see `chorus_driver::Linker`
    /// for what the driver's linker accepts).
    LtoIr,
}

impl RelocatableOutput {
    /// The linker input kind of this output.
    pub fn link_input_kind(self) -> chorus_driver::LinkInputKind {
        match self {
            RelocatableOutput::Ptx => chorus_driver::LinkInputKind::Ptx,
            RelocatableOutput::Cubin => chorus_driver::LinkInputKind::Cubin,
            RelocatableOutput::LtoIr => chorus_driver::LinkInputKind::LtoIr,
        }
    }

    /// The options that make NVRTC emit it.
    fn options(self) -> &'static [&'static str] {
        match self {
            RelocatableOutput::Ptx | RelocatableOutput::Cubin => &["-rdc=true"],
            RelocatableOutput::LtoIr => &["-rdc=true", "-dlto"],
        }
    }
}

/// Compiles CUDA C `source` with NVRTC into relocatable device code for architecture `arch`
/// (separate compilation: `extern __device__` functions may be defined by another input of
/// the same link). `user` options are added to NVRTC's usual ones
/// (`nvrtc_options`: C++17, the architecture, the toolkit's headers). The result is not
/// cached: it is linked, not loaded.
pub fn nvrtc_compile_relocatable(
    source: &str,
    name: &str,
    output: RelocatableOutput,
    arch: (u32, u32),
    user: &[String],
) -> Result<Vec<u8>> {
    let mut options = nvrtc_options(arch, user);
    for option in output.options() {
        if !options.iter().any(|o| o == option) {
            options.push((*option).to_owned());
        }
    }
    let program = compile_program(source, name, &options)?;
    match output {
        RelocatableOutput::Ptx => program_output(&program, Output::Ptx),
        RelocatableOutput::Cubin => program_output(&program, Output::Cubin),
        RelocatableOutput::LtoIr => program_output(&program, Output::LtoIr),
    }
}

/// What to take out of a compiled program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Ptx,
    Cubin,
    LtoIr,
}

/// Creates and compiles a program with exactly `options`; on failure the error has NVRTC's log
/// and the source lines it points at.
fn compile_program(source: &str, name: &str, options: &[String]) -> Result<Program> {
    ensure_nvrtc()?;
    let src = CString::new(source)
        .map_err(|_| Error::InvalidArgument("kernel source contains NUL".into()))?;
    let file_name = source_file_name(name);
    let file = CString::new(file_name.as_str())
        .map_err(|_| Error::InvalidArgument("kernel name contains NUL".into()))?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: NVRTC is loaded; the strings are NUL-terminated and outlive the call.
    check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut raw,
            src.as_ptr(),
            file.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })?;
    let program = Program(raw);
    let c_options: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::InvalidArgument("a compiler option contains NUL".into()))?;
    let pointers: Vec<*const std::ffi::c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
    crate::settings::message(format!("compiling {name} with NVRTC {options:?}"));
    // SAFETY: the program is valid; `pointers` holds `len` NUL-terminated options.
    let compiled =
        unsafe { sys::nvrtcCompileProgram(program.0, pointers.len() as i32, pointers.as_ptr()) };
    if compiled != nvrtcResult::NVRTC_SUCCESS {
        let mut log = program_log(&program).unwrap_or_default();
        if log.trim().is_empty() {
            check("nvrtcCompileProgram", compiled)?;
            log = format!("{compiled:?}");
        }
        return Err(compile_error("nvrtc", name, &file_name, &log, source));
    }
    Ok(program)
}

/// The `output` of a compiled program.
fn program_output(program: &Program, output: Output) -> Result<Vec<u8>> {
    let mut size = 0;
    let mut image;
    // SAFETY: the program compiled; each Get writes `size` bytes into a buffer of that size.
    unsafe {
        match output {
            Output::Ptx => {
                check(
                    "nvrtcGetPTXSize",
                    sys::nvrtcGetPTXSize(program.0, &mut size),
                )?;
                image = vec![0u8; size];
                check(
                    "nvrtcGetPTX",
                    sys::nvrtcGetPTX(program.0, image.as_mut_ptr().cast()),
                )?;
            }
            Output::Cubin => {
                check(
                    "nvrtcGetCUBINSize",
                    sys::nvrtcGetCUBINSize(program.0, &mut size),
                )?;
                image = vec![0u8; size];
                check(
                    "nvrtcGetCUBIN",
                    sys::nvrtcGetCUBIN(program.0, image.as_mut_ptr().cast()),
                )?;
            }
            Output::LtoIr => {
                check(
                    "nvrtcGetLTOIRSize",
                    sys::nvrtcGetLTOIRSize(program.0, &mut size),
                )?;
                image = vec![0u8; size];
                check(
                    "nvrtcGetLTOIR",
                    sys::nvrtcGetLTOIR(program.0, image.as_mut_ptr().cast()),
                )?;
            }
        }
    }
    if output == Output::Ptx {
        // PTX comes NUL-terminated; the image is the text.
        while image.last() == Some(&0) {
            image.pop();
        }
    }
    Ok(image)
}

fn program_log(program: &Program) -> Result<String> {
    let mut size = 0;
    // SAFETY: valid program; the log is written into a buffer of the reported size.
    unsafe {
        check(
            "nvrtcGetProgramLogSize",
            sys::nvrtcGetProgramLogSize(program.0, &mut size),
        )?;
        let mut buf = vec![0u8; size.max(1)];
        check(
            "nvrtcGetProgramLog",
            sys::nvrtcGetProgramLog(program.0, buf.as_mut_ptr().cast()),
        )?;
        while buf.last() == Some(&0) {
            buf.pop();
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}
