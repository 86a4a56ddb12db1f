//! The measured tensor-core kernels keep the registers they were measured with: every kernel of
//! `examples/kernels/hgemm.lisp`, `attention.lisp`, `hgemm-hopper.lisp` and `hgemm-tma.lisp` (BENCHMARKS.md's
//! figures) is compiled by ptxas for sm_90 (sm_90a for wgmma) with `-Xptxas -v`, and its spill
//! stores must stay within the budget below: none, but for the two d128 w4 attention kernels,
//! which were measured with theirs (BENCHMARKS.md, "Attention"). A change to the language,
//! the printer or the macro library that makes ptxas spill in a main loop slows a kernel by
//! tens of percent, and only a GPU run would show it otherwise.
//!
//! Skips without nvcc, unless `CI` is set (CI installs nvcc 13.0, the H200's version).

use chorus_cuda::is_arch_specific;
use chorus_cuda::testing::nvcc_or_skip;
use std::path::Path;
use std::process::Command;

/// Spill-store bytes allowed, by kernel C name; every other kernel: none.
const SPILL_BUDGET: [(&str, u64); 2] = [
    ("attention_d128_w4", 120),
    ("attention_d128_w4_causal", 136),
];

/// (kernel C name, registers, spill-store bytes) for each kernel ptxas compiled, from its
/// `-v` report.
fn ptxas_report(stderr: &str) -> Vec<(String, u64, u64)> {
    let mut kernels = Vec::new();
    let mut current: Option<(String, u64, u64)> = None;
    for line in stderr.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            kernels.extend(current.take());
            let name = rest.split('\'').next().unwrap_or_default();
            current = Some((name.to_string(), 0, 0));
        } else if let Some((_, registers, spills)) = current.as_mut() {
            let number_before = |marker: &str| {
                line.split(marker).next().and_then(|head| {
                    head.split_whitespace()
                        .last()
                        .and_then(|n| n.parse::<u64>().ok())
                })
            };
            if line.contains("bytes spill stores") {
                *spills = number_before(" bytes spill stores").unwrap_or(0);
            }
            if let Some(used) = line.split("Used ").nth(1) {
                *registers = used
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
            }
        }
    }
    kernels.extend(current);
    kernels
}

#[test]
fn the_measured_tensor_core_kernels_do_not_spill() {
    let Some(nvcc) = nvcc_or_skip("the_measured_tensor_core_kernels_do_not_spill") else {
        return;
    };
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels");
    let read = |name: &str| {
        let path = examples.join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut checked = Vec::new();
    // (files, the kernels they define): the examples compile them after their prelude, and the
    // mma.sync kernels after the tensor-core library; `hgemm-tma.lisp` builds on
    // `hgemm-hopper.lisp`'s pipeline (named by its last file).
    for (files, kernels) in [
        (&["hgemm.lisp"][..], 7),
        (&["attention.lisp"], 8),
        (&["hgemm-hopper.lisp", "hgemm-tma.lisp"], 21),
    ] {
        let file = files[files.len() - 1];
        let mut text = format!(
            "{}\n{}",
            chorus_lang::library::TENSOR_CORE,
            read("prelude.lisp")
        );
        for part in files {
            text.push('\n');
            text.push_str(&read(part));
        }
        let module = chorus_lang::compile_str(&text, file).unwrap_or_else(|e| panic!("{e}"));
        let code = chorus_lang::cuda::print_module(&module)
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .code;
        let arch = if is_arch_specific(&code) {
            "sm_90a"
        } else {
            "sm_90"
        };
        let cu = dir.path().join(file.replace(".lisp", ".cu"));
        std::fs::write(&cu, &code).expect("the CUDA C written");
        let out = Command::new(&nvcc)
            .args(["-cubin", &format!("-arch={arch}"), "-Xptxas", "-v", "-o"])
            .arg(dir.path().join(file.replace(".lisp", ".cubin")))
            .arg(&cu)
            .output()
            .expect("nvcc runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{file}: nvcc failed:\n{stderr}");
        let report = ptxas_report(&stderr);
        assert_eq!(report.len(), kernels, "{file}: kernels in\n{stderr}");
        for (name, registers, spills) in report {
            let budget = SPILL_BUDGET
                .iter()
                .find(|(kernel, _)| *kernel == name)
                .map_or(0, |(_, bytes)| *bytes);
            assert!(
                spills <= budget,
                "{name} ({file}): {spills} bytes of spill stores, budget {budget}, \
                 {registers} registers"
            );
            checked.push(format!("{name} {registers}"));
        }
    }
    println!("register budget: {}", checked.join(", "));
}

#[test]
fn ptxas_reports_are_read() {
    let stderr = "ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
    88 bytes stack frame, 120 bytes spill stores, 104 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 88 bytes cumulative stack size
ptxas info    : Compiling entry function 'b' for 'sm_90'
ptxas info    : Function properties for b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 64 bytes smem";
    assert_eq!(
        ptxas_report(stderr),
        [("a".to_string(), 255, 120), ("b".to_string(), 168, 0)]
    );
}
