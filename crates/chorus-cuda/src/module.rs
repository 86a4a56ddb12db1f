//! Loaded modules (`cuModuleLoadData`) and their functions and globals.

use crate::call::{cu, cu_drop};
use crate::error::{Error, Result};
use crate::image::ImageKind;
use chorus_driver::sys::{self, CUdeviceptr, CUfunction_attribute};
use chorus_lang::ir;
use std::ffi::CString;
use std::sync::Arc;

/// The owner of one `CUmodule`; unloaded when the last [`Module`] or [`Function`] over it goes.
#[derive(Debug)]
struct ModuleHandle {
    raw: sys::CUmodule,
    context: sys::CUcontext,
}

// SAFETY: module handles are usable from any thread of the process.
unsafe impl Send for ModuleHandle {}
// SAFETY: as above.
unsafe impl Sync for ModuleHandle {}

impl Drop for ModuleHandle {
    fn drop(&mut self) {
        cu_drop!(cuModuleUnload(self.raw));
    }
}

/// A module loaded into the current context. Cloning shares it; it is unloaded when the last
/// clone and the last [`Function`] taken from it are dropped, so a kernel that was looked up
/// keeps working even when its program is redefined.
#[derive(Clone, Debug)]
pub struct Module {
    handle: Arc<ModuleHandle>,
}

impl Module {
    /// Loads a PTX or cubin image (`cuModuleLoadData`). PTX is NUL-terminated here if needed.
    pub fn load(image: &[u8], kind: ImageKind) -> Result<Module> {
        let context = chorus_driver::current_context().ok_or_else(|| {
            chorus_driver::ensure_driver()
                .err()
                .map_or(Error::NoContext, Error::from)
        })?;
        let mut raw = std::ptr::null_mut();
        match kind {
            ImageKind::Ptx if image.last() != Some(&0) => {
                let mut text = image.to_vec();
                text.push(0);
                cu!(cuModuleLoadData(&mut raw, text.as_ptr().cast()))?;
            }
            _ => cu!(cuModuleLoadData(&mut raw, image.as_ptr().cast()))?,
        }
        Ok(Module {
            handle: Arc::new(ModuleHandle { raw, context }),
        })
    }

    /// Loads PTX, and when the driver is older than the PTX ISA
    /// (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`), loads the cubin `cubin()` builds instead (the
    /// seed's toolkit-newer-than-driver rule). Returns the module and the kind that loaded.
    pub fn load_ptx_or_cubin(
        ptx: &[u8],
        cubin: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<(Module, ImageKind)> {
        match Module::load(ptx, ImageKind::Ptx) {
            Ok(m) => Ok((m, ImageKind::Ptx)),
            Err(e) if e.is_driver_error("CUDA_ERROR_UNSUPPORTED_PTX_VERSION") => {
                crate::settings::message("the driver rejects this PTX version; loading cubin");
                Ok((Module::load(&cubin()?, ImageKind::Cubin)?, ImageKind::Cubin))
            }
            Err(e) => Err(e),
        }
    }

    /// The kernel whose C name is `c_name` (`extern "C"` names are unmangled).
    pub fn function(&self, c_name: &str) -> Result<Function> {
        let name = c_string(c_name)?;
        let mut raw = std::ptr::null_mut();
        cu!(cuModuleGetFunction(
            &mut raw,
            self.handle.raw,
            name.as_ptr()
        ))
        .map_err(|e| {
            if e.is_driver_error("CUDA_ERROR_NOT_FOUND") {
                Error::NotFound {
                    what: "kernel",
                    name: c_name.to_owned(),
                }
            } else {
                e
            }
        })?;
        Ok(Function {
            raw,
            module: self.clone(),
            signature: None,
        })
    }

    /// The device address and size of the `__device__`/`__constant__` variable `c_name`.
    pub fn global(&self, c_name: &str) -> Result<(CUdeviceptr, usize)> {
        let name = c_string(c_name)?;
        let (mut ptr, mut bytes) = (0, 0);
        cu!(cuModuleGetGlobal_v2(
            &mut ptr,
            &mut bytes,
            self.handle.raw,
            name.as_ptr()
        ))
        .map_err(|e| {
            if e.is_driver_error("CUDA_ERROR_NOT_FOUND") {
                Error::NotFound {
                    what: "global",
                    name: c_name.to_owned(),
                }
            } else {
                e
            }
        })?;
        Ok((ptr, bytes))
    }

    /// The raw handle.
    pub fn raw(&self) -> sys::CUmodule {
        self.handle.raw
    }

    /// The context it was loaded in.
    pub fn context(&self) -> sys::CUcontext {
        self.handle.context
    }
}

fn c_string(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::InvalidArgument(format!("{name:?} contains NUL")))
}

