//! Arrays, textures and surfaces of the CUDA backend: `chorus_driver`'s CUDA arrays, texture
//! objects and surface objects. Each holds the context generation it was made in, like the
//! backend's memory: calls go through its checks (a reset or a poisoned context is an error),
//! and once a reset retired it the drop forgets the handle instead of destroying it.

use super::cuda_context::device_error;
use super::cuda_generation::Generation;
use crate::TextureDesc;
use crate::error::{Error, Result};
use crate::hal::{ArrayImpl, TextureImpl};
use crate::image::{ChannelFormat, ImageShape};
use crate::kind::Backend;
use chorus_cuda::driver;
use chorus_lang::types::Type;
use std::any::Any;
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// A CUDA array of one context generation.
#[derive(Debug)]
pub(super) struct CudaArray {
    generation: Arc<Generation>,
    array: ManuallyDrop<driver::CudaArray>,
}

impl Drop for CudaArray {
    fn drop(&mut self) {
        if self.generation.is_retired() {
            // The reset destroyed it; its handle may be another array's now.
            return;
        }
        // `cuArrayDestroy` needs the context current; a drop has nowhere to report.
        let _ = self.generation.enter("array");
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.array) };
    }
}

impl ArrayImpl for CudaArray {
    fn upload(&mut self, src: &[u8]) -> Result<()> {
        self.generation.enter("array")?;
        self.array
            .copy_from_host(src)
            .map_err(device_error(self.generation.context.device()))
    }

    fn download(&self, dst: &mut [u8]) -> Result<()> {
        self.generation.enter("array")?;
        self.array
            .copy_to_host(dst)
            .map_err(device_error(self.generation.context.device()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The driver object behind a [`CudaImage`]. Its lifetime is `'static` here: the facade's
/// `Texture<'a>`/`Surface<'a>` borrows what it reads for as long as it exists.
#[derive(Debug)]
enum Object {
    Texture(driver::TextureObject<'static>),
    Surface(driver::SurfaceObject<'static>),
}

/// A texture or surface object of one context generation; `handle` is the kernel argument's
/// bytes.
#[derive(Debug)]
pub(super) struct CudaImage {
    generation: Arc<Generation>,
    /// Held for its `Drop`, which destroys the driver object.
    object: ManuallyDrop<Object>,
    handle: [u8; 8],
    surface: bool,
}

impl Drop for CudaImage {
    fn drop(&mut self) {
        if self.generation.is_retired() {
            // The reset destroyed it; its handle may be another object's now.
            return;
        }
        let _ = self.generation.enter("texture");
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.object) };
    }
}

impl TextureImpl for CudaImage {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn foreign(what: &'static str) -> Error {
    Error::ForeignObject {
        backend: Backend::Cuda,
        what,
    }
}

/// An array on `generation`'s device.
pub(super) fn alloc_array(
    generation: &Arc<Generation>,
    f: ChannelFormat,
    [w, h, d]: [usize; 3],
    surface: bool,
) -> Result<Box<dyn ArrayImpl>> {
    generation.enter("array")?;
    let mut desc = driver::ArrayDesc::new(f, w, h, d);
    if surface {
        desc = desc.surface();
    }
    let array = driver::CudaArray::new(desc).map_err(device_error(generation.context.device()))?;
    Ok(Box::new(CudaArray {
        generation: generation.clone(),
        array: ManuallyDrop::new(array),
    }))
}

fn image(generation: &Arc<Generation>, object: Object) -> Box<dyn TextureImpl> {
    let (raw, surface) = match &object {
        Object::Texture(t) => (t.raw(), false),
        Object::Surface(s) => (s.raw(), true),
    };
    Box::new(CudaImage {
        generation: generation.clone(),
        object: ManuallyDrop::new(object),
        handle: raw.to_le_bytes(),
        surface,
    })
}

/// A texture over an array of `generation`'s device.
pub(super) fn texture_over_array(
    generation: &Arc<Generation>,
    array: &dyn ArrayImpl,
    shape: ImageShape,
    desc: &TextureDesc,
) -> Result<Box<dyn TextureImpl>> {
    generation.enter("texture")?;
    let ImageShape::Array { .. } = shape else {
        return Err(foreign("array as memory"));
    };
    let array = array
        .as_any()
        .downcast_ref::<CudaArray>()
        .ok_or_else(|| foreign("array"))?;
    // SAFETY: the array is boxed in the facade's `TextureArray`, which the facade's
    // `Texture<'a>` borrows for as long as this object exists: the reference stays valid for
    // the object's whole life, which is all `'static` is used for here.
    let array: &'static driver::CudaArray =
        unsafe { &*(&*array.array as *const driver::CudaArray) };
    let object = driver::TextureObject::from_array(array, desc)
        .map_err(device_error(generation.context.device()))?;
    Ok(image(generation, Object::Texture(object)))
}

/// A texture over `memory` of `generation`'s device, linear or pitched.
pub(super) fn texture_over_memory(
    generation: &Arc<Generation>,
    memory: &chorus_cuda::DeviceMemory,
    shape: ImageShape,
    f: ChannelFormat,
    desc: &TextureDesc,
) -> Result<Box<dyn TextureImpl>> {
    generation.enter("texture")?;
    let error = device_error(generation.context.device());
    // SAFETY: as for arrays: the facade's `Texture<'a>` borrows the memory block that owns
    // this allocation for as long as the texture exists.
    let memory: &'static chorus_cuda::DeviceMemory = unsafe { &*(memory as *const _) };
    let object = match shape {
        ImageShape::Linear { width } => {
            driver::TextureObject::from_linear(memory, f, width, desc).map_err(error)?
        }
        ImageShape::Pitch2D {
            width,
            height,
            pitch,
        } => driver::TextureObject::from_pitch2d(memory, f, width, height, pitch, desc)
            .map_err(error)?,
        ImageShape::Array { .. } => return Err(foreign("memory as an array")),
    };
    Ok(image(generation, Object::Texture(object)))
}

/// A surface over an array of `generation`'s device.
pub(super) fn surface(
    generation: &Arc<Generation>,
    array: &dyn ArrayImpl,
) -> Result<Box<dyn TextureImpl>> {
    generation.enter("texture")?;
    let array = array
        .as_any()
        .downcast_ref::<CudaArray>()
        .ok_or_else(|| foreign("array"))?;
    // SAFETY: as for textures: the facade's `Surface<'a>` borrows the array.
    let array: &'static driver::CudaArray =
        unsafe { &*(&*array.array as *const driver::CudaArray) };
    let object = driver::SurfaceObject::from_array(array)
        .map_err(device_error(generation.context.device()))?;
    Ok(image(generation, Object::Surface(object)))
}

/// The launch argument of a texture or surface: its handle's bytes.
pub(super) fn kernel_arg(object: &dyn TextureImpl) -> Result<chorus_cuda::KernelArg<'_>> {
    let image = object
        .as_any()
        .downcast_ref::<CudaImage>()
        .ok_or_else(|| foreign("texture or surface argument"))?;
    let ty = if image.surface {
        Type::SurfaceObject
    } else {
        Type::TextureObject
    };
    // SAFETY: the 8 bytes of a live texture or surface handle of this device, for a parameter
    // of its type (checked by the facade's `check_args`).
    Ok(unsafe { chorus_cuda::KernelArg::raw(ty, &image.handle) })
}
