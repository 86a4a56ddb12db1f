//! HIP source through the HIP-on-CUDA header: every module of the corpus, of chorus-lang's
//! printer tests and of the examples, printed by the HIP dialect for gfx1030 (32-lane waves)
//! and gfx90a (64-lane waves), compiled by nvcc to a cubin for sm_90 with `-I hip_on_cuda`.
//!
//! Without nvcc the tier says so and passes, unless `CI` is set: then it fails.

#[path = "support/sources.rs"]
mod sources;

use chorus_cuda::testing::nvcc_or_skip;
use chorus_cuda::{ImageKind, nvcc_compile};

fn tier(arch: &str) {
    if nvcc_or_skip(&format!("the HIP-on-CUDA tier for {arch}")).is_none() {
        return;
    }
    let headers = tempfile::tempdir().expect("a temporary directory");
    chorus_hip::write_hip_on_cuda_headers(headers.path()).expect("the headers");
    let options = vec![
        "-arch=sm_90".to_string(),
        format!("-I{}", headers.path().display()),
    ];
    let printed = sources::printed_for(arch);
    let mut failures = Vec::new();
    let mut compiled = 0;
    for p in &printed {
        if let Ok(code) = &p.code {
            compiled += 1;
            if let Err(e) = nvcc_compile(code, &p.name, ImageKind::Cubin, &options) {
                failures.push(format!("{}: {e}\n{code}", p.name));
            }
        }
    }
    println!(
        "{arch}: {compiled} of {} modules compiled by nvcc",
        printed.len()
    );
    assert!(compiled >= 60, "only {compiled} modules printed");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn wave32_hip_compiles_with_nvcc_through_the_header() {
    tier("gfx1030");
}

#[test]
fn wave64_hip_compiles_with_nvcc_through_the_header() {
    tier("gfx90a");
}
