//! The fuzz targets: each takes one input through the stages up to its own.

use crate::rng::Rng;
use crate::{INPUT_FILE, Outcome};
use chorus_cpu::{CpuModule, DeviceBuffer, KernelArg, LaunchConfig};
use chorus_lang::ir::{FunctionKind, Module};
use chorus_lang::types::Type;
use chorus_lang::{Error, Expander, check, read_str};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a run fuzzes; each target also runs the stages before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The reader, on arbitrary text (random bytes read as UTF-8 with replacements, mutated
    /// and generated kernels).
    Reader,
    /// The macro expander on what the reader accepts.
    Expander,
    /// The checker and the CUDA target's validator on what the expander accepts.
    Checker,
    /// The CUDA C printer (with and without `#line` directives) on every module the checker
    /// accepts: it must print without an error.
    CudaPrinter,
    /// The CPU executor: prepares (lowers to bytecode) every module the checker accepts, and
    /// launches the kernels of generated modules with random arguments.
    Cpu,
}

/// Takes `text` through `target`'s stages; `launchable` says its kernels terminate, `seed`
/// chooses the launch's arguments.
pub(crate) fn run_one(target: Target, text: &str, launchable: bool, seed: u64) -> Outcome {
    let forms = match read_str(text, INPUT_FILE) {
        Ok(forms) => forms,
        Err(e) => return refused(text, &e),
    };
    if target == Target::Reader {
        return Ok(true);
    }
    let expanded = match Expander::new().expand_unit(&forms) {
        Ok(expanded) => expanded,
        Err(e) => return refused(text, &e),
    };
    if target == Target::Expander {
        return Ok(true);
    }
    let module = match check::check_module(&expanded).and_then(|m| {
        check::validate(&m, &chorus_lang::target::Target::default_cuda())?;
        Ok(m)
    }) {
        Ok(module) => module,
        Err(e) => return refused(text, &e),
    };
    match target {
        Target::Checker => Ok(true),
        Target::CudaPrinter => print(&module),
        _ => cpu(module, launchable, seed),
    }
}

