//! The kernel test corpus (crates/chorus-cpu/tests/corpus) on CUDA, compared element by element
//! with the CPU executor's results and with the corpus's expected values.
//!
//! Every case's GPU result must meet the case's expectation: exact bytes for integer work, the
//! case's tolerance for floating point (the corpus explains why: GPUs contract `a*b+c` into `fma`
//! and their math functions differ from the host's by a few ulp). Where the expectation is exact,
//! the CPU executor's bytes and the GPU's bytes must also be identical.
//!
//! Skips, saying why, when no CUDA driver loads; fails instead when `CHORUS_REQUIRE_GPU=1`.

#[path = "../../chorus-cpu/tests/corpus/mod.rs"]
mod corpus;

use chorus_cuda::{DeviceMemory, KernelArg, LaunchConfig, Program};
use corpus::Outcome;

fn run_on_gpu(case: &corpus::Case, module: &chorus_lang::ir::Module) -> Result<Outcome, String> {
    let program =
        Program::from_ir(module.clone(), case.name).map_err(|e| format!("compile: {e}"))?;
    let function = program.function(case.kernel).map_err(|e| e.to_string())?;
    let global_of = |name: &str| -> Result<(chorus_cuda::sys::CUdeviceptr, usize), String> {
        let (id, _) = module
            .global(name)
            .ok_or_else(|| format!("no global {name}"))?;
        let printed = chorus_lang::cuda::print_module(module).map_err(|e| e.to_string())?;
        program
            .module()
            .global(printed.names.global_by_id(id))
            .map_err(|e| e.to_string())
    };
    for g in &case.globals {
        if let Some(init) = &g.init {
            let (ptr, size) = global_of(g.name)?;
            if size != init.len() {
                return Err(format!(
                    "global {}: {size} bytes on the device, {} given",
                    g.name,
                    init.len()
                ));
            }
            // SAFETY: `ptr` is a live global of `size` bytes in the loaded module.
            let rc = unsafe { chorus_cuda::sys::cuMemcpyHtoD_v2(ptr, init.as_ptr().cast(), size) };
            if rc != chorus_cuda::sys::CUresult::CUDA_SUCCESS {
                return Err(format!("set global {}: {rc:?}", g.name));
            }
        }
    }
    let buffer_data: Vec<&Vec<u8>> = case.buffer_data().collect();
    let mut memories = Vec::new();
    for data in &buffer_data {
        // A zero-length buffer still gets its own (one-byte) allocation.
        let mut m = DeviceMemory::alloc(data.len().max(1)).map_err(|e| e.to_string())?;
        if !data.is_empty() {
            m.copy_from_host(data).map_err(|e| e.to_string())?;
        }
        memories.push(m);
    }
    let mut next = memories.iter();
    let args: Vec<KernelArg<'_>> = case
        .args
        .iter()
        .map(|a| match a {
            // SAFETY: the address of a live allocation; the launch checks it against the
            // kernel's signature.
            corpus::Arg::Buffer { .. } => unsafe {
                KernelArg::device_ptr(next.next().expect("one per buffer").ptr())
            },
            // SAFETY: a scalar value's bytes, checked against the signature at launch.
            corpus::Arg::Value { ty, bytes } => unsafe { KernelArg::raw(ty.clone(), bytes) },
        })
        .collect();
    let config = LaunchConfig::grid(case.grid)
        .block(case.block)
        .shared_mem(case.shared_mem as u32);
    chorus_cuda::launch(&function, &config, &args).map_err(|e| format!("launch: {e}"))?;
    chorus_cuda::synchronize_context().map_err(|e| format!("synchronize: {e}"))?;
    let mut buffers = Vec::new();
    for (m, data) in memories.iter().zip(&buffer_data) {
        let mut out = vec![0u8; data.len()];
        if !out.is_empty() {
            m.copy_to_host(&mut out).map_err(|e| e.to_string())?;
        }
        buffers.push(out);
    }
    let mut globals = Vec::new();
    for g in &case.globals {
        let (ptr, size) = global_of(g.name)?;
        let mut out = vec![0u8; size];
        // SAFETY: `ptr` is a live global of `size` bytes; `out` holds `size` bytes.
        let rc = unsafe { chorus_cuda::sys::cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), ptr, size) };
        if rc != chorus_cuda::sys::CUresult::CUDA_SUCCESS {
            return Err(format!("read global {}: {rc:?}", g.name));
        }
        globals.push(out);
    }
    Ok(Outcome { buffers, globals })
}

/// Where the case demands exact results, the two backends must agree byte for byte.
fn compare(case: &corpus::Case, cpu: &Outcome, gpu: &Outcome) -> Result<(), String> {
    for (k, (expect, (c, g))) in case
        .buffer_expectations()
        .zip(cpu.buffers.iter().zip(&gpu.buffers))
        .enumerate()
    {
        if matches!(expect, corpus::Expect::Bytes(_)) && c != g {
            let i = c.iter().zip(g).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!("buffer {}: CPU and GPU differ at byte {i}", k + 1));
        }
    }
    Ok(())
}

/// Runs `case` on the GPU, checks it against its expectations and, where they are exact, byte
/// for byte against the CPU executor.
fn agree(case: &corpus::Case) -> Result<(), String> {
    let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
        .map_err(|e| format!("compile: {e}"))?;
    let gpu = run_on_gpu(case, &module).map_err(|e| format!("GPU {e}"))?;
    corpus::check(case, &gpu).map_err(|e| format!("GPU {e}"))?;
    match corpus::cpu::run(case, &module) {
        Ok(cpu) => compare(case, &cpu, &gpu),
        // The CPU refuses what it cannot honour (cuda-asm, clusters): the GPU result
        // alone is checked then.
        Err(e) if e.contains("nsupported") => Ok(()),
        Err(e) => Err(format!("CPU {e}")),
    }
}

/// Runs `cases` on device 0 (see [`agree`]) and fails listing every case that did not agree.
fn all_agree(test: &str, cases: &[corpus::Case]) {
    if !chorus_cuda::testing::gpu_available_or_skip(test) {
        return;
    }
    let failures = chorus_cuda::with_cuda(0, |_| {
        let failures: Vec<String> = cases
            .iter()
            .filter_map(|case| {
                agree(case)
                    .err()
                    .map(|e| format!("{} ({}): {e}", case.name, case.kernel))
            })
            .collect();
        Ok::<_, chorus_cuda::Error>(failures)
    })
    .expect("a CUDA context on device 0");
    println!(
        "{} corpus cases on CUDA, {} failed",
        cases.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_agrees_on_cpu_and_gpu() {
    all_agree("the_corpus_agrees_on_cpu_and_gpu", &corpus::cases());
}

/// mma.sync (every shape and input type), ldmatrix (with and without .trans) and cp.async:
/// sm_80 (fp8: sm_89), so the H200 runs them all; the inputs are exact, so the GPU's bytes
/// must be the CPU executor's.
#[test]
fn the_tensor_core_corpus_agrees_on_cpu_and_gpu() {
    all_agree(
        "the_tensor_core_corpus_agrees_on_cpu_and_gpu",
        &corpus::tensor::cases(),
    );
}
