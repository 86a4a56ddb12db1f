//! MSL for a module, with what a dispatch must bind: runs on every host (the Linux conformance
//! shim uses it as the Metal runtime does).

use crate::error::{Error, Result};
use chorus_lang::cfamily::{self, AddressSpace, NameTable, PrintOptions};
use chorus_lang::ir::{FunctionKind, Module, StructDef, StructField};
use chorus_lang::span::Span;
use chorus_lang::target::{FoldedConstants, LayoutRules, Target};
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
    /// The module's `:constant` globals as the host stores them (empty for MSL written by
    /// hand): bytes it binds at each dispatch.
    pub constant_globals: GlobalsLayout,
    /// The module's `:device` globals as the host lays them out (empty for MSL written by
    /// hand): the contents of one buffer per loaded program, which kernels write.
    pub device_globals: GlobalsLayout,
}

impl MslProgram {
    /// The binding of the kernel named `name` in the kernel text.
    pub fn kernel(&self, name: &str) -> Option<&KernelBinding> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The structure that holds global `name` (by its kernel-language name): the constant or
    /// the device one; `None` when the program has no such global.
    pub fn globals_of(&self, name: &str) -> Option<&GlobalsLayout> {
        [&self.constant_globals, &self.device_globals]
            .into_iter()
            .find(|g| g.contains(name))
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
    /// The buffer index of the constant globals' structure ([`MslProgram::constant_globals`])
    /// when the kernel reads a `:constant` global, itself or through the functions it calls:
    /// `params.len()`, after its arguments.
    pub constant_globals: Option<usize>,
    /// The buffer index of the device globals' buffer ([`MslProgram::device_globals`]) when the
    /// kernel reads or writes a `:device` global, itself or through the functions it calls:
    /// after its arguments and the constant globals' structure.
    pub device_globals: Option<usize>,
}

/// Where some of a module's globals lie in a structure that a Metal kernel reaches them through
/// (MSL's layout), and their initializers' bytes: the `:constant` globals in
/// `chorus_globals_t`, the `:device` ones in `chorus_device_globals_t`
/// ([`chorus_lang::cfamily::globals_structure`]).
///
/// The host owns the structures' bytes: a program starts from [`GlobalsLayout::initial`], a
/// global is read and written there in C's layout ([`GlobalsLayout::read`],
/// [`GlobalsLayout::write`], or one field at a time with [`GlobalsLayout::field_range`],
/// [`GlobalsLayout::encode`] and [`GlobalsLayout::decode`], which convert as a memory block's
/// sync does). Every dispatch of a kernel that reads constant globals binds their bytes at
/// [`KernelBinding::constant_globals`]; the device globals live in a buffer per loaded program,
/// bound at [`KernelBinding::device_globals`], which kernels write and the host reads and
/// writes in place. Metal compiles nothing again when a global changes: program-scope
/// `constant` variables are fixed in the library, so they are not used.
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
    /// The layout of `module`'s globals whose storage is in `space` (`constant` or `device`),
    /// and their initializers' bytes: an error at a global's span when MSL cannot lay out its
    /// type or its initializer is no constant.
    fn of(module: &Module, space: AddressSpace) -> chorus_lang::Result<GlobalsLayout> {
        let globals: Vec<&chorus_lang::ir::Global> = module
            .globals
            .iter()
            .filter(|g| cfamily::spaces::global_space(&g.qualifiers) == space)
            .collect();
        let Some((type_name, _)) =
            cfamily::globals_structure(space).filter(|_| !globals.is_empty())
        else {
            return Ok(GlobalsLayout::default());
        };
        let span = |g: &&chorus_lang::ir::Global| g.span.clone();
        let def = StructDef {
            name: Arc::from(type_name),
            fields: globals
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
            span: globals.first().map_or_else(Span::generated, span),
        };
        // With `def` among the structures, so that it may hold every one of them.
        let mut structs = module.structs.clone();
        structs.push(def.clone());
        let layout = LayoutRules::Msl
            .struct_layout(&def, &structs)
            .ok_or_else(|| {
                let bad = globals
                    .iter()
                    .find(|g| LayoutRules::Msl.layout(&g.ty, &module.structs).is_none())
                    .map_or_else(|| def.span.clone(), span);
                chorus_lang::Error::new(&bad, "this global's type has no MSL layout")
            })?;
        let mut initial = vec![0u8; layout.size];
        for (g, &offset) in globals.iter().zip(&layout.offsets) {
            let bytes = LayoutRules::Msl
                .constant_bytes(g, &module.structs, &FoldedConstants)
                .map_err(|_| {
                    chorus_lang::Error::new(
                        &g.span,
                        format!("the initializer of `{}` has no MSL constant value", g.name),
                    )
                })?;
            initial[offset..offset + bytes.len()].copy_from_slice(&bytes);
        }
        Ok(GlobalsLayout {
            fields: globals
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

    /// True when the structure holds no global.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The structure's size in bytes (MSL's layout; 0 without globals).
    pub fn size(&self) -> usize {
        self.size
    }

    /// True when global `name` is one of the structure's fields.
    pub fn contains(&self, name: &str) -> bool {
        self.fields.iter().any(|(n, _, _)| &**n == name)
    }

    /// The global `name`'s type, and where its bytes lie in the structure.
    fn field(&self, name: &str) -> Result<(&Type, std::ops::Range<usize>)> {
        let (_, ty, offset) = self
            .fields
            .iter()
            .find(|(n, _, _)| &**n == name)
            .ok_or_else(|| access(name, "the program has no such global".into()))?;
        let (size, _) = LayoutRules::Msl
            .layout(ty, &self.structs)
            .ok_or_else(|| access(name, format!("a `{ty}` has no MSL layout")))?;
        Ok((ty, *offset..offset + size))
    }

    /// Where global `name`'s bytes lie in the structure (its MSL size, from its offset).
    pub fn field_range(&self, name: &str) -> Result<std::ops::Range<usize>> {
        Ok(self.field(name)?.1)
    }

    /// `src`, a value of global `name`'s type in C's layout (exactly its C size), as the bytes
    /// of its field in MSL's layout (padding zeroed): what is stored at
    /// [`GlobalsLayout::field_range`].
    pub fn encode(&self, name: &str, src: &[u8]) -> Result<Vec<u8>> {
        let (ty, range) = self.field(name)?;
        self.check_host_size(name, ty, src.len())?;
        let mut field = vec![0u8; range.len()];
        LayoutRules::C
            .convert(LayoutRules::Msl, ty, &self.structs, src, &mut field)
            .ok_or_else(|| access(name, format!("a `{ty}` has no MSL layout")))?;
        Ok(field)
    }

    /// The reverse of [`GlobalsLayout::encode`]: `field`, the bytes at global `name`'s
    /// [`GlobalsLayout::field_range`], into `dst` in C's layout (exactly the type's C size).
    pub fn decode(&self, name: &str, field: &[u8], dst: &mut [u8]) -> Result<()> {
        let (ty, range) = self.field(name)?;
        self.check_host_size(name, ty, dst.len())?;
        if field.len() != range.len() {
            return Err(access(
                name,
                format!(
                    "its field has {} bytes, {} were given",
                    range.len(),
                    field.len()
                ),
            ));
        }
        dst.fill(0);
        LayoutRules::Msl
            .convert(LayoutRules::C, ty, &self.structs, field, dst)
            .ok_or_else(|| access(name, format!("a `{ty}` has no C layout")))
    }

    /// The structure's bytes `values` must have its size.
    fn check_values(&self, name: &str, len: usize) -> Result<()> {
        if len == self.size {
            return Ok(());
        }
        Err(access(
            name,
            format!(
                "the globals' structure has {} bytes, {len} were given",
                self.size
            ),
        ))
    }

    /// Copies global `name` out of `values` (the structure's bytes) into `dst`, in C's layout
    /// (exactly the type's C size).
    pub fn read(&self, values: &[u8], name: &str, dst: &mut [u8]) -> Result<()> {
        self.check_values(name, values.len())?;
        let range = self.field_range(name)?;
        self.decode(name, &values[range], dst)
    }

    /// Stores `src` (a value of global `name`'s type in C's layout) into `values` (the
    /// structure's bytes), in MSL's layout.
    pub fn write(&self, values: &mut [u8], name: &str, src: &[u8]) -> Result<()> {
        self.check_values(name, values.len())?;
        let field = self.encode(name, src)?;
        values[self.field_range(name)?].copy_from_slice(&field);
        Ok(())
    }

    fn check_host_size(&self, name: &str, ty: &Type, len: usize) -> Result<()> {
        match LayoutRules::C.layout(ty, &self.structs) {
            Some((size, _)) if size == len => Ok(()),
            Some((size, _)) => Err(access(
                name,
                format!("a `{ty}` has {size} bytes on the host, {len} were given"),
            )),
            None => Err(access(name, format!("a `{ty}` has no C layout"))),
        }
    }
}

/// An error reaching global `name` from the host.
fn access(name: &str, message: String) -> Error {
    Error::GlobalAccess {
        name: name.to_string(),
        message,
    }
}

/// Validates `module` for `target` (a Metal target) and prints it as MSL. A feature the target
/// lacks is an error at its span, as is a pointer that would need two address spaces.
pub fn print_msl(module: &Module, target: &Target) -> chorus_lang::Result<MslProgram> {
    let printed = cfamily::print_for_target(module, target, &PrintOptions::default())?;
    let uses = cfamily::spaces::function_uses(module);
    let mut kernels = module
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
            constant_globals: None,
            device_globals: None,
        })
        .collect::<Vec<KernelBinding>>();
    // The globals' structures take the buffer indices after a kernel's arguments, in the
    // order the printer declares them (`FunctionUses::global_spaces`).
    let kernel_functions = module
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| f.kind == FunctionKind::Kernel);
    for (k, (i, f)) in kernels.iter_mut().zip(kernel_functions) {
        let spaces = uses.get(i).map(|u| u.global_spaces()).unwrap_or_default();
        for (n, space) in spaces.iter().enumerate() {
            let index = f.params.len() + n;
            match space {
                AddressSpace::Constant => k.constant_globals = Some(index),
                _ => k.device_globals = Some(index),
            }
            if let Some(max) = target.max_kernel_params
                && index >= max as usize
            {
                return Err(chorus_lang::Error::new(
                    &f.span,
                    format!(
                        "kernel `{}` takes {} parameters and uses {} globals, which the \
                         {target} passes after them at buffer index {index}, beyond its {max} \
                         buffers; pass the parameters in a structure or through a pointer",
                        k.name,
                        f.params.len(),
                        space.keyword()
                    ),
                ));
            }
        }
    }
    Ok(MslProgram {
        source: printed.code,
        names: printed.names,
        kernels,
        constant_globals: GlobalsLayout::of(module, AddressSpace::Constant)?,
        device_globals: GlobalsLayout::of(module, AddressSpace::Device)?,
    })
}

