//! The compiler tier: every kernel module of chorus-lang's printer tests (`tests/cuda/*.lisp`)
//! and kernel corpus (`tests/corpus/*.lisp`, with `everything.lisp`; chorus-cpu's tensor-core
//! corpus `tests/corpus/tensor/*.lisp`), and the examples' Hopper GEMM
//! (`examples/kernels/hgemm-hopper.lisp`), is printed as CUDA C and
//! compiled by a real nvcc to PTX and to a cubin for sm_90 (sm_90a for the modules that use
//! wgmma or setmaxnreg), and, when NVRTC loads, by NVRTC to
//! PTX as well, with the identifier sweep's modules (`tests/support/identifier_sweep.rs`).
//!
//! With no nvcc (PATH, `CUDA_PATH`, `CUDA_HOME`, /usr/local/cuda …) the tier says so and
//! passes, unless the environment variable `CI` is set: then it fails, since CI installs nvcc.

use chorus_cuda::testing::nvcc_or_skip;
use chorus_cuda::{ImageKind, nvcc_compile, nvrtc_available, nvrtc_compile};
use chorus_lang::Type;
use chorus_lang::ir::{Builtin, FunctionId, FunctionKind, GlobalId, GlobalQualifier};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[path = "../../chorus-lang/tests/support/identifier_sweep.rs"]
mod identifier_sweep;

const ARCH: &str = "-arch=sm_90";

/// The architecture of a module that uses wgmma or setmaxnreg (`chorus_cuda::is_arch_specific`).
const ARCH_SPECIFIC: &str = "-arch=sm_90a";

/// A kernel module to compile: its name (a file name) and its text.
#[derive(Debug)]
struct Source {
    name: String,
    text: String,
}

