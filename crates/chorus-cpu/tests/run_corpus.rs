//! Runs the kernel test corpus (`tests/corpus/`) on the CPU executor.

mod corpus;

use chorus_cpu::{CpuModule, DeviceBuffer, KernelArg, LaunchConfig};
use std::sync::Arc;

/// Runs one case; the error says what differed.
fn run(case: &corpus::Case) -> Result<(), String> {
    let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
        .map_err(|e| format!("compile: {e}"))?;
    let module = CpuModule::new(Arc::new(module)).map_err(|e| format!("prepare: {e}"))?;
    module.set_printf_output(Box::new(std::io::sink()));
    for g in &case.globals {
        if let Some(init) = &g.init {
            module
                .set_global_bytes(g.name, init)
                .map_err(|e| e.to_string())?;
        }
    }
    let mut buffers = Vec::new();
    for arg in &case.args {
        if let corpus::Arg::Buffer { data, .. } = arg {
            buffers.push(DeviceBuffer::from_bytes(data).map_err(|e| e.to_string())?);
        }
    }
    let mut next = buffers.iter();
    let args: Vec<KernelArg<'_>> = case
        .args
        .iter()
        .map(|a| match a {
            corpus::Arg::Buffer { .. } => {
                KernelArg::Buffer(next.next().expect("one buffer per buffer argument"))
            }
            corpus::Arg::Value { ty, bytes } => KernelArg::Value {
                ty: ty.clone(),
                bytes: bytes.clone(),
            },
        })
        .collect();
    let config = LaunchConfig {
        grid: case.grid,
        block: case.block,
        shared_mem: case.shared_mem,
    };
    module
        .launch(case.kernel, &config, &args)
        .map_err(|e| format!("launch: {e}"))?;
    let mut next = buffers.iter();
    for (k, arg) in case.args.iter().enumerate() {
        if let corpus::Arg::Buffer { expect, .. } = arg {
            let b = next.next().expect("one buffer per buffer argument");
            expect
                .check(&b.to_bytes())
                .map_err(|e| format!("argument {}: {e}", k + 1))?;
        }
    }
    for g in &case.globals {
        let bytes = module.global_bytes(g.name).map_err(|e| e.to_string())?;
        g.expect
            .check(&bytes)
            .map_err(|e| format!("global {}: {e}", g.name))?;
    }
    Ok(())
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