#[cfg(test)]
mod tests {
    use super::print_msl;
    use chorus_lang::target::Target;

    /// A kernel of `params + 1` parameters that reads the constant global `g` and, with
    /// `device`, adds to the device global `d`.
    fn kernel_with(params: usize, reads_global: bool, device: bool) -> String {
        let list: Vec<String> = (0..params).map(|i| format!("(p{i} int)")).collect();
        let value = if reads_global { "g" } else { "p0" };
        let write = if device { "\n  (set d (+ d 1))" } else { "" };
        format!(
            "(defglobal g 5 :constant)\n(defglobal d 7)\n(defkernel k (void ((out int*) {}))\n  \
             (set (aref out 0) {value}){write})",
            list.join(" ")
        )
    }

    fn print(text: &str) -> chorus_lang::Result<super::MslProgram> {
        let metal = Target::metal(8).unwrap();
        chorus_lang::compile_str_for(text, "k.lisp", &metal).and_then(|m| print_msl(&m, &metal))
    }

    #[test]
    fn the_globals_take_the_buffers_after_the_arguments_within_metals_31() {
        let ok = print(&kernel_with(29, true, false)).unwrap();
        let k = ok.kernel("k").unwrap();
        assert_eq!((k.constant_globals, k.device_globals), (Some(30), None));
        assert_eq!(ok.constant_globals.initial(), 5i32.to_le_bytes());
        assert_eq!(ok.device_globals.initial(), 7i32.to_le_bytes());
        let k = print(&kernel_with(29, false, false)).unwrap();
        assert_eq!(k.kernel("k").unwrap().constant_globals, None);
        // Both structures: the device one after the constant one.
        let both = print(&kernel_with(28, true, true)).unwrap();
        let k = both.kernel("k").unwrap();
        assert_eq!((k.constant_globals, k.device_globals), (Some(29), Some(30)));
        let only = print(&kernel_with(29, false, true)).unwrap();
        let k = only.kernel("k").unwrap();
        assert_eq!((k.constant_globals, k.device_globals), (None, Some(30)));
        // 31 arguments fit only without globals.
        assert!(print(&kernel_with(30, false, false)).is_ok());
        for (params, constant, device, space) in [
            (30, true, false, "constant"),
            (29, true, true, "device"),
            (30, false, true, "device"),
        ] {
            let e = print(&kernel_with(params, constant, device)).unwrap_err();
            assert_eq!((e.span.line, e.span.column), (3, 1), "{e}");
            assert!(
                e.message.contains("buffer index 31")
                    && e.message.contains("kernel `k`")
                    && e.message.contains(&format!("uses {space} globals")),
                "{e}"
            );
        }
    }

