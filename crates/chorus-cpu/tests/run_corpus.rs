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

/// Runs every case on the interpreter and on the default path (native code where the kernel
/// compiles) and compares what they leave, bit for bit: the native code computes each
/// operation as the interpreter does (no contraction into `fma`, the same Rust functions for
/// math, conversions and the floating remainders, minima and maxima), so there is no float
/// tolerance between the two paths. Kernels with atomics are checked against the case's
/// expectations instead (their order across blocks is not fixed). Returns the cases that ran
/// natively.
fn compare_paths() -> (Vec<&'static str>, Vec<String>) {
    let target = chorus_lang::target::Target::cpu();
    let mut native = Vec::new();
    let mut failures = Vec::new();
    for case in corpus::cases() {
        let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let reference = corpus::cpu::run_on_path(&case, &module, &target, true);
        let compiled = corpus::cpu::run_on_path(&case, &module, &target, false);
        match (reference, compiled) {
            (Ok((want, _)), Ok((got, path))) => {
                if path == chorus_cpu::KernelPath::Native {
                    native.push(case.name);
                } else {
                    // Both runs interpreted: nothing to compare (atomics may order differently).
                    eprintln!("{}: interpreted ({path:?})", case.name);
                    continue;
                }
                // Atomics from several blocks (running on several cores) may apply in any
                // order: there the native outcome must pass the case's own checks instead.
                if case.source.contains("atomic") {
                    if let Err(e) = corpus::check(&case, &got) {
                        failures.push(format!("{}: native: {e}", case.name));
                    }
                    continue;
                }
                if want.buffers != got.buffers || want.globals != got.globals {
                    let first = want
                        .buffers
                        .iter()
                        .zip(&got.buffers)
                        .position(|(a, b)| a != b);
                    failures.push(format!(
                        "{}: the paths differ (first differing buffer argument: {first:?})",
                        case.name
                    ));
                }
            }
            (a, b) => failures.push(format!(
                "{}: interpreter {:?}, default path {:?}",
                case.name,
                a.err(),
                b.err()
            )),
        }
    }
    (native, failures)
}

#[test]
fn the_interpreter_and_the_native_code_agree_bit_for_bit() {
    let (native, failures) = compare_paths();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if cfg!(feature = "native") {
        // The fast path (one loop over the threads), kernels with barriers (at the top
        // level and inside loops), and device-function calls (early_return).
        for name in [
            "vec_add",
            "diffuse",
            "barrier_loop",
            "shared_reduce",
            "shared_2d",
            "matmul",
            "prefix_scan",
            "early_return",
            "dynamic_shared",
            "histogram",
            "atomics_int",
            "shared_scalar",
            "half_bf16",
            "fp8_fp4",
            "structs",
            "vectors",
            "doubles",
            "globals",
            "half2",
            // Warp collectives (split regions, one loop over each warp's lanes).
            "shfl_variants",
            "shfl_float_double",
            "votes",
            "warp_reduce_ops",
            "warp_reduce_shfl",
            "lane_ids",
            "match",
        ] {
            assert!(
                native.contains(&name),
                "{name} did not run natively: {native:?}"
            );
        }
    }
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

/// The tensor-core corpus (`tests/corpus/tensor/`: mma.sync for every shape and type,
/// ldmatrix, cp.async) on the CPU executor, each result exact; and on the interpreter,
/// since the native path has no tensor-core instructions.
#[test]
fn the_tensor_core_corpus_runs_on_the_cpu() {
    let cases = corpus::tensor::cases();
    assert_eq!(cases.len(), 12);
    let target = chorus_lang::target::Target::cpu();
    let mut failures = Vec::new();
    for case in &cases {
        let result = (|| {
            let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
                .map_err(|e| format!("compile: {e}"))?;
            let (outcome, path) = corpus::cpu::run_on_path(case, &module, &target, false)?;
            // The native compiler has no tensor-core instructions: these fall back.
            if path == chorus_cpu::KernelPath::Native {
                return Err("ran natively, not on the interpreter".into());
            }
            corpus::check(case, &outcome)
        })();
        if let Err(e) = result {
            failures.push(format!("{} ({}): {e}", case.name, case.kernel));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/tensor");
    for entry in std::fs::read_dir(dir).expect("the tensor corpus folder") {
        let path = entry.expect("a directory entry").path();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        assert!(
            cases.iter().any(|c| c.name == stem),
            "{stem}.lisp has no case"
        );
    }
}
