//! The chorus-hip runtime end to end on an NVIDIA GPU: the HIP-on-CUDA runtime
//! (`hip_on_cuda/runtime/`, a `libamdhip64.so` over the CUDA driver and NVRTC) is built with
//! `cc`, put on `ROCM_PATH`, and every corpus case goes through chorus-hip's own code path —
//! loader, device query (`gcnArchName` from ROCm 6's `hipDeviceProp_tR0600` layout), hipRTC
//! through the two-level cache, module load, globals, memory, launch on a stream, events,
//! synchronise — with the corpus's expected results. Cases the HIP target refuses are refused
//! at a span, as in `hip_on_cuda_gpu.rs`.
//!
//! Skips, saying why, when no CUDA driver loads; fails instead when `CHORUS_REQUIRE_GPU=1`.

#[path = "../../chorus-cpu/tests/corpus/mod.rs"]
mod corpus;
#[path = "support/hip_on_cuda_runtime.rs"]
mod hip_on_cuda_runtime;

use chorus_hip::{Device, DeviceMemory, Event, KernelArg, LaunchConfig, Program, Stream};
use corpus::Outcome;
use std::sync::Arc;

/// The corpus cases the HIP targets refuse, with what they lack (as in `hip_on_cuda_gpu.rs`).
const REFUSED: &[(&str, &str)] = &[
    ("atomics_float", "atomics on half"),
    ("curand_normal", "random-number"),
    ("curand_uniform", "random-number"),
    ("fp8_fp4", "8-bit floating point"),
    ("half_bf16", "bfloat16"),
    ("match", "warp match"),
    ("warp_reduce_ops", "warp reductions"),
];

fn run_case(
    case: &corpus::Case,
    program: &Program,
    device: &Device,
    stream: &Stream,
) -> chorus_hip::Result<Outcome> {
    for g in &case.globals {
        if let Some(init) = &g.init {
            program.write_global(g.name, init)?;
        }
    }
    let buffer_data: Vec<&Vec<u8>> = case.buffer_data().collect();
    let mut memories = Vec::new();
    for data in &buffer_data {
        let mut m = DeviceMemory::alloc(device, data.len().max(1))?;
        if !data.is_empty() {
            let mut padded = data.to_vec();
            padded.resize(m.len(), 0);
            m.copy_from_host(&padded)?;
        }
        memories.push(m);
    }
    let mut next = memories.iter();
    let args: Vec<KernelArg<'_>> = case
        .args
        .iter()
        .map(|a| match a {
            corpus::Arg::Buffer { .. } => KernelArg::Memory(next.next().expect("one per buffer")),
            corpus::Arg::Value { ty, bytes } => KernelArg::Value {
                ty: ty.clone(),
                bytes: bytes.clone(),
            },
        })
        .collect();
    let config = LaunchConfig {
        grid: case.grid,
        block: case.block,
        shared_mem: case.shared_mem as u32,
    };
    let (start, stop) = (Event::new()?, Event::new()?);
    start.record(Some(stream))?;
    program.launch(case.kernel, &config, &args, Some(stream))?;
    stop.record(Some(stream))?;
    stop.synchronize()?;
    stream.synchronize()?;
    let ms = stop.elapsed_ms_since(&start)?;
    assert!(ms >= 0.0, "{}: elapsed {ms} ms", case.name);
    let mut buffers = Vec::new();
    for (m, data) in memories.iter().zip(&buffer_data) {
        let mut out = vec![0u8; m.len()];
        m.copy_to_host(&mut out)?;
        out.truncate(data.len());
        buffers.push(out);
    }
    let mut globals = Vec::new();
    for g in &case.globals {
        let (_, size) = program.global(g.name)?;
        let mut out = vec![0u8; size];
        program.read_global(g.name, &mut out)?;
        globals.push(out);
    }
    Ok(Outcome { buffers, globals })
}