/// The kernel files the tier compiles, sorted, then a generated module with one kernel per
/// signature of the checker's built-in table.
fn kernel_sources() -> Vec<Source> {
    let lang = Path::new(env!("CARGO_MANIFEST_DIR")).join("../chorus-lang/tests");
    let mut files: Vec<PathBuf> = Vec::new();
    // With the tensor-core corpus of chorus-cpu (mma.sync, ldmatrix, cp.async: sm_80+ PTX).
    for dir in ["cuda", "corpus", "../../chorus-cpu/tests/corpus/tensor"] {
        let Ok(entries) = std::fs::read_dir(lang.join(dir)) else {
            continue;
        };
        files.extend(
            entries
                .map(|e| e.expect("readable directory entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "lisp")),
        );
    }
    files.sort();
    let mut sources: Vec<Source> = files
        .iter()
        .map(|path| Source {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            text: std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        })
        .collect();
    // cuRAND's signatures on their own, so that a toolkit without cuRAND still checks the rest.
    // The examples' Hopper GEMMs, as the hgemm-hopper example's program (the tensor-core
    // library, the examples' prelude of macros, the wgmma kernels, the mma.sync ones): they
    // must build for sm_90a offline, since only an H100/H200 runs them.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels");
    let read = |name: &str| {
        let path = examples.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    sources.push(Source {
        name: "example-hgemm-hopper.lisp".into(),
        text: format!(
            "{}\n{}\n{}\n{}",
            chorus_lang::library::TENSOR_CORE,
            read("prelude.lisp"),
            read("hgemm-hopper.lisp"),
            read("hgemm-tma.lisp")
        ),
    });
    // The Hopper built-ins, whose module needs sm_90a, on their own too.
    for (name, family) in [
        ("every-signature.lisp", Family::Plain),
        ("every-curand-signature.lisp", Family::Curand),
        ("every-hopper-signature.lisp", Family::Hopper),
    ] {
        sources.push(Source {
            name: name.into(),
            text: every_signature_module(family),
        });
    }
    // The identifier sweep: C++ keywords, CUDA names, device math, non-ASCII names in every
    // position, each module compiled like the files (and never skipped when CI is set).
    let (sweep, _rejected) = identifier_sweep::sweep_modules();
    sources.extend(sweep.into_iter().map(|(name, text)| Source { name, text }));
    sources
}

/// The built-ins of one generated module.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Everything but cuRAND and Hopper.
    Plain,
    /// cuRAND's.
    Curand,
    /// The Hopper built-ins (sm_90a).
    Hopper,
}

/// One kernel per signature of the checker's table (`(+ int int)`, `(atomic-cas uint16* uint16
/// uint16)` …) of one [`Family`]: each argument is read from a pointer parameter (or is the
/// pointer parameter, or the constant the built-in needs), and the result is stored through one.
fn every_signature_module(family: Family) -> String {
    let mut text = String::new();
    let mut n = 0;
    for name in chorus_lang::check::builtins::names() {
        for signature in chorus_lang::check::builtins::signatures(name) {
            let uses_curand = signature
                .params
                .iter()
                .any(|p| p.to_string().starts_with("curand"));
            let of = match signature.op {
                Builtin::Hopper(_) => Family::Hopper,
                _ if uses_curand => Family::Curand,
                _ => Family::Plain,
            };
            if of != family {
                continue;
            }
            let mut params = Vec::new();
            let mut args = Vec::new();
            for (i, ty) in signature.params.iter().enumerate() {
                if let Some(constant) = chorus_lang::check::constant_argument(signature.op, i) {
                    args.push(constant.to_string());
                } else if ty.pointer_depth() > 0 {
                    params.push(format!("(p{i} {ty})"));
                    args.push(format!("p{i}"));
                } else {
                    params.push(format!("(p{i} {ty}*)"));
                    args.push(format!("(aref p{i} 0)"));
                }
            }
            // Texture reads name their element type first; surface accesses end with their
            // boundary mode.
            if chorus_lang::check::builtins::is_texture_builtin(name) {
                if signature.result != Type::Void {
                    args.insert(0, signature.result.to_string());
                }
                if let chorus_lang::ir::Builtin::SurfRead(_, b)
                | chorus_lang::ir::Builtin::SurfWrite(_, b) = signature.op
                {
                    args.push(b.keyword().to_string());
                }
            }
            let call = format!(
                "({name}{})",
                args.iter().map(|a| format!(" {a}")).collect::<String>()
            );
            let body = if signature.result == Type::Void {
                call
            } else {
                params.push(format!("(out {}*)", signature.result));
                format!("(set (aref out 0) {call})")
            };
            text.push_str(&format!(
                "(defkernel sig-{n} (void ({})) {body})\n",
                params.join(" ")
            ));
            n += 1;
        }
    }
    text
}

/// True when the toolkit of `nvcc` has `header` (the PyPI wheels ship cuRAND's headers in a
/// wheel of their own).
fn toolkit_has(nvcc: &Path, header: &str) -> bool {
    let Some(root) = nvcc.parent().and_then(Path::parent) else {
        return false;
    };
    if root.join("include").join(header).is_file() {
        return true;
    }
    std::fs::read_dir(root.join("targets"))
        .map(|targets| {
            targets
                .flatten()
                .any(|t| t.path().join("include").join(header).is_file())
        })
        .unwrap_or(false)
}

/// What happened to one kernel file.
enum Outcome {
    Compiled,
    Skipped(String),
    Failed(String),
}

fn compile_one(source: &Source, nvcc: &Path) -> Outcome {
    let name = source.name.trim_end_matches(".lisp");
    let module = match chorus_lang::compile_str(&source.text, &source.name) {
        Ok(module) => module,
        Err(e) => return Outcome::Failed(format!("the checker rejects it: {e}")),
    };
    let source = match chorus_lang::cuda::print_module(&module) {
        Ok(printed) => printed,
        Err(e) => return Outcome::Failed(format!("the printer rejects it: {e}")),
    };
    for header in &source.headers {
        if !toolkit_has(nvcc, header) {
            let reason = format!("the toolkit has no {header}");
            return if *header == "curand_kernel.h" && std::env::var_os("CI").is_none() {
                Outcome::Skipped(reason)
            } else {
                Outcome::Failed(reason)
            };
        }
    }
    let arch = if chorus_cuda::is_arch_specific(&source.code) {
        ARCH_SPECIFIC
    } else {
        ARCH
    };
    let options = [arch.to_string()];
    let ptx = match nvcc_compile(&source.code, name, ImageKind::Ptx, &options) {
        Ok(ptx) => String::from_utf8_lossy(&ptx).into_owned(),
        Err(e) => return Outcome::Failed(format!("PTX: {e}\n{}", source.code)),
    };
    // Kernels and globals keep their exact C names (extern "C"), so that the driver finds them
    // by those names. (Device functions are inlined and need no symbol.)
    for (i, _) in module
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind == FunctionKind::Kernel)
    {
        let c_name = source.names.function_by_id(FunctionId(i as u32));
        let entry = format!(" {c_name}(");
        if !ptx
            .lines()
            .any(|l| l.contains(".entry") && l.contains(&entry))
        {
            return Outcome::Failed(format!("no PTX entry `{c_name}`"));
        }
    }
    for (i, _) in module
        .globals
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.qualifiers.contains(&GlobalQualifier::Shared))
    {
        let c_name = source.names.global_by_id(GlobalId(i as u32));
        if !ptx.lines().any(|l| declares_variable(l, c_name)) {
            return Outcome::Failed(format!("no PTX variable `{c_name}`"));
        }
    }
    match nvcc_compile(&source.code, name, ImageKind::Cubin, &options) {
        Ok(cubin) if cubin.starts_with(b"\x7fELF") => {}
        Ok(_) => return Outcome::Failed("the cubin is not an ELF image".into()),
        Err(e) => return Outcome::Failed(format!("cubin: {e}")),
    }
    // The same text through NVRTC, the runtime's usual compiler, with the toolkit's headers
    // (curand_kernel.h needs CCCL's, which nvcc finds in include/cccl by itself).
    if nvrtc_available() {
        let mut options = vec![
            "--std=c++17".to_string(),
            format!("--gpu-architecture={}", arch.trim_start_matches("-arch=")),
        ];
        if let Some(root) = nvcc.parent().and_then(Path::parent) {
            for dir in [root.join("include"), root.join("include/cccl")] {
                if dir.is_dir() {
                    options.push(format!("--include-path={}", dir.display()));
                }
            }
        }
        if let Err(e) = nvrtc_compile(&source.code, name, ImageKind::Ptx, &options) {
            return Outcome::Failed(format!("NVRTC: {e}"));
        }
    }
    Outcome::Compiled
}

