//! The `chorus` command.
//!
//! ```text
//! chorus compile FILE [-o OUT.cu] [--verbose] [-l LIBRARY]… [-t TARGET]
//!                                   print (or write) the CUDA C (or HIP, MSL) of a kernel file
//! chorus expand FILE [-l LIBRARY]…  print the kernel file after macro expansion
//! chorus devices                    list every backend's devices (or why it has none)
//! chorus cache path                 print the kernel cache directory
//! chorus cache clear                delete the cached kernel images
//! chorus --version | --help         (and `chorus COMMAND --help`)
//! ```
//!
//! A kernel file may be a whole CL-Cuda or Chorus Lisp source: its kernel definitions are
//! compiled and its host code (`in-package`, `defun`, …) is skipped (`chorus_lang::source`);
//! `--verbose` lists what was skipped, on standard error, as `FILE:LINE:COL: skipped WHAT`.
//! A host macro call that could not be expanded is a warning, printed always. `--library
//! tensor-core` defines the macros of a library shipped with Chorus (`chorus_lang::library`)
//! before the file's own, as a program that puts the library before its text does; errors in the
//! library's macros name its own lines (`chorus:lib/tensor-core.lisp:LINE:COL`). `--target`
//! (`sm_80`, `hip:gfx90a`, `metal`, …: `Target::from_name`) validates for that target and prints
//! its dialect: CUDA C, HIP C++ or Metal Shading Language.
//!
//! Errors in the kernel text print as `FILE:LINE:COL: message` and exit with status 1; a
//! command line that cannot be understood prints the usage and exits with status 2.

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::Path;

mod files;
mod gensyms;

use files::{read, refuse_output_that_is_input, write_file_atomically};
use std::process::ExitCode;

/// Compiles Chorus kernel files (S-expressions) to CUDA C, and manages the kernel cache.
#[derive(Debug, Parser)]
#[command(name = "chorus", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print (or write) the CUDA C of a kernel file (a whole CL-Cuda or Chorus source: its host
    /// code is skipped).
    Compile {
        /// The kernel file (`-` reads standard input).
        file: String,
        /// List the host forms that were skipped (on standard error).
        #[arg(short, long)]
        verbose: bool,
        /// Write the CUDA C to this file (replaced whole; never the kernel file itself) instead of
        /// standard output.
        #[arg(short, long, value_name = "OUT.cu")]
        output: Option<String>,
        /// Define the macros of a library shipped with Chorus first (`tensor-core`); repeatable.
        #[arg(short, long = "library", value_name = "LIBRARY")]
        libraries: Vec<String>,
        /// The target to validate for and print: `cuda` (sm_90, the default), `sm_XY`,
        /// `hip:gfxNNN` (HIP C++), `metal` or `metal:appleN` (Metal Shading Language).
        #[arg(short, long, value_name = "TARGET", default_value = "cuda")]
        target: String,
    },
    /// Print the kernel file after macro expansion (it reads back and compiles).
    Expand {
        /// The kernel file (`-` reads standard input).
        file: String,
        /// Define the macros of a library shipped with Chorus first (`tensor-core`); repeatable.
        #[arg(short, long = "library", value_name = "LIBRARY")]
        libraries: Vec<String>,
    },
    /// List the devices of every backend (CUDA, Metal, HIP, the CPU), or why a backend has none.
    Devices,
    /// The kernel cache.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
}

#[derive(Debug, Subcommand)]
enum CacheAction {
    /// Print the kernel cache directory.
    Path,
    /// Delete the cached kernel images (only the entries Chorus wrote).
    Clear,
}

/// Why the command failed (after the command line was understood): bad kernel text, a file
/// that cannot be read or written. Printed as is; exit status 1.
#[derive(Debug)]
struct Failure(String);

fn main() -> ExitCode {
    // `--help`, `--version` and usage errors print and exit here (usage errors with status 2).
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            eprintln!("{message}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Compile {
            file,
            output,
            verbose,
            libraries,
            target,
        } => compile(&file, output.as_deref(), verbose, &libraries, &target),
        Command::Expand { file, libraries } => expand(&file, &libraries),
        Command::Devices => devices(),
        Command::Cache { action } => cache(action),
    }
}

/// An expander with the macros of the named shipped libraries.
fn expander(libraries: &[String]) -> Result<chorus_lang::Expander, Failure> {
    use chorus_lang::library::{Library, expander_with};
    let libraries = libraries
        .iter()
        .map(|name| Library::from_name(name))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure(format!("chorus: {e}")))?;
    expander_with(&libraries).map_err(|e| Failure(e.to_string()))
}

