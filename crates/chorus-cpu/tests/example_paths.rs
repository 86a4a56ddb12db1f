//! Which path each example's kernels take on the CPU backend (native code, with or without
//! SIMD over threads, or the interpreter and why): the workload files of `examples/kernels/`
//! (after the prelude, as the examples load them) and the `defkernel!` blocks of the example
//! programs. Run with `--nocapture` to see the table; the test fails when a kernel listed
//! below as native stops compiling natively.
#![cfg(feature = "native")]

use chorus_cpu::{CpuModule, KernelPath};
use std::path::Path;
use std::sync::Arc;

/// Every (source name, text) the examples compile: workload files after the prelude, and each
/// `chorus::defkernel! { ... }` block of an example program.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let prelude = std::fs::read_to_string(root.join("kernels/prelude.lisp")).expect("the prelude");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(root.join("kernels"))
        .expect("examples/kernels")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "lisp") && !p.ends_with("prelude.lisp"))
        .collect();
    files.sort();
    for p in files {
        let text = std::fs::read_to_string(&p).expect("a kernel file");
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        out.push((name, format!("{prelude}\n{text}")));
    }
    let mut programs: Vec<_> = std::fs::read_dir(&root)
        .expect("examples")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    programs.sort();
    for p in programs {
        let text = std::fs::read_to_string(&p).expect("an example");
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("defkernel! {") {
            let body = &rest[at + "defkernel! {".len()..];
            // The block ends at the first line that is a lone `}`.
            let end = body.find("\n}").unwrap_or(body.len());
            out.push((name.clone(), body[..end].to_string()));
            rest = &body[end..];
        }
    }
    out
}

/// Kernels that must compile natively (with SIMD where marked).
const NATIVE: &[(&str, bool)] = &[
    ("vec-add-kernel", true),
    ("diffuse0", true),
    ("diffuse1", false),
    ("nbody-step", false),
    ("sgemm-tn", false),
    ("transpose", false),
    ("update-pressure", true),
    ("update-force", false),
    ("count-inside", false),
    ("csr-spmv", false),
    ("direct-conv3x3-relu", false),
    ("touch", true),
    ("reduce-sum", false),
    ("scan-reduce", false),
    ("scan-sums", false),
    ("scan-apply", false),
];

#[test]
fn the_examples_kernels_paths() {
    let mut seen = Vec::new();
    for (source, text) in sources() {
        let ir = match chorus_lang::compile_str(&text, &source) {
            Ok(ir) => Arc::new(ir),
            Err(e) => {
                eprintln!("{source}: does not compile on its own ({e})");
                continue;
            }
        };
        let Ok(module) = CpuModule::new(ir.clone()) else {
            eprintln!("{source}: not a CPU module");
            continue;
        };
        for f in &ir.functions {
            if f.kind != chorus_lang::ir::FunctionKind::Kernel {
                continue;
            }
            let path = module.kernel_path(&f.name).expect("a kernel");
            let simd = module.kernel_uses_simd(&f.name).expect("a kernel");
            match &path {
                KernelPath::Native => eprintln!(
                    "{source}: {}: native{}",
                    f.name,
                    if simd { ", SIMD" } else { "" }
                ),
                KernelPath::Interpreted(why) => {
                    eprintln!("{source}: {}: interpreted: {why}", f.name)
                }
            }
            seen.push((f.name.to_string(), path == KernelPath::Native, simd));
        }
    }
    for &(name, simd) in NATIVE {
        let found = seen.iter().find(|(n, _, _)| n == name);
        assert!(
            found.is_some_and(|(_, native, s)| *native && (*s || !simd)),
            "{name}: {found:?}"
        );
    }
}