#[test]
fn the_corpus_runs_through_the_chorus_hip_runtime_on_an_nvidia_gpu() {
    if !chorus_cuda::testing::gpu_available_or_skip(
        "the_corpus_runs_through_the_chorus_hip_runtime",
    ) {
        return;
    }
    let root = tempfile::tempdir().expect("a temporary directory");
    let include = hip_on_cuda_runtime::build(root.path()).expect("the HIP-on-CUDA runtime");
    // SAFETY: this binary's only test sets these before anything reads the environment on
    // another thread (chorus-hip reads ROCM_PATH when it first loads the runtime, below).
    unsafe {
        std::env::set_var("ROCM_PATH", root.path());
        std::env::set_var("CHORUS_HIP_ON_CUDA_INCLUDE", include);
        std::env::set_var("CHORUS_CACHE_DIR", root.path().join("cache"));
    }
    let library = chorus_hip::hip_library().expect("the HIP-on-CUDA runtime loads");
    assert!(
        library.starts_with(&*root.path().to_string_lossy()),
        "{library}"
    );
    assert!(chorus_hip::device_count().expect("devices") > 0);
    let device = Device::new(0).expect("device 0");
    let p = device.properties();
    println!(
        "{} through {library}: gcnArchName {}, {}-lane waves, {:.1} GiB, {} CUs",
        p.name,
        p.gcn_arch_name,
        p.warp_size,
        p.total_memory as f64 / f64::from(1u32 << 30),
        p.multiprocessors
    );
    // Read from ROCm 6's layout (the runtime exports hipGetDevicePropertiesR0600).
    assert_eq!(p.gcn_arch_name, "gfx1030");
    assert_eq!(device.target().warp_width, 32);
    assert!(p.name.ends_with("(HIP on CUDA)"), "{}", p.name);
    let stream = Stream::new(&device).expect("a stream");
    let cases = corpus::cases();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &cases {
        let refusal = REFUSED.iter().find(|(n, _)| *n == case.name);
        let result = (|| {
            let module = chorus_lang::compile_str(case.source, &format!("{}.lisp", case.name))
                .map_err(|e| format!("compile: {e}"))?;
            match (Program::from_ir(Arc::new(module), &device), refusal) {
                (Ok(program), None) => {
                    ran += 1;
                    let outcome =
                        run_case(case, &program, &device, &stream).map_err(|e| e.to_string())?;
                    corpus::check(case, &outcome)
                }
                (Err(chorus_hip::Error::Lang(e)), Some((_, what)))
                    if e.message.contains(what) && e.span.line > 0 =>
                {
                    Ok(())
                }
                (Err(e), _) => Err(format!("{e}")),
                (Ok(_), Some(_)) => Err("compiled, but the HIP target should refuse it".into()),
            }
        })();
        if let Err(e) = result {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    // A second stream waits for the first's work (`hipStreamWaitEvent`, the facade's
    // `Stream::wait_for` on HIP), then finishes.
    let second = Stream::new(&device).expect("a second stream");
    let event = Event::new().expect("an event");
    event.record(Some(&stream)).expect("recorded");
    second.wait_event(&event).expect("hipStreamWaitEvent");
    second.synchronize().expect("the waiting stream finishes");
    device.synchronize().expect("synchronize");
    println!(
        "{ran} of {} corpus cases ran through chorus-hip on the HIP-on-CUDA runtime ({} refused), {} failed",
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
    // The disk cache holds what was compiled: a second program of the first case that ran is a
    // hit (same code object), and loads again.
    let first = cases
        .iter()
        .find(|c| !REFUSED.iter().any(|(n, _)| *n == c.name))
        .expect("a case that runs");
    // The same text under the same name (the name is in the printed `#line` directives, so in
    // the cache key).
    let module =
        chorus_lang::compile_str(first.source, &format!("{}.lisp", first.name)).expect("compiles");
    let entries = std::fs::read_dir(root.path().join("cache"))
        .map(|d| d.count())
        .unwrap_or(0);
    Program::from_ir(Arc::new(module), &device).expect("cached program loads");
    let after = std::fs::read_dir(root.path().join("cache"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(entries, after, "a cache hit writes nothing");
    assert!(
        entries >= ran,
        "{entries} cache entries for {ran} compiled modules"
    );
}