/// `compile FILE [-o OUT] [--verbose] [-l LIBRARY]… [-t TARGET]`.
fn compile(
    file: &str,
    output: Option<&str>,
    verbose: bool,
    libraries: &[String],
    target: &str,
) -> Result<(), Failure> {
    use chorus_lang::target::{Target, TargetKind};
    let target = Target::from_name(target).map_err(|e| Failure(format!("chorus: {e}")))?;
    if target.kind == TargetKind::Cpu {
        return Err(Failure(
            "chorus: the CPU executor runs the checked IR; there is no source to print for `cpu`"
                .into(),
        ));
    }
    // Refused before anything is read, so the kernel file is never at risk.
    if let Some(path) = output {
        refuse_output_that_is_input(file, path).map_err(Failure)?;
    }
    let mut expander = expander(libraries)?;
    let text = read(file).map_err(Failure)?;
    let (module, skipped) = chorus_lang::compile_source_with(&mut expander, &text, file, &target)
        .map_err(|e| Failure(e.to_string()))?;
    report_skipped(&skipped, verbose);
    let options = chorus_lang::cfamily::PrintOptions::default();
    let code = chorus_lang::cfamily::print_for_target(&module, &target, &options)
        .map_err(|e| Failure(e.to_string()))?
        .code;
    match output {
        Some(path) => write_file_atomically(Path::new(path), code.as_bytes())
            .map_err(|e| Failure(format!("chorus: cannot write {path}: {e}"))),
        None => write_stdout(&code),
    }
}

/// Prints the skipped host forms (`verbose`) and the warnings (always) to standard error.
fn report_skipped(skipped: &[chorus_lang::source::Skipped], verbose: bool) {
    for s in skipped {
        match &s.warning {
            Some(warning) => eprintln!("{}: warning: {warning}", s.span),
            None if verbose => eprintln!("{}: skipped {}", s.span, s.what),
            None => {}
        }
    }
}

/// `expand FILE [-l LIBRARY]…`.
fn expand(file: &str, libraries: &[String]) -> Result<(), Failure> {
    let mut expander = expander(libraries)?;
    let text = read(file).map_err(Failure)?;
    let source =
        chorus_lang::source::read_source(&text, file).map_err(|e| Failure(e.to_string()))?;
    report_skipped(&source.skipped, false);
    let forms = expander
        .expand_unit(&source.forms)
        .map_err(|e| Failure(e.to_string()))?;
    let forms = gensyms::readable(forms);
    let printed: Vec<String> = forms.iter().map(|f| f.pretty(100) + "\n").collect();
    write_stdout(&printed.join("\n"))
}

/// `devices`: every backend, available or why not, and the devices of those that are, each with
/// the target it compiles for; the device kernels run on by default is marked. Fails (after the
/// list) only when `CHORUS_BACKEND` or `CHORUS_DEVICE` selects a device that cannot run.
fn devices() -> Result<(), Failure> {
    use chorus::Backend;
    let selected = chorus::current_device();
    let mut text = String::new();
    for backend in Backend::ALL {
        if let Err(why) = backend.availability() {
            text.push_str(&format!("{backend}: {why}\n"));
            continue;
        }
        let devices = backend.devices();
        let driver = match (backend, chorus_cuda::driver_version()) {
            (Backend::Cuda, Ok((major, minor))) => format!("driver {major}.{minor}, "),
            _ => String::new(),
        };
        text.push_str(&format!("{backend}: {driver}{} device(s)\n", devices.len()));
        for device in devices {
            let target = device.target().map_or_else(
                |e| format!("no target: {e}"),
                |t| format!("target {}", t.arch),
            );
            let default = if selected.as_ref().is_ok_and(|d| *d == device) {
                " [default]"
            } else {
                ""
            };
            text.push_str(&format!("  {device}, {target}{default}\n"));
        }
    }
    write_stdout(&text)?;
    selected
        .map(drop)
        .map_err(|e| Failure(format!("chorus: the selected device: {e}")))
}

/// `cache path` and `cache clear`.
fn cache(action: CacheAction) -> Result<(), Failure> {
    let dir = chorus_cuda::cache::dir();
    match action {
        CacheAction::Path => write_stdout(&format!("{}\n", dir.display())),
        CacheAction::Clear => {
            let removed =
                chorus_cuda::cache::clear().map_err(|e| Failure(format!("chorus: {e}")))?;
            write_stdout(&format!(
                "removed {removed} cached image(s) from {}\n",
                dir.display()
            ))
        }
    }
}

fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        // A closed pipe (`chorus compile f | head`) is not an error of ours.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure(format!("chorus: cannot write the output: {e}"))),
    }
}