    #[test]
    fn each_global_is_in_the_structure_of_its_space() {
        let program = print(
            "(defkernel-struct pv (k int8) (p float3))\n\
             (defglobal c 2.5 :constant)\n(defglobal v (make-pv (int8 -3) (float3 1.0 2.0 3.0)))\n\
             (defglobal n 9 :device)\n\
             (defkernel k (void ((out float*)))\n  (set n (+ n 1))\n  \
             (set (aref out 0) (+ c (float3-z (pv-p v)))))",
        )
        .unwrap();
        let (constant, device) = (&program.constant_globals, &program.device_globals);
        assert!(constant.contains("c") && !constant.contains("v"));
        assert!(device.contains("v") && device.contains("n") && !device.contains("c"));
        assert!(program.globals_of("n").is_some_and(|g| g.contains("n")));
        assert!(program.globals_of("nothing").is_none());
        // MSL's layout: `pv` is 32 bytes (its float3 at 16), `n` after it.
        assert_eq!(device.size(), 48);
        assert_eq!(device.field_range("n").unwrap(), 32..36);
        assert_eq!(device.field_range("v").unwrap(), 0..32);
        let init = device.initial();
        assert_eq!(init[0], 0xFD);
        assert_eq!(init[24..28], 3.0f32.to_le_bytes());
        assert_eq!(init[32..36], 9i32.to_le_bytes());
        // A field at a time, in C's layout on the host.
        let field = device.encode("n", &(-4i32).to_le_bytes()).unwrap();
        assert_eq!(field, (-4i32).to_le_bytes());
        let mut back = [0u8; 16];
        device.decode("v", &init[0..32], &mut back).unwrap();
        assert_eq!(back[0], 0xFD);
        assert_eq!(back[12..16], 3.0f32.to_le_bytes());
        let e = device.decode("v", &init[0..16], &mut back).unwrap_err();
        assert!(e.to_string().contains("32 bytes"), "{e}");
        let e = device.encode("c", &[0; 4]).unwrap_err();
        assert!(e.to_string().contains("no such global"), "{e}");
    }
}