/// An error of the front end is fine if its span is inside the input.
fn refused(text: &str, e: &Error) -> Outcome {
    let s = &e.span;
    if &*s.file == "<generated>" {
        return Ok(false);
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let fits = |line: u32, column: u32| {
        line >= 1
            && (line as usize) <= lines.len()
            && column >= 1
            && column as usize <= lines[line as usize - 1].chars().count() + 1
    };
    let ordered = (s.line, s.column) <= (s.end_line, s.end_column);
    if &*s.file != INPUT_FILE
        || !fits(s.line, s.column)
        || !fits(s.end_line, s.end_column)
        || !ordered
    {
        return Err((
            "span",
            format!(
                "error span {}:{}-{}:{} outside the input: {}",
                s.line, s.column, s.end_line, s.end_column, e
            ),
        ));
    }
    Ok(false)
}

fn print(module: &Module) -> Outcome {
    let mut source = String::new();
    for printed in [
        chorus_lang::cuda::print_module(module),
        chorus_lang::cuda::print_module_for_compiler(module),
    ] {
        match printed {
            Ok(printed) => source = printed.code,
            Err(e) => {
                return Err((
                    "printer",
                    format!("a module the checker accepts does not print: {e}"),
                ));
            }
        }
    }
    compile_sample(&source)
}

/// Printed modules seen, for [`compile_sample`]'s sampling.
static PRINTED: AtomicU64 = AtomicU64::new(0);

/// With `CHORUS_FUZZ_NVCC=N`, compiles every Nth printed module with `nvcc` (for sm_90): a
/// module the checker accepts must be valid CUDA C. Without it, or without `nvcc` on the
/// `PATH`, does nothing.
fn compile_sample(source: &str) -> Outcome {
    let Some(every) = std::env::var("CHORUS_FUZZ_NVCC")
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|&n| n > 0)
    else {
        return Ok(true);
    };
    if !PRINTED
        .fetch_add(1, Ordering::Relaxed)
        .is_multiple_of(every)
    {
        return Ok(true);
    }
    let dir = std::env::temp_dir().join(format!("chorus-fuzz-nvcc-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return Ok(true);
    }
    let file = dir.join("module.cu");
    if std::fs::write(&file, source).is_err() {
        return Ok(true);
    }
    let output = std::process::Command::new("nvcc")
        // Device code only, as chorus-cuda compiles it (a host pass would want <cstdio>
        // for `printf`, which device code has built in).
        .args(["-arch=sm_90", "-cubin", "-o"])
        .arg(dir.join("module.cubin"))
        .arg(&file)
        .output();
    match output {
        // No nvcc here: nothing to check.
        Err(_) => Ok(true),
        Ok(out) if out.status.success() => Ok(true),
        Ok(out) => Err((
            "nvcc",
            format!(
                "nvcc refuses a printed module: {}\n{source}",
                String::from_utf8_lossy(&out.stderr)
            ),
        )),
    }
}

fn cpu(module: Module, launchable: bool, seed: u64) -> Outcome {
    let module = Arc::new(module);
    let Ok(mut cpu) = CpuModule::new(module.clone()) else {
        return Ok(false);
    };
    if !launchable {
        return Ok(true);
    }
    cpu.set_workers(2);
    cpu.set_printf_output(Box::new(std::io::sink()));
    let mut rng = Rng::new(seed);
    let mut all_ok = true;
    for f in module
        .functions
        .iter()
        .filter(|f| f.kind == FunctionKind::Kernel)
    {
        let types: Vec<&Type> = f
            .params
            .iter()
            .map(|p| &f.locals[p.local.0 as usize].ty)
            .collect();
        let buffers: Vec<DeviceBuffer> = types
            .iter()
            .filter(|t| matches!(t, Type::Pointer(_)))
            .map(|_| DeviceBuffer::from_bytes(&[0; 1024]).expect("a 1 KiB buffer"))
            .collect();
        let mut buffers = buffers.iter();
        let mut args = Vec::new();
        for ty in types {
            let arg = match ty {
                Type::Pointer(_) => KernelArg::Buffer(buffers.next().expect("one per pointer")),
                Type::Bool => KernelArg::Value {
                    ty: Type::Bool,
                    bytes: vec![rng.below(2) as u8],
                },
                Type::Scalar(s) => KernelArg::Value {
                    ty: ty.clone(),
                    bytes: small_value_bytes(&mut rng, s.size()),
                },
                Type::Vector(v) => KernelArg::Value {
                    ty: ty.clone(),
                    bytes: (0..v.size()).map(|_| rng.next_u64() as u8).collect(),
                },
                _ => return Ok(false),
            };
            args.push(arg);
        }
        let config = LaunchConfig::linear(1 + rng.below(2) as u32, 1 + rng.below(64) as u32);
        all_ok &= cpu.launch(&f.name, &config, &args).is_ok();
    }
    Ok(all_ok)
}

/// Random bytes for a scalar: usually a small number (so loops over `n` stay short), now and
/// then any bits.
fn small_value_bytes(rng: &mut Rng, size: usize) -> Vec<u8> {
    let value = if rng.one_in(4) {
        rng.next_u64()
    } else {
        rng.below(70) as u64
    };
    value.to_le_bytes()[..size].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_lang::Span;

    fn error_at(line: u32, column: u32, end_line: u32, end_column: u32) -> Error {
        let span = Span {
            file: INPUT_FILE.into(),
            line,
            column,
            end_line,
            end_column,
        };
        Error::new(&span, "an error")
    }

    #[test]
    fn an_error_inside_the_input_is_a_refusal() {
        assert_eq!(refused("(a b)\n(c)", &error_at(2, 1, 2, 4)), Ok(false));
        assert_eq!(refused("(a", &error_at(1, 3, 1, 3)), Ok(false));
    }

    #[test]
    fn an_error_outside_the_input_is_a_finding() {
        for e in [
            error_at(3, 1, 3, 2),
            error_at(1, 7, 1, 8),
            error_at(0, 1, 1, 1),
            error_at(2, 2, 2, 1),
        ] {
            assert!(matches!(refused("(a b)\n(c)", &e), Err(("span", _))), "{e}");
        }
        let mut other_file = error_at(1, 1, 1, 2);
        other_file.span.file = "other.lisp".into();
        assert!(matches!(refused("(a b)", &other_file), Err(("span", _))));
    }

    #[test]
    fn a_generated_kernel_runs_on_the_cpu() {
        let text = "(defkernel k (void ((out int*) (fout float*) (n int)))
                      (set (aref out (logand n 63)) n))";
        assert_eq!(run_one(Target::Cpu, text, true, 7), Ok(true));
        assert_eq!(run_one(Target::CudaPrinter, text, true, 7), Ok(true));
        assert_eq!(run_one(Target::Checker, "(defkernel)", true, 7), Ok(false));
    }
}
