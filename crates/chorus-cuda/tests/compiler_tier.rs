//! The compiler tier: every kernel module of chorus-lang's printer tests (`tests/cuda/*.lisp`)
//! and kernel corpus (`tests/corpus/*.lisp`, with `everything.lisp`) is printed as CUDA C and
//! compiled by a real nvcc to PTX and to a cubin for sm_90, and, when NVRTC loads, by NVRTC to
//! PTX as well.
//!
//! With no nvcc (PATH, `CUDA_PATH`, `CUDA_HOME`, /usr/local/cuda …) the tier says so and
//! passes, unless the environment variable `CI` is set: then it fails, since CI installs nvcc.

use chorus_cuda::{ImageKind, find_nvcc, nvcc_compile, nvrtc_available, nvrtc_compile};
use chorus_lang::cuda::{Header, generate};
use chorus_lang::ir::{FunctionKind, GlobalQualifier};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const ARCH: &str = "-arch=sm_90";

/// The kernel files the tier compiles, sorted.
fn kernel_files() -> Vec<PathBuf> {
    let lang = Path::new(env!("CARGO_MANIFEST_DIR")).join("../chorus-lang/tests");
    let mut files = Vec::new();
    for dir in ["cuda", "corpus"] {
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
    files
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

fn compile_one(path: &Path, nvcc: &Path) -> Outcome {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return Outcome::Failed(format!("{}: {e}", path.display())),
    };
    let module = match chorus_lang::compile_str(&text, &path.display().to_string()) {
        Ok(module) => module,
        Err(e) => return Outcome::Failed(format!("the checker rejects it: {e}")),
    };
    let source = generate(&module);
    for header in &source.headers {
        if !toolkit_has(nvcc, header.file_name()) {
            let reason = format!("the toolkit has no {}", header.file_name());
            return if *header == Header::CurandKernel && std::env::var_os("CI").is_none() {
                Outcome::Skipped(reason)
            } else {
                Outcome::Failed(reason)
            };
        }
    }
    let options = [ARCH.to_string()];
    let ptx = match nvcc_compile(&source.code, &name, ImageKind::Ptx, &options) {
        Ok(ptx) => String::from_utf8_lossy(&ptx).into_owned(),
        Err(e) => return Outcome::Failed(format!("PTX: {e}\n{}", source.code)),
    };
    // Kernels and globals keep their exact C names (extern "C"), so that the driver finds them
    // by those names. (Device functions are inlined and need no symbol.)
    for function in module
        .functions
        .iter()
        .filter(|f| f.kind == FunctionKind::Kernel)
    {
        let entry = format!(" {}(", function.c_name);
        if !ptx
            .lines()
            .any(|l| l.contains(".entry") && l.contains(&entry))
        {
            return Outcome::Failed(format!("no PTX entry `{}`", function.c_name));
        }
    }
    for global in module
        .globals
        .iter()
        .filter(|g| !g.qualifiers.contains(&GlobalQualifier::Shared))
    {
        if !ptx.lines().any(|l| declares_variable(l, &global.c_name)) {
            return Outcome::Failed(format!("no PTX variable `{}`", global.c_name));
        }
    }
    match nvcc_compile(&source.code, &name, ImageKind::Cubin, &options) {
        Ok(cubin) if cubin.starts_with(b"\x7fELF") => {}
        Ok(_) => return Outcome::Failed("the cubin is not an ELF image".into()),
        Err(e) => return Outcome::Failed(format!("cubin: {e}")),
    }
    // The same text through NVRTC, the runtime's usual compiler, with the toolkit's headers
    // (curand_kernel.h needs CCCL's, which nvcc finds in include/cccl by itself).
    if nvrtc_available() {
        let mut options = vec![
            "--std=c++17".to_string(),
            "--gpu-architecture=sm_90".to_string(),
        ];
        if let Some(root) = nvcc.parent().and_then(Path::parent) {
            for dir in [root.join("include"), root.join("include/cccl")] {
                if dir.is_dir() {
                    options.push(format!("--include-path={}", dir.display()));
                }
            }
        }
        if let Err(e) = nvrtc_compile(&source.code, &name, ImageKind::Ptx, &options) {
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
    let Some(nvcc) = find_nvcc() else {
        let looked = "looked in PATH, CUDA_PATH, CUDA_HOME, CUDA_PATH_V*, /usr/local/cuda";
        assert!(
            std::env::var_os("CI").is_none(),
            "compiler tier: CI is set but no nvcc was found ({looked})"
        );
        println!("compiler tier skipped: no nvcc ({looked})");
        return;
    };
    let files = kernel_files();
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
                    let Some(path) = next.lock().unwrap().next() else {
                        break;
                    };
                    let outcome = compile_one(path, &nvcc);
                    results.lock().unwrap().push((path.clone(), outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut failures = Vec::new();
    let mut compiled = 0;
    for (path, outcome) in &results {
        let name = path.file_name().unwrap().to_string_lossy();
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
    println!(
        "compiler tier: {compiled} of {} modules compiled to PTX and cubin ({ARCH}) with {}{nvrtc}",
        results.len(),
        nvcc.display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