/// True when the PTX line declares the module-scope variable `name` (`.global .align 4 .u32 foo;`,
/// `.const .align 4 .b8 origin[12] = {…};`).
fn declares_variable(line: &str, name: &str) -> bool {
    let line = line
        .trim_start()
        .trim_start_matches(".visible ")
        .trim_start_matches(".extern ");
    (line.starts_with(".global") || line.starts_with(".const"))
        && line.split_whitespace().any(|word| {
            let word = word.trim_end_matches(';');
            word == name
                || word
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('['))
        })
}

#[test]
fn every_kernel_module_compiles_with_nvcc_for_sm_90() {
    let Some(nvcc) = nvcc_or_skip("every_kernel_module_compiles_with_nvcc_for_sm_90") else {
        return;
    };
    let files = kernel_sources();
    assert!(
        files.len() >= 20,
        "expected the printer's kernel files, found {files:?}"
    );
    let results = Mutex::new(Vec::new());
    let next = Mutex::new(files.iter());
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some(source) = next.lock().unwrap().next() else {
                        break;
                    };
                    let outcome = compile_one(source, &nvcc);
                    results.lock().unwrap().push((source.name.clone(), outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut failures = Vec::new();
    let mut compiled = 0;
    for (name, outcome) in &results {
        match outcome {
            Outcome::Compiled => compiled += 1,
            Outcome::Skipped(reason) => println!("compiler tier: {name} skipped: {reason}"),
            Outcome::Failed(reason) => failures.push(format!("{name}: {reason}")),
        }
    }
    let nvrtc = if nvrtc_available() {
        ", and to PTX with NVRTC"
    } else {
        " (NVRTC not found: not tried)"
    };
    let signatures: usize = files
        .iter()
        .filter(|s| s.name.starts_with("every-"))
        .map(|s| s.text.matches("(defkernel").count())
        .sum();
    println!(
        "compiler tier: {compiled} of {} modules (three of them with a kernel for each \
         of the {signatures} built-in signatures) compiled to PTX and cubin ({ARCH}; \
         {ARCH_SPECIFIC} for wgmma and setmaxnreg) with {}{nvrtc}",
        results.len(),
        nvcc.display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Issue 9, item 15: a compiler error in generated code names the kernel text's line, through
/// the `#line` directives of the text the runtime compiles.
#[test]
fn compiler_errors_in_generated_code_name_the_kernel_text_line() {
    if nvcc_or_skip("compiler_errors_in_generated_code_name_the_kernel_text_line").is_none() {
        return;
    }
    let module = chorus_lang::compile_str(
        "(defkernel fill (void ((a int*)))\n  (set (aref a 0) 1)\n  (cuda-asm \"not_declared_anywhere = 3\"))",
        "bad.lisp",
    )
    .unwrap();
    let printed = chorus_lang::cuda::print_module_for_compiler(&module).unwrap();
    let error = nvcc_compile(&printed.code, "bad", ImageKind::Ptx, &[ARCH.to_string()])
        .expect_err("nvcc rejects the undeclared name")
        .to_string();
    assert!(error.contains("bad.lisp(3)"), "{error}");
}
