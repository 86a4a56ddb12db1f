//! Runs the kernel test corpus (`tests/corpus/`) on the CPU executor.

mod corpus;

/// Runs one case; the error says what differed.
fn run(case: &corpus::Case) -> Result<(), String> {
    let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
        .map_err(|e| format!("compile: {e}"))?;
    let outcome = corpus::cpu::run(case, &module)?;
    corpus::check(case, &outcome)
}

#[test]
fn the_whole_corpus_runs_on_the_cpu() {
    let cases = corpus::cases();
    assert!(
        cases.len() >= 40,
        "the corpus has only {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(e) = run(case) {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_kernel_file_is_in_the_table() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let names: Vec<&str> = corpus::cases().iter().map(|c| c.name).collect();
    for entry in std::fs::read_dir(dir).expect("the corpus folder") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "lisp") {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            assert!(names.contains(&stem.as_str()), "{stem}.lisp has no case");
        }
    }
}
