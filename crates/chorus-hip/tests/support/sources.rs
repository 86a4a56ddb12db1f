//! The kernel modules the HIP compiler tiers compile: the kernel corpus
//! (`chorus-cpu/tests/corpus/*.lisp`), chorus-lang's printer tests (`tests/cuda/*.lisp`,
//! `tests/corpus/everything.lisp`) and every example's kernel programs (the workloads after
//! `prelude.lisp`, each `defkernel!` block of `examples/*.rs`, shared-memory's generated
//! kernels), each printed for one HIP target: its HIP C++, or the located error of what
//! the target lacks.

#![allow(dead_code)]

use chorus_lang::cfamily::{PrintOptions, print_for_target};
use chorus_lang::target::Target;
use std::path::{Path, PathBuf};

#[path = "../../../chorus-lang/tests/support/example_kernels.rs"]
mod example_kernels;

/// One module printed for one target.
pub struct Printed {
    /// Where it came from (`corpus/votes.lisp`).
    pub name: String,
    /// The HIP C++, or the refusal (`FILE:LINE:COL: message`).
    pub code: Result<String, String>,
}

fn lisp_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "lisp"))
        .collect();
    files.sort();
    files
}

/// Every module's kernel text, named.
pub fn kernel_texts() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut texts = Vec::new();
    for (label, dir) in [
        ("corpus", "crates/chorus-cpu/tests/corpus"),
        ("cuda", "crates/chorus-lang/tests/cuda"),
        ("lang-corpus", "crates/chorus-lang/tests/corpus"),
    ] {
        for path in lisp_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&path).expect("a kernel file");
            let file = path.file_name().unwrap().to_string_lossy();
            texts.push((format!("{label}/{file}"), text));
        }
    }
    for (name, text) in example_kernels::example_programs() {
        texts.push((format!("examples/{name}"), text));
    }
    texts
}

/// Every module printed for HIP target `arch`.
pub fn printed_for(arch: &str) -> Vec<Printed> {
    let target = Target::hip(arch).expect("a HIP target");
    kernel_texts()
        .into_iter()
        .map(|(name, text)| {
            let module = chorus_lang::compile_str(&text, &name)
                .unwrap_or_else(|e| panic!("{name} does not compile for CUDA: {e}"));
            let code = print_for_target(&module, &target, &PrintOptions::default())
                .map(|p| p.code)
                .map_err(|e| e.to_string());
            Printed { name, code }
        })
        .collect()
}
