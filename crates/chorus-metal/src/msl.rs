//! MSL for a module, with what a dispatch must bind: runs on every host (the Linux conformance
//! shim uses it as the Metal runtime does).

use crate::error::{Error, Result};
use chorus_lang::cfamily::{self, NameTable, PrintOptions};
use chorus_lang::ir::{FunctionKind, Module, StructDef, StructField};
use chorus_lang::span::Span;
use chorus_lang::target::{LayoutRules, Target};
use chorus_lang::types::Type;
use std::sync::Arc;

/// A module printed as MSL, with the binding of every kernel.
#[derive(Clone, Debug)]
pub struct MslProgram {
    /// The MSL source.
    pub source: String,
    /// Kernel-language names to MSL names.
    pub names: NameTable,
    /// One per kernel, in the module's order.
    pub kernels: Vec<KernelBinding>,
    /// The module's globals as the host stores them (empty for MSL written by hand).
    pub globals: GlobalsLayout,
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
    /// The buffer index of the globals' structure ([`GlobalsLayout`]) when the kernel reads a
    /// global, itself or through the functions it calls: `params.len()`, after its arguments.
    pub globals: Option<usize>,
}

/// Where a module's globals lie in the structure that a Metal kernel reads them from
/// (`chorus_globals_t`, MSL's layout), and their initializers' bytes.
///
/// The host owns the structure's bytes: a program starts from [`GlobalsLayout::initial`], a
/// global is read and written there in C's layout ([`GlobalsLayout::read`],
/// [`GlobalsLayout::write`], which convert as a memory block's sync does), and every dispatch of
/// a kernel that reads globals binds the bytes at [`KernelBinding::globals`]. Metal compiles
/// nothing again when a global changes: program-scope `constant` variables are fixed in the
/// library, so they are not used.
#[derive(Clone, Debug, Default)]
pub struct GlobalsLayout {
    /// The globals: name, type, offset in the structure.
    fields: Vec<(Arc<str>, Type, usize)>,
    /// The structure's size under MSL's rules.
    size: usize,
    /// The initializers, laid out.
    initial: Vec<u8>,
    /// The module's structure definitions (C layout; MSL's is computed from them).
    structs: Vec<StructDef>,
}

impl GlobalsLayout {
    /// The layout of `module`'s globals, and their initializers' bytes: an error at a global's
    /// span when MSL cannot lay out its type or its initializer is no constant.
    fn of(module: &Module) -> chorus_lang::Result<GlobalsLayout> {
        if module.globals.is_empty() {
            return Ok(GlobalsLayout::default());
        }
        let span = |g: &chorus_lang::ir::Global| g.span.clone();
        let def = StructDef {
            name: Arc::from(cfamily::GLOBALS_TYPE),
            fields: module
                .globals
                .iter()
                .map(|g| StructField {
                    name: g.name.clone(),
                    ty: g.ty.clone(),
                    // The C offsets are not used: only MSL's layout is computed from `def`.
                    offset: 0,
                })
                .collect(),
            size: 0,
            align: 1,
            span: module.globals.first().map_or_else(Span::generated, span),
        };
        // With `def` among the structures, so that it may hold every one of them.
        let mut structs = module.structs.clone();
        structs.push(def.clone());
        let layout = LayoutRules::Msl
            .struct_layout(&def, &structs)
            .ok_or_else(|| {
                let bad = module
                    .globals
                    .iter()
                    .find(|g| LayoutRules::Msl.layout(&g.ty, &module.structs).is_none())
                    .map_or_else(|| def.span.clone(), span);
                chorus_lang::Error::new(&bad, "this global's type has no MSL layout")
            })?;
        let mut initial = vec![0u8; layout.size];
        for (g, &offset) in module.globals.iter().zip(&layout.offsets) {
            let bytes = LayoutRules::Msl
                .constant_bytes(&g.init, &g.ty, &module.structs)
                .ok_or_else(|| {
                    chorus_lang::Error::new(
                        &g.span,
                        format!("the initializer of `{}` has no MSL constant value", g.name),
                    )
                })?;
            initial[offset..offset + bytes.len()].copy_from_slice(&bytes);
        }
        Ok(GlobalsLayout {
            fields: module
                .globals
                .iter()
                .zip(&layout.offsets)
                .map(|(g, &o)| (g.name.clone(), g.ty.clone(), o))
                .collect(),
            size: layout.size,
            initial,
            structs: module.structs.clone(),
        })
    }

    /// The structure's first bytes: every global's initializer, in MSL's layout.
    pub fn initial(&self) -> &[u8] {
        &self.initial
    }