/// The kernel-language signature a [`Function`] is checked against at launch.
#[derive(Clone, Debug)]
pub struct Signature {
    /// The module the kernel belongs to (for structure layouts).
    pub module: Arc<ir::Module>,
    /// The kernel's index in [`ir::Module::functions`].
    pub function: ir::FunctionId,
}

impl Signature {
    /// The kernel.
    pub fn function(&self) -> &ir::Function {
        &self.module[self.function]
    }
}

/// A kernel of a loaded module; keeps the module loaded.
#[derive(Clone, Debug)]
pub struct Function {
    raw: sys::CUfunction,
    module: Module,
    signature: Option<Signature>,
}

// SAFETY: function handles are usable from any thread.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl Function {
    /// The raw handle.
    pub fn raw(&self) -> sys::CUfunction {
        self.raw
    }

    /// The module it belongs to.
    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The kernel-language signature launches are checked against, if known.
    pub fn signature(&self) -> Option<&Signature> {
        self.signature.as_ref()
    }

    /// Attaches the signature that [`crate::launch`] checks arguments against. Crate-private:
    /// only a signature from the IR the module was printed from is known to be the kernel's,
    /// and [`crate::launch`] is safe because of it.
    pub(crate) fn with_signature(mut self, signature: Signature) -> Function {
        self.signature = Some(signature);
        self
    }

    /// Any `CUfunction_attribute` (`cuFuncGetAttribute`).
    pub fn attribute(&self, attribute: CUfunction_attribute) -> Result<i32> {
        let mut value = 0;
        cu!(cuFuncGetAttribute(&mut value, attribute, self.raw))?;
        Ok(value)
    }

    /// Registers per thread.
    pub fn num_regs(&self) -> Result<i32> {
        self.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
    }

    /// The most threads a block of this kernel can have.
    pub fn max_threads_per_block(&self) -> Result<i32> {
        self.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    }

    /// Static shared memory in bytes.
    pub fn shared_size_bytes(&self) -> Result<i32> {
        self.attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
    }

    /// Allows launches with up to `bytes` of dynamic shared memory (needed above 48 KiB).
    pub fn set_max_dynamic_shared_memory(&self, bytes: i32) -> Result<()> {
        let attr = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        cu!(cuFuncSetAttribute(self.raw, attr, bytes))
    }

    /// Blocks of `block_size` threads (and `dynamic_shared_mem` bytes) that fit on one
    /// multiprocessor at once.
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        block_size: u32,
        dynamic_shared_mem: usize,
    ) -> Result<u32> {
        let mut blocks = 0;
        cu!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut blocks,
            self.raw,
            block_size as i32,
            dynamic_shared_mem
        ))?;
        Ok(blocks.max(0) as u32)
    }

    /// The block size that maximises occupancy and the smallest grid that reaches it, as
    /// `(min_grid_size, block_size)`.
    pub fn suggested_block_size(&self, dynamic_shared_mem: usize) -> Result<(u32, u32)> {
        let (mut grid, mut block) = (0, 0);
        cu!(cuOccupancyMaxPotentialBlockSize(
            &mut grid,
            &mut block,
            self.raw,
            None,
            dynamic_shared_mem,
            0
        ))?;
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }
}
