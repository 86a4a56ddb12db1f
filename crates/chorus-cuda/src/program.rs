//! A compiled, loaded compilation unit: its kernels and typed globals.

use crate::call::cu;
use crate::compile::{CompiledImage, compile_and_load};
use crate::error::{Error, Result};
use crate::module::{Function, Module, Signature};
use chorus_lang::cfamily::NameTable;
use chorus_lang::host::KernelValue;
use chorus_lang::ir;
use std::sync::Arc;

/// One compilation unit compiled (through the cache) and loaded into the current context.
///
/// Built from kernel text or an [`ir::Module`], its kernels carry their signatures, so
/// [`crate::launch`] checks arguments, and its globals are typed. Built from raw CUDA C, names
/// are C names and nothing is checked beyond sizes. Each program owns its own module, so
/// defining another program never disturbs this one's kernels.
#[derive(Clone, Debug)]
pub struct Program {
    module: Module,
    /// The checked IR and the C names the printer gave its kernels and globals.
    ir: Option<(Arc<ir::Module>, Arc<NameTable>)>,
    source: Arc<str>,
    image: CompiledImage,
}

impl Program {
    /// Compiles and loads hand-written CUDA C. Kernels must be `extern "C"` to be found by name.
    pub fn from_cuda_c(source: &str, name: &str) -> Result<Program> {
        let (module, image) = compile_and_load(source, name)?;
        Ok(Program {
            module,
            ir: None,
            source: source.into(),
            image,
        })
    }

    /// Validates `module` for the device it is compiled for (the current context's, else device
    /// 0), prints it as CUDA C, compiles and loads it. Takes the module or an `Arc` of it
    /// (shared, not copied: the program's kernels keep it for their signatures).
    pub fn from_ir(module: impl Into<Arc<ir::Module>>, name: &str) -> Result<Program> {
        let module = module.into();
        let printed = crate::frontend::print_for_arch(&module, crate::compile::target_arch())?;
        let source = printed.code;
        let (loaded, image) = compile_and_load(&source, name)?;
        Ok(Program {
            module: loaded,
            ir: Some((module, Arc::new(printed.names))),
            source: source.into(),
            image,
        })
    }

    /// Reads, expands and checks kernel text (`file` names it in errors), then as
    /// [`Program::from_ir`].
    pub fn from_text(text: &str, file: &str) -> Result<Program> {
        Program::from_ir(crate::frontend::compile_str(text, file)?, file)
    }

    /// A program over an already loaded module (the kernel manager's).
    pub(crate) fn from_parts(
        module: Module,
        ir: Option<(Arc<ir::Module>, Arc<NameTable>)>,
        source: Arc<str>,
        image: CompiledImage,
    ) -> Program {
        Program {
            module,
            ir,
            source,
            image,
        }
    }

    /// The generated (or given) CUDA C.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The image that was loaded.
    pub fn image(&self) -> &CompiledImage {
        &self.image
    }

    /// The loaded module.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The checked IR, for programs built from kernel text or IR.
    pub fn ir(&self) -> Option<&ir::Module> {
        self.ir.as_ref().map(|(ir, _)| &**ir)
    }

    /// The kernel named `name` (kernel-language name for checked programs, C name otherwise),
    /// with its signature attached when known.
    pub fn function(&self, name: &str) -> Result<Function> {
        let Some((ir, names)) = &self.ir else {
            return self.module.function(name);
        };
        let (id, _) = ir
            .function(name)
            .filter(|(_, f)| f.kind == ir::FunctionKind::Kernel)
            .ok_or_else(|| Error::NotFound {
                what: "kernel",
                name: name.to_owned(),
            })?;
        let signature = Signature {
            module: ir.clone(),
            function: id,
        };
        Ok(self
            .module
            .function(names.function_by_id(id))?
            .with_signature(signature))
    }

    /// The device address and size in bytes of global `name` (kernel-language name for checked
    /// programs, C name otherwise), resolved through the printer's name table.
    pub fn global_address(&self, name: &str) -> Result<(cudarc::driver::sys::CUdeviceptr, usize)> {
        match &self.ir {
            Some((ir, names)) => {
                let (id, _) = ir.global(name).ok_or_else(|| Error::NotFound {
                    what: "global",
                    name: name.to_owned(),
                })?;
                self.module.global(names.global_by_id(id))
            }
            None => self.module.global(name),
        }
    }

    /// The device address and size of global `name`, after checking that `T` is its type.
    fn global_of<T: KernelValue>(&self, name: &str) -> Result<cudarc::driver::sys::CUdeviceptr> {
        if let Some((_, g)) = self.ir.as_ref().and_then(|(ir, _)| ir.global(name))
            && g.ty != T::kernel_type()
        {
            return Err(Error::GlobalType {
                name: name.to_owned(),
                expected: g.ty.to_string(),
                got: T::kernel_type().to_string(),
            });
        }
        let (ptr, bytes) = self.global_address(name)?;
        if bytes != size_of::<T>() {
            return Err(Error::GlobalType {
                name: name.to_owned(),
                expected: format!("{bytes} bytes"),
                got: format!("{} ({} bytes)", T::kernel_type(), size_of::<T>()),
            });
        }
        Ok(ptr)
    }

    /// Reads global `name` from the device (the seed's `global-ref`). `T` must be the global's
    /// type.
    pub fn global_ref<T: KernelValue>(&self, name: &str) -> Result<T> {
        let ptr = self.global_of::<T>(name)?;
        let mut value = T::zeroed();
        let bytes = bytemuck::bytes_of_mut(&mut value);
        cu!(cuMemcpyDtoH_v2(bytes.as_mut_ptr().cast(), ptr, bytes.len()))?;
        Ok(value)
    }

    /// Writes global `name` on the device (the seed's `(setf global-ref)`).
    pub fn set_global_ref<T: KernelValue>(&self, name: &str, value: T) -> Result<()> {
        let ptr = self.global_of::<T>(name)?;
        let bytes = bytemuck::bytes_of(&value);
        cu!(cuMemcpyHtoD_v2(ptr, bytes.as_ptr().cast(), bytes.len()))
    }
}
