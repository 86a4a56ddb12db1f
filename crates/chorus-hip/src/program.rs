//! Kernel text or IR to a loaded module on one device: validate for the device's target, print
//! HIP C++, compile with hipRTC (cached), load, and find kernels and globals through the
//! printer's name table.

use crate::compile::hiprtc_compile;
use crate::error::{Error, Result};
use crate::runtime::{self, Device, DeviceMemory, Function, LaunchConfig, Module, Stream};
use chorus_lang::cfamily::{NameTable, PrintOptions, print_for_target};
use chorus_lang::ir;
use chorus_lang::types::Type;
use std::ffi::c_void;
use std::sync::Arc;

/// A module compiled and loaded on one device.
#[derive(Debug)]
pub struct Program {
    ir: Arc<ir::Module>,
    names: NameTable,
    source: String,
    module: Module,
    device: usize,
}

/// One launch argument.
#[derive(Debug)]
pub enum KernelArg<'a> {
    /// Device memory, for a pointer parameter.
    Memory(&'a DeviceMemory),
    /// A value's bytes, for a parameter of type `ty`.
    Value {
        /// The parameter's kernel type.
        ty: Type,
        /// The value's bytes, in the device's layout.
        bytes: Vec<u8>,
    },
}

impl Program {
    /// Checks `text` (named `file` in errors), validates it for `device`'s target, and
    /// compiles and loads it.
    pub fn from_text(text: &str, file: &str, device: &Device) -> Result<Program> {
        let module = chorus_lang::compile_str_for(text, file, device.target())?;
        Program::from_ir(Arc::new(module), device)
    }

    /// Validates `module` for `device`'s target, prints it as HIP C++ (with `#line`
    /// directives, so hipRTC's log names the kernel text's lines), compiles it for the device's
    /// `gcnArchName` through the cache, and loads it.
    pub fn from_ir(module: Arc<ir::Module>, device: &Device) -> Result<Program> {
        let options = PrintOptions {
            line_directives: true,
        };
        let printed = print_for_target(&module, device.target(), &options)?;
        let name = module
            .functions
            .first()
            .map_or("module", |f| &*f.name)
            .to_string();
        let code = hiprtc_compile(&printed.code, &name, &device.properties().gcn_arch_name)?;
        let loaded = Module::load(device, &code)?;
        Ok(Program {
            ir: module,
            names: printed.names,
            source: printed.code,
            module: loaded,
            device: device.ordinal(),
        })
    }

    /// The HIP C++ it was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The checked module.
    pub fn ir(&self) -> &ir::Module {
        &self.ir
    }

    /// The kernel named `name` in the kernel text.
    pub fn function(&self, name: &str) -> Result<Function> {
        let c_name = self.names.function(name).ok_or_else(|| Error::NotFound {
            what: "kernel",
            name: name.into(),
        })?;
        self.module.function(c_name)
    }

    /// The device address and size of the global named `name` in the kernel text.
    pub fn global(&self, name: &str) -> Result<(*mut c_void, usize)> {
        let c_name = self.names.global(name).ok_or_else(|| Error::NotFound {
            what: "global",
            name: name.into(),
        })?;
        self.module.global(c_name)
    }

    /// Copies global `name` (exactly its size) into `out`.
    pub fn read_global(&self, name: &str, out: &mut [u8]) -> Result<()> {
        let (ptr, size) = self.global(name)?;
        if size != out.len() {
            return Err(Error::Invalid(format!(
                "global `{name}` has {size} bytes, {} asked for",
                out.len()
            )));
        }
        // SAFETY: `ptr` is the global's address in the loaded module, `size` bytes long.
        unsafe { runtime::copy_raw(out.as_mut_ptr().cast(), ptr, size, true) }
    }

    /// Sets global `name` from `data` (exactly its size).
    pub fn write_global(&self, name: &str, data: &[u8]) -> Result<()> {
        let (ptr, size) = self.global(name)?;
        if size != data.len() {
            return Err(Error::Invalid(format!(
                "global `{name}` has {size} bytes, {} given",
                data.len()
            )));
        }
        // SAFETY: `ptr` is the global's address in the loaded module, `size` bytes long.
        unsafe { runtime::copy_raw(ptr, data.as_ptr().cast_mut().cast(), size, false) }
    }

    /// Launches kernel `name` with `args`, checked against its parameters (count, pointer or
    /// value, type, size, device), on `stream` (`None`: the default stream).
    pub fn launch(
        &self,
        name: &str,
        config: &LaunchConfig,
        args: &[KernelArg<'_>],
        stream: Option<&Stream>,
    ) -> Result<()> {
        let (_, function) = self.ir.function(name).ok_or_else(|| Error::NotFound {
            what: "kernel",
            name: name.into(),
        })?;
        let params: Vec<&Type> = function
            .params
            .iter()
            .map(|p| &function[p.local].ty)
            .collect();
        if params.len() != args.len() {
            return Err(Error::Invalid(format!(
                "`{name}` takes {} arguments, {} given",
                params.len(),
                args.len()
            )));
        }
        let mut pointers: Vec<*mut c_void> = Vec::with_capacity(args.len());
        let mut values: Vec<Vec<u8>> = Vec::with_capacity(args.len());
        for (i, (param, arg)) in params.iter().zip(args).enumerate() {
            match arg {
                KernelArg::Memory(m) if param.pointee().is_some() && m.device() == self.device => {
                    values.push((m.as_ptr() as usize).to_ne_bytes().to_vec());
                }
                KernelArg::Value { ty, bytes }
                    if ty == *param && Some(bytes.len()) == self.ir.layout(ty).map(|l| l.0) =>
                {
                    values.push(bytes.clone());
                }
                _ => {
                    return Err(Error::Invalid(format!(
                        "argument {} of `{name}` does not fit its parameter of type `{param}`",
                        i + 1
                    )));
                }
            }
        }
        for v in &mut values {
            pointers.push(v.as_mut_ptr().cast());
        }
        let kernel = self.function(name)?;
        // SAFETY: every argument was checked against the kernel's parameter above; the value
        // buffers outlive the call.
        unsafe { runtime::launch(kernel, config, &mut pointers, stream) }
    }
}
