//! The fuzz targets as tests. Each runs for `CHORUS_FUZZ_SECONDS` (default 2) seconds from the
//! seed `CHORUS_FUZZ_SEED` (default 1; `clock` for a new one each run), one target at a time; a finding fails the test
//! and prints the input that caused it. `.ci/run` gives each target a longer budget; see
//! `fuzz/README.md` for a long run.

use chorus_fuzz::{Budget, Target, run};
use std::time::{Duration, SystemTime};

fn budget() -> Budget {
    let seconds: f64 = std::env::var("CHORUS_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let seed = std::env::var("CHORUS_FUZZ_SEED")
        .ok()
        // A fixed default, so that the workspace tests and CI do not fail on a new finding
        // in an unrelated change; `CHORUS_FUZZ_SEED=clock` explores new inputs each run.
        .map_or(Some(1), |s: String| {
            if s == "clock" {
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .ok()
                    .map(|d| d.as_nanos() as u64)
            } else {
                s.parse().ok()
            }
        })
        .expect("CHORUS_FUZZ_SEED is a number or `clock`");
    Budget {
        total: Duration::from_secs_f64(seconds),
        // nvcc (CHORUS_FUZZ_NVCC) takes seconds for one module on a busy machine.
        per_input: Duration::from_secs(if std::env::var_os("CHORUS_FUZZ_NVCC").is_some() {
            120
        } else {
            20
        }),
        seed,
    }
}

fn fuzz(target: Target) {
    let budget = budget();
    let report = run(target, budget);
    eprintln!(
        "fuzz {target:?}: seed {}, {} inputs in {:?}, {} accepted, {} findings",
        budget.seed,
        report.inputs,
        budget.total,
        report.accepted,
        report.findings.len()
    );
    if let Some(dir) = std::env::var_os("CHORUS_FUZZ_FINDINGS") {
        for (i, f) in report.findings.iter().enumerate() {
            let path =
                std::path::Path::new(&dir).join(format!("{target:?}-{}-{i}.lisp", budget.seed));
            let _ = std::fs::write(path, &f.input);
        }
    }
    for f in &report.findings {
        eprintln!(
            "--- {} in {target:?}: {}\ninput: {:?}\n",
            f.kind, f.message, f.input
        );
    }
    assert!(report.inputs > 0, "the fuzzer ran no input");
    assert!(
        report.findings.is_empty(),
        "{} findings (seed {}): the first: {} {}",
        report.findings.len(),
        budget.seed,
        report.findings[0].kind,
        report.findings[0].message
    );
}

#[test]
fn fuzz_reader() {
    fuzz(Target::Reader);
}

#[test]
fn fuzz_expander() {
    fuzz(Target::Expander);
}

#[test]
fn fuzz_checker() {
    fuzz(Target::Checker);
}

#[test]
fn fuzz_cuda_printer() {
    fuzz(Target::CudaPrinter);
}

#[test]
fn fuzz_cpu() {
    fuzz(Target::Cpu);
}
