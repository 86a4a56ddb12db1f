//! `CHORUS_BACKEND` is read once per process, so each case runs this test binary again with the
//! variable set and the ignored test `report_selection` selected.

use std::process::Command;

/// Runs `report_selection` in a child process with `CHORUS_BACKEND=value`; its output.
fn selection_with(value: &str) -> String {
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            "--exact",
            "report_selection",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CHORUS_BACKEND", value)
        .output()
        .expect("the test binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn an_override_selects_the_backend_it_names() {
    let out = selection_with("cpu");
    assert!(out.contains("backend: CPU"), "{out}");
    assert!(out.contains("check: Ok(Cpu)"), "{out}");
    assert!(out.contains("alloc: Ok"), "{out}");
}

#[test]
fn an_unavailable_override_is_an_error_on_first_use_not_a_fallback() {
    let out = selection_with("metal");
    assert!(out.contains("backend: Metal"), "{out}");
    assert!(
        out.contains("check: Err(\"the Metal backend is not available"),
        "{out}"
    );
    assert!(
        out.contains("alloc: Err(\"the Metal backend is not available"),
        "{out}"
    );
}

#[test]
fn an_override_naming_no_backend_is_an_error_on_first_use() {
    let out = selection_with("opencl");
    assert!(
        out.contains("check: Err(\"CHORUS_BACKEND=opencl names no backend"),
        "{out}"
    );
    assert!(
        out.contains("alloc: Err(") && out.contains("names no backend"),
        "{out}"
    );
}

#[test]
fn a_cuda_override_never_falls_back_to_the_cpu() {
    let out = selection_with("cuda");
    assert!(out.contains("backend: CUDA"), "{out}");
    if chorus::Backend::Cuda.is_available() {
        assert!(
            out.contains("check: Ok(Cuda)") && out.contains("alloc: Ok"),
            "{out}"
        );
    } else {
        // No driver is `SdkNotFound`; a driver without a device is `BackendUnavailable`.
        let refused = |what: &str| {
            out.contains(&format!("{what}: Err(\"CUDA driver not found"))
                || out.contains(&format!("{what}: Err(\"the CUDA backend is not available"))
        };
        assert!(refused("check") && refused("alloc"), "{out}");
    }
}

#[test]
#[ignore = "run by the other tests of this file in a process of its own, with CHORUS_BACKEND set"]
fn report_selection() {
    println!("backend: {}", chorus::backend());
    println!(
        "check: {:?}",
        chorus::check_backend().map_err(|e| e.to_string())
    );
    println!(
        "alloc: {:?}",
        chorus::MemoryBlock::<f32>::alloc(4)
            .map(drop)
            .map_err(|e| e.to_string())
    );
}
