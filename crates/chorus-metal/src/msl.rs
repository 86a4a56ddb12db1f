//! MSL for a module, with what a dispatch must bind: runs on every host (the Linux conformance
//! shim uses it as the Metal runtime does).

use chorus_lang::cfamily::{self, NameTable, PrintOptions};
use chorus_lang::ir::{FunctionKind, Module};
use chorus_lang::target::Target;
use chorus_lang::types::Type;

/// A module printed as MSL, with the binding of every kernel.
#[derive(Clone, Debug)]
pub struct MslProgram {
    /// The MSL source.
    pub source: String,
    /// Kernel-language names to MSL names.
    pub names: NameTable,
    /// One per kernel, in the module's order.
    pub kernels: Vec<KernelBinding>,
}

impl MslProgram {
    /// The binding of the kernel named `name` in the kernel text.
    pub fn kernel(&self, name: &str) -> Option<&KernelBinding> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// How a kernel's arguments reach it: argument `i` at buffer index `i` (the MSL dialect's
/// `[[buffer(i)]]`), pointers as buffers, values as bytes (`setBytes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelBinding {
    /// The kernel-language name.
    pub name: String,
    /// The MSL function name.
    pub function: String,
    /// The parameters' types, in order (pointers are buffers, everything else bytes).
    pub params: Vec<Type>,
    /// Whether the kernel takes dynamic threadgroup memory (`[[threadgroup(0)]]`), sized by
    /// the launch's dynamic shared memory.
    pub dynamic_threadgroup_memory: bool,
}

/// Validates `module` for `target` (a Metal target) and prints it as MSL. A feature the target
/// lacks is an error at its span, as is a pointer that would need two address spaces.
pub fn print_msl(module: &Module, target: &Target) -> chorus_lang::Result<MslProgram> {
    let printed = cfamily::print_for_target(module, target, &PrintOptions::default())?;
    let uses = cfamily::spaces::function_uses(module);
    let kernels = module
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind == FunctionKind::Kernel)
        .map(|(i, f)| KernelBinding {
            name: f.name.to_string(),
            function: printed.names.functions()[i].clone(),
            params: f
                .params
                .iter()
                .map(|p| f.local(p.local).map_or(Type::Void, |l| l.ty.clone()))
                .collect(),
            dynamic_threadgroup_memory: uses.get(i).is_some_and(|u| u.dynamic_shared),
        })
        .collect();
    Ok(MslProgram {
        source: printed.code,
        names: printed.names,
        kernels,
    })
}
