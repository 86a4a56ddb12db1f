//! Arrays, textures and surfaces of the CPU backend: buffers read through `chorus_cpu`'s texture
//! and surface objects, which reproduce CUDA's filtering and addressing.

use crate::TextureDesc;
use crate::error::{Error, Result};
use crate::hal::{ArrayImpl, TextureImpl};
use crate::image::{ChannelFormat, ImageShape};
use crate::kind::Backend;
use chorus_cpu::{DeviceBuffer, ImageLayout, PrecheckedArg, SurfaceObject, TextureObject};
use std::any::Any;
use std::sync::Arc;

/// An array: a buffer with its layout (rows packed).
#[derive(Debug)]
pub(super) struct CpuArray {
    buffer: Arc<DeviceBuffer>,
    layout: ImageLayout,
}

impl ArrayImpl for CpuArray {
    fn upload(&mut self, src: &[u8]) -> Result<()> {
        Ok(self.buffer.write(0, src)?)
    }

    fn download(&self, dst: &mut [u8]) -> Result<()> {
        Ok(self.buffer.read(0, dst)?)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A texture or surface object with the buffer it reads (kept alive with it).
#[derive(Debug)]
pub(super) enum CpuImage {
    Texture(Arc<DeviceBuffer>, TextureObject),
    Surface(Arc<DeviceBuffer>, SurfaceObject),
}

impl TextureImpl for CpuImage {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn foreign(what: &'static str) -> Error {
    Error::ForeignObject {
        backend: Backend::Cpu,
        what,
    }
}

/// A zeroed array.
pub(super) fn alloc_array(f: ChannelFormat, [w, h, d]: [usize; 3]) -> Result<Box<dyn ArrayImpl>> {
    let layout = ImageLayout::array(f, w, h, d)?;
    let buffer = Arc::new(DeviceBuffer::alloc(layout.bytes())?);
    Ok(Box::new(CpuArray { buffer, layout }))
}

/// A texture over an array.
pub(super) fn texture_over_array(
    array: &dyn ArrayImpl,
    shape: ImageShape,
    desc: &TextureDesc,
) -> Result<Box<dyn TextureImpl>> {
    let ImageShape::Array { .. } = shape else {
        return Err(foreign("array as memory"));
    };
    let array = array
        .as_any()
        .downcast_ref::<CpuArray>()
        .ok_or_else(|| foreign("array"))?;
    let object = TextureObject::new(array.layout, *desc)?;
    Ok(Box::new(CpuImage::Texture(array.buffer.clone(), object)))
}

/// A texture over a buffer, linear or pitched.
pub(super) fn texture_over_memory(
    buffer: Arc<DeviceBuffer>,
    shape: ImageShape,
    f: ChannelFormat,
    desc: &TextureDesc,
) -> Result<Box<dyn TextureImpl>> {
    let layout = match shape {
        ImageShape::Linear { width } => ImageLayout::linear(f, width)?,
        ImageShape::Pitch2D {
            width,
            height,
            pitch,
        } => ImageLayout::pitch2d(f, width, height, pitch)?,
        ImageShape::Array { .. } => return Err(foreign("memory as an array")),
    };
    if layout.bytes() > buffer.len() {
        return Err(Error::Texture {
            reason: format!(
                "the texture reads {} bytes, but the memory has {}",
                layout.bytes(),
                buffer.len()
            ),
        });
    }
    let object = TextureObject::new(layout, *desc)?;
    Ok(Box::new(CpuImage::Texture(buffer, object)))
}

/// A surface over an array.
pub(super) fn surface(array: &dyn ArrayImpl) -> Result<Box<dyn TextureImpl>> {
    let array = array
        .as_any()
        .downcast_ref::<CpuArray>()
        .ok_or_else(|| foreign("array"))?;
    let object = SurfaceObject::new(array.layout)?;
    Ok(Box::new(CpuImage::Surface(array.buffer.clone(), object)))
}

/// The launch argument of a texture or surface.
pub(super) fn prechecked(object: &dyn TextureImpl) -> Result<PrecheckedArg<'_>> {
    match object.as_any().downcast_ref::<CpuImage>() {
        Some(CpuImage::Texture(buffer, t)) => Ok(PrecheckedArg::Texture(buffer, t)),
        Some(CpuImage::Surface(buffer, s)) => Ok(PrecheckedArg::Surface(buffer, s)),
        None => Err(foreign("texture or surface argument")),
    }
}
