//! The `chorus` command.
//!
//! ```text
//! chorus compile FILE [-o OUT.cu]   print (or write) the CUDA C of a kernel file
//! chorus expand FILE                print the kernel file after macro expansion
//! chorus devices                    list the CUDA devices
//! chorus cache path                 print the kernel cache directory
//! chorus cache clear                delete the cached kernel images
//! ```
//!
//! Errors in the kernel text print as `FILE:LINE:COL: message` and exit with status 1; a
//! command line that cannot be understood prints the usage and exits with status 2.

use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "\
usage: chorus compile FILE [-o OUT.cu]   print (or write) the CUDA C of a kernel file
       chorus expand FILE                print the kernel file after macro expansion
       chorus devices                    list the CUDA devices
       chorus cache path                 print the kernel cache directory
       chorus cache clear                delete the cached kernel images
       chorus help                       print this text";

/// Why the command failed.
#[derive(Debug)]
enum Failure {
    /// The command line is wrong (exit status 2).
    Usage(String),
    /// The command ran and failed: bad kernel text, a file that cannot be read (exit status 1).
    Failed(String),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("chorus: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(message)) => {
            eprintln!("{message}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &[String]) -> Result<(), Failure> {
    let Some((command, rest)) = args.split_first() else {
        return Err(Failure::Usage("no command given".into()));
    };
    match command.as_str() {
        "compile" => compile(rest),
        "expand" => expand(rest),
        "devices" => devices(rest),
        "cache" => cache(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(Failure::Usage(format!("unknown command `{other}`"))),
    }
}

/// `compile FILE [-o OUT]`.
fn compile(args: &[String]) -> Result<(), Failure> {
    let mut file = None;
    let mut output = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-o" | "--output" => {
                let Some(path) = args.get(i + 1) else {
                    return Err(Failure::Usage("`-o` needs a file name".into()));
                };
                if output.replace(path.clone()).is_some() {
                    return Err(Failure::Usage("`-o` given twice".into()));
                }
                i += 2;
            }
            option if option.starts_with('-') && option != "-" => {
                return Err(Failure::Usage(format!("unknown option `{option}`")));
            }
            path => {
                if file.replace(path.to_string()).is_some() {
                    return Err(Failure::Usage("`compile` takes one FILE".into()));
                }
                i += 1;
            }
        }
    }
    let Some(file) = file else {
        return Err(Failure::Usage("`compile` needs a FILE".into()));
    };
    let text = read(&file)?;
    let module =
        chorus_lang::compile_str(&text, &file).map_err(|e| Failure::Failed(e.to_string()))?;
    let code = chorus_lang::cuda::print_module(&module)
        .map_err(|e| Failure::Failed(e.to_string()))?
        .code;
    match output {
        Some(path) => std::fs::write(&path, code)
            .map_err(|e| Failure::Failed(format!("chorus: cannot write {path}: {e}"))),
        None => write_stdout(&code),
    }
}

/// `expand FILE`.
fn expand(args: &[String]) -> Result<(), Failure> {
    let [file] = args else {
        return Err(Failure::Usage("`expand` takes exactly one FILE".into()));
    };
    let text = read(file)?;
    let forms = chorus_lang::expand_str(&text, file).map_err(|e| Failure::Failed(e.to_string()))?;
    let printed: Vec<String> = forms.iter().map(|f| f.pretty(100) + "\n").collect();
    write_stdout(&printed.join("\n"))
}

/// `devices`: one line per CUDA device, after the driver's CUDA version.
fn devices(args: &[String]) -> Result<(), Failure> {
    if !args.is_empty() {
        return Err(Failure::Usage("`devices` takes no arguments".into()));
    }
    let failed = |e: chorus_cuda::Error| Failure::Failed(format!("chorus: {e}"));
    let (major, minor) = chorus_cuda::driver_version().map_err(failed)?;
    let devices = chorus_cuda::devices().map_err(failed)?;
    let mut text = format!("CUDA driver {major}.{minor}, {} device(s)\n", devices.len());
    for d in devices {
        let (cc_major, cc_minor) = d.compute_capability;
        let gib = d.total_memory as f64 / f64::from(1u32 << 30);
        text.push_str(&format!(
            "{}: {} (compute capability {cc_major}.{cc_minor}, {gib:.1} GiB)\n",
            d.id, d.name
        ));
    }
    write_stdout(&text)
}

/// `cache path` and `cache clear`.
fn cache(args: &[String]) -> Result<(), Failure> {
    let dir = chorus_cuda::cache::dir();
    match args {
        [what] if what == "path" => write_stdout(&format!("{}\n", dir.display())),
        [what] if what == "clear" => {
            let removed =
                chorus_cuda::cache::clear().map_err(|e| Failure::Failed(format!("chorus: {e}")))?;
            write_stdout(&format!(
                "removed {removed} cached image(s) from {}\n",
                dir.display()
            ))
        }
        _ => Err(Failure::Usage(
            "expected `cache path` or `cache clear`".into(),
        )),
    }
}

/// The text of `path` (`-` is standard input).
fn read(path: &str) -> Result<String, Failure> {
    let result = if path == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    };
    result.map_err(|e| Failure::Failed(format!("chorus: cannot read {path}: {e}")))
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
        Err(e) => Err(Failure::Failed(format!(
            "chorus: cannot write the output: {e}"
        ))),
    }
}
