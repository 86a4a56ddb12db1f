//! HIP semantics on an NVIDIA GPU: every case of the kernel corpus
//! (`chorus-cpu/tests/corpus`) printed by the HIP dialect for an RDNA target (gfx1030: 32-lane
//! waves, as NVIDIA's warps), compiled through the HIP-on-CUDA header (`hip_on_cuda/`, embedded
//! in the crate) by NVRTC or nvcc, launched with chorus-cuda, and checked against the corpus's
//! expected results. Cases the HIP target refuses (bfloat16, fp8, cuRAND, matches, warp
//! reductions) must be refused at a span; they are listed and counted.
//!
//! Skips, saying why, when no CUDA driver loads; fails instead when `CHORUS_REQUIRE_GPU=1`.

#[path = "../../chorus-cpu/tests/corpus/mod.rs"]
mod corpus;

use chorus_cuda::compile::compile_with;
use chorus_cuda::{ImageKind, KernelArg, LaunchConfig, Module, Settings};
use chorus_lang::cfamily::{PrintOptions, print_for_target};
use chorus_lang::target::Target;
use corpus::Outcome;

/// The corpus cases the HIP targets refuse, with what they lack.
const REFUSED: &[(&str, &str)] = &[
    ("atomics_float", "atomics on half"),
    ("curand_normal", "random-number"),
    ("curand_uniform", "random-number"),
    ("fp8_fp4", "8-bit floating point"),
    ("half_bf16", "bfloat16"),
    ("match", "warp match"),
    ("warp_reduce_ops", "warp reductions"),
];

fn run_hip_on_cuda(
    case: &corpus::Case,
    code: &str,
    names: &chorus_lang::cfamily::NameTable,
    settings: &Settings,
) -> Result<Outcome, String> {
    let image = compile_with(settings, code, case.name, Some(ImageKind::Cubin))
        .map_err(|e| format!("compile: {e}\n{code}"))?;
    let module = Module::load(&image.bytes, ImageKind::Cubin).map_err(|e| e.to_string())?;
    let c_kernel = names.function(case.kernel).ok_or("no kernel")?;
    let function = module.function(c_kernel).map_err(|e| e.to_string())?;
    let global = |name: &str| -> Result<(chorus_cuda::sys::CUdeviceptr, usize), String> {
        module
            .global(names.global(name).ok_or("no global")?)
            .map_err(|e| e.to_string())
    };
    for g in &case.globals {
        if let Some(init) = &g.init {
            let (ptr, size) = global(g.name)?;
            if size != init.len() {
                return Err(format!(
                    "global {}: {size} bytes, {} given",
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
        let mut m =
            chorus_cuda::DeviceMemory::alloc(data.len().max(1)).map_err(|e| e.to_string())?;
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
            // SAFETY: the address of a live allocation of the case's buffer.
            corpus::Arg::Buffer { .. } => unsafe {
                KernelArg::device_ptr(next.next().expect("one per buffer").ptr())
            },
            // SAFETY: the value's bytes, of the parameter's type (the corpus's table).
            corpus::Arg::Value { ty, bytes } => unsafe { KernelArg::raw(ty.clone(), bytes) },
        })
        .collect();
    let config = LaunchConfig::grid(case.grid)
        .block(case.block)
        .shared_mem(case.shared_mem as u32);
    // SAFETY: the arguments follow the kernel's parameters (the corpus's table, checked against
    // the same kernel by the CPU and CUDA runs of the corpus).
    unsafe { chorus_cuda::launch_unchecked(&function, &config, &args) }
        .map_err(|e| format!("launch: {e}"))?;
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
        let (ptr, size) = global(g.name)?;
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

#[test]
fn the_corpus_runs_as_hip_through_the_header_on_an_nvidia_gpu() {
    if !chorus_cuda::testing::gpu_available_or_skip("the_corpus_runs_as_hip_through_the_header") {
        return;
    }
    let headers = tempfile::tempdir().expect("a temporary directory");
    chorus_hip::write_hip_on_cuda_headers(headers.path()).expect("the headers");
    let mut settings = Settings::from_env().unwrap_or_default();
    settings.nvcc_options = vec![format!("-I{}", headers.path().display())];
    let target = Target::hip("gfx1030").unwrap();
    let cases = corpus::cases();
    let (failures, ran) = chorus_cuda::with_cuda(0, |_| {
        let mut failures = Vec::new();
        let mut ran = 0;
        for case in &cases {
            let result = (|| {
                let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
                    .map_err(|e| format!("compile: {e}"))?;
                let refusal = REFUSED.iter().find(|(n, _)| *n == case.name);
                match (
                    print_for_target(&module, &target, &PrintOptions::default()),
                    refusal,
                ) {
                    (Ok(printed), None) => {
                        ran += 1;
                        let outcome =
                            run_hip_on_cuda(case, &printed.code, &printed.names, &settings)?;
                        corpus::check(case, &outcome)
                    }
                    (Err(e), Some((_, what))) if e.message.contains(what) && e.span.line > 0 => {
                        Ok(())
                    }
                    (Err(e), _) => Err(format!("refused: {e}")),
                    (Ok(_), Some(_)) => Err("printed, but the HIP target should refuse it".into()),
                }
            })();
            if let Err(e) = result {
                failures.push(format!("{}: {e}", case.name));
            }
        }
        Ok::<_, chorus_cuda::Error>((failures, ran))
    })
    .expect("a CUDA context on device 0");
    println!(
        "{ran} of {} corpus cases ran as HIP on CUDA ({} refused by the HIP target), {} failed",
        cases.len(),
        REFUSED.len(),
        failures.len()
    );
    assert!(ran >= 40, "only {ran} cases ran");
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