    /// True when the module has no globals.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The global `name`'s type, and its bytes in `values` (the structure's).
    fn field(&self, name: &str, values_len: usize) -> Result<(&Type, usize, usize)> {
        let access = |message: String| Error::GlobalAccess {
            name: name.to_string(),
            message,
        };
        let (_, ty, offset) = self
            .fields
            .iter()
            .find(|(n, _, _)| &**n == name)
            .ok_or_else(|| access("the program has no such global".into()))?;
        if values_len != self.size {
            return Err(access(format!(
                "the globals' structure has {} bytes, {values_len} were given",
                self.size
            )));
        }
        let (size, _) = LayoutRules::Msl
            .layout(ty, &self.structs)
            .ok_or_else(|| access(format!("a `{ty}` has no MSL layout")))?;
        Ok((ty, *offset, size))
    }

    /// Copies global `name` out of `values` (the structure's bytes) into `dst`, in C's layout
    /// (exactly the type's C size).
    pub fn read(&self, values: &[u8], name: &str, dst: &mut [u8]) -> Result<()> {
        let (ty, offset, size) = self.field(name, values.len())?;
        self.check_host_size(name, ty, dst.len())?;
        dst.fill(0);
        LayoutRules::Msl
            .convert(
                LayoutRules::C,
                ty,
                &self.structs,
                &values[offset..offset + size],
                dst,
            )
            .ok_or_else(|| Error::GlobalAccess {
                name: name.to_string(),
                message: format!("a `{ty}` has no C layout"),
            })
    }

    /// Stores `src` (a value of global `name`'s type in C's layout) into `values` (the
    /// structure's bytes), in MSL's layout.
    pub fn write(&self, values: &mut [u8], name: &str, src: &[u8]) -> Result<()> {
        let (ty, offset, size) = self.field(name, values.len())?;
        self.check_host_size(name, ty, src.len())?;
        let dst = &mut values[offset..offset + size];
        dst.fill(0);
        LayoutRules::C
            .convert(LayoutRules::Msl, ty, &self.structs, src, dst)
            .ok_or_else(|| Error::GlobalAccess {
                name: name.to_string(),
                message: format!("a `{ty}` has no MSL layout"),
            })
    }

    fn check_host_size(&self, name: &str, ty: &Type, len: usize) -> Result<()> {
        match LayoutRules::C.layout(ty, &self.structs) {
            Some((size, _)) if size == len => Ok(()),
            Some((size, _)) => Err(Error::GlobalAccess {
                name: name.to_string(),
                message: format!("a `{ty}` has {size} bytes on the host, {len} were given"),
            }),
            None => Err(Error::GlobalAccess {
                name: name.to_string(),
                message: format!("a `{ty}` has no C layout"),
            }),
        }
    }
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
            globals: uses
                .get(i)
                .is_some_and(|u| u.globals)
                .then_some(f.params.len()),
        })
        .collect::<Vec<KernelBinding>>();
    // The globals' structure takes the buffer index after a kernel's arguments.
    let kernel_functions = module
        .functions
        .iter()
        .filter(|f| f.kind == FunctionKind::Kernel);
    for (k, f) in kernels.iter().zip(kernel_functions) {
        if let (Some(index), Some(max)) = (k.globals, target.max_kernel_params)
            && index >= max as usize
        {
            return Err(chorus_lang::Error::new(
                &f.span,
                format!(
                    "kernel `{}` takes {index} parameters and reads globals, which the {target} \
                     passes after them at buffer index {index}, beyond its {max} buffers; pass \
                     the parameters in a structure or through a pointer",
                    k.name
                ),
            ));
        }
    }
    Ok(MslProgram {
        source: printed.code,
        names: printed.names,
        kernels,
        globals: GlobalsLayout::of(module)?,
    })
}

#[cfg(test)]
mod tests {
    use super::print_msl;
    use chorus_lang::target::Target;

    fn kernel_with(params: usize, reads_global: bool) -> String {
        let list: Vec<String> = (0..params).map(|i| format!("(p{i} int)")).collect();
        let value = if reads_global { "g" } else { "p0" };
        format!(
            "(defglobal g 5 :constant)\n(defkernel k (void ((out int*) {}))\n  \
             (set (aref out 0) {value}))",
            list.join(" ")
        )
    }

    #[test]
    fn the_globals_take_the_buffer_after_the_arguments_within_metals_31() {
        let metal = Target::metal(8).unwrap();
        let print = |text: &str| {
            chorus_lang::compile_str_for(text, "k.lisp", &metal).and_then(|m| print_msl(&m, &metal))
        };
        let ok = print(&kernel_with(29, true)).unwrap();
        assert_eq!(ok.kernel("k").unwrap().globals, Some(30));
        assert_eq!(ok.globals.initial(), 5i32.to_le_bytes());
        assert_eq!(
            print(&kernel_with(29, false))
                .unwrap()
                .kernel("k")
                .unwrap()
                .globals,
            None
        );
        // 31 arguments fit only without globals.
        assert!(print(&kernel_with(30, false)).is_ok());
        let e = print(&kernel_with(30, true)).unwrap_err();
        assert_eq!((e.span.line, e.span.column), (2, 1), "{e}");
        assert!(
            e.message.contains("buffer index 31") && e.message.contains("kernel `k`"),
            "{e}"
        );
    }
}
