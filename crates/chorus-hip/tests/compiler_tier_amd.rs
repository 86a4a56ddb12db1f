//! The AMD compiler tier: every module of the corpus, of chorus-lang's printer tests and of the
//! examples, printed by the HIP dialect for a CDNA target (gfx90a, 64-lane waves) and an RDNA
//! target (gfx1030, 32-lane waves), compiled by hipcc (the AMD LLVM) to code objects. A module
//! the target refuses must be refused at a span (`FILE:LINE:COL`) by validation, and the
//! refusals are exactly the expected ones.
//!
//! Debian 12's ROCm 5.2 (hipcc, LLVM 15, rocm-device-libs; `.ci/run` installs them) supports
//! gfx90a and gfx1030, not gfx942 (LLVM 17) or gfx1100 (no device library in 5.2).
//!
//! Without hipcc the tier says so and passes, unless `CI` is set: then it fails.

#[path = "support/sources.rs"]
mod sources;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The modules each target refuses, by name, with the start of the refusal's message.
const REFUSED: &[(&str, &str)] = &[
    ("corpus/atomics_float.lisp", "needs atomics on half"),
    ("corpus/fp8_fp4.lisp", "needs 8-bit floating point"),
    ("corpus/half_bf16.lisp", "needs bfloat16"),
    (
        "corpus/curand_normal.lisp",
        "needs a device random-number library",
    ),
    (
        "corpus/curand_uniform.lisp",
        "needs a device random-number library",
    ),
    ("corpus/match.lisp", "needs warp match operations"),
    ("corpus/warp_reduce_ops.lisp", "needs warp reductions"),
    ("cuda/cluster.lisp", "needs thread-block clusters"),
    ("cuda/curand.lisp", "needs a device random-number library"),
    ("cuda/hopper.lisp", "needs tensor memory access"),
    ("cuda/edge-cases.lisp", "needs bfloat16"),
    ("cuda/extended-floats.lisp", "needs bfloat16"),
    ("cuda/printf-asm.lisp", "needs inline assembly"),
    ("cuda/warp.lisp", ""),
    ("lang-corpus/everything.lisp", ""),
    (
        "examples/texture-rotate",
        "needs texture and surface objects",
    ),
    // The tensor-core examples: bfloat16 (before their mma.sync), TMA.
    ("examples/hgemm", "needs bfloat16"),
    ("examples/attention", "needs bfloat16"),
    ("examples/hgemm-hopper", "needs tensor memory access"),
    ("examples/hgemm-tma", "needs tensor memory access"),
];

/// Refused on 64-lane waves only: masks other than the full one, and masks as results.
const REFUSED_ON_WAVE64: &[&str] = &["corpus/votes.lisp"];

fn hipcc_or_skip() -> Option<std::path::PathBuf> {
    match chorus_hip::find_hipcc() {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!("CI is set but no hipcc was found (CHORUS_HIPCC, ROCM_PATH, /opt/rocm, PATH)")
        }
        None => {
            println!("skipped: no hipcc (CHORUS_HIPCC, ROCM_PATH, /opt/rocm/bin, PATH)");
            None
        }
    }
}

/// One module: compiled (counted in `compiled`) or refused as expected; else what went wrong.
fn check(
    hipcc: &std::path::Path,
    p: &sources::Printed,
    arch: &str,
    wave64: bool,
    compiled: &AtomicUsize,
) -> Option<String> {
    let expected_refusal = REFUSED
        .iter()
        .find(|(n, _)| *n == p.name)
        .map(|(_, m)| *m)
        .or((wave64 && REFUSED_ON_WAVE64.contains(&p.name.as_str())).then_some(""));
    match (&p.code, expected_refusal) {
        (Ok(code), None) => {
            compiled.fetch_add(1, Ordering::Relaxed);
            let error = chorus_hip::hipcc_compile(hipcc, code, arch, &[]).err()?;
            // The first lines of hipcc's log name the problem; the source follows.
            let log: Vec<String> = error
                .to_string()
                .lines()
                .take(6)
                .map(String::from)
                .collect();
            Some(format!("{}: {}\n{code}", p.name, log.join("\n")))
        }
        (Err(e), Some(start)) => {
            // Located: `NAME:LINE:COL: message`.
            let located = e
                .strip_prefix(&format!("{}:", p.name))
                .and_then(|rest| rest.split(':').next())
                .is_some_and(|line| line.parse::<u32>().is_ok());
            (!located || !e.contains(start)).then(|| format!("{}: refused as `{e}`", p.name))
        }
        (Ok(_), Some(_)) => Some(format!("{}: printed, but expected a refusal", p.name)),
        (Err(e), None) => Some(format!("{}: {e}", p.name)),
    }
}

fn tier(arch: &str, wave64: bool) {
    let Some(hipcc) = hipcc_or_skip() else {
        return;
    };
    let printed = sources::printed_for(arch);
    assert!(printed.len() >= 70, "only {} modules", printed.len());
    let failures = Mutex::new(Vec::new());
    let compiled = AtomicUsize::new(0);
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while let Some(p) = printed.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Some(failure) = check(&hipcc, p, arch, wave64, &compiled) {
                        failures.lock().unwrap().push(failure);
                    }
                }
            });
        }
    });
    let compiled = compiled.into_inner();
    let failures = failures.into_inner().unwrap();
    println!(
        "{arch}: {compiled} of {} modules compiled by {}",
        printed.len(),
        hipcc.display()
    );
    let names: Vec<&str> = failures
        .iter()
        .filter_map(|f| f.split(": ").next())
        .collect();
    assert!(
        failures.is_empty(),
        "{} failed: {}\n\n{}",
        failures.len(),
        names.join(", "),
        failures.join("\n\n")
    );
}

#[test]
fn every_module_compiles_for_cdna_gfx90a() {
    tier("gfx90a", true);
}

#[test]
fn every_module_compiles_for_rdna_gfx1030() {
    tier("gfx1030", false);
}
