//! Runs a corpus case on the CPU executor.

use super::{Arg, Case, Outcome};
use chorus_cpu::{CpuModule, DeviceBuffer, KernelArg, KernelPath, LaunchConfig};
use std::sync::Arc;

/// Prepares `module` on the CPU executor, launches the case and collects what it left. Errors
/// say which step failed (`prepare:` carries the executor's `Unsupported` refusals).
pub fn run(case: &Case, module: &chorus_lang::ir::Module) -> Result<Outcome, String> {
    run_for_target(case, module, &chorus_lang::target::Target::cpu())
}

/// [`run`] on the CPU executor prepared for `target` (its checks and its warp width: 64-lane
/// waves for AMD CDNA's targets).
pub fn run_for_target(
    case: &Case,
    module: &chorus_lang::ir::Module,
    target: &chorus_lang::target::Target,
) -> Result<Outcome, String> {
    run_on_path(case, module, target, false).map(|(outcome, _)| outcome)
}

/// [`run_for_target`] on the interpreter (`interpret`) or on the default path (native code
/// where the kernel compiles), with the path the kernel took.
pub fn run_on_path(
    case: &Case,
    module: &chorus_lang::ir::Module,
    target: &chorus_lang::target::Target,
    interpret: bool,
) -> Result<(Outcome, KernelPath), String> {
    let mut module = CpuModule::for_target(Arc::new(module.clone()), target)
        .map_err(|e| format!("prepare: {e}"))?;
    module.set_interpreted(interpret);
    let path = module.kernel_path(case.kernel).map_err(|e| e.to_string())?;
    module.set_printf_output(Box::new(std::io::sink()));
    for g in &case.globals {
        if let Some(init) = &g.init {
            module
                .set_global_bytes(g.name, init)
                .map_err(|e| e.to_string())?;
        }
    }
    let buffers = case
        .buffer_data()
        .map(|data| DeviceBuffer::from_bytes(data).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut next = buffers.iter();
    let args: Vec<KernelArg<'_>> = case
        .args
        .iter()
        .map(|a| match a {
            Arg::Buffer { .. } => {
                KernelArg::Buffer(next.next().expect("one buffer per buffer argument"))
            }
            Arg::Value { ty, bytes } => KernelArg::Value {
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
    let globals = case
        .globals
        .iter()
        .map(|g| module.global_bytes(g.name).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    Ok((
        Outcome {
            buffers: buffers.iter().map(|b| b.to_bytes()).collect(),
            globals,
        },
        path,
    ))
}
