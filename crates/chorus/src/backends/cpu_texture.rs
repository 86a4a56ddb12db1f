//! Arrays, textures and surfaces of the CPU backend: buffers read through `chorus_cpu`'s texture
//! and surface objects, which reproduce CUDA's filtering and addressing.

use crate::TextureDesc;
use crate::error::{Error, Result};
use crate::hal::{ArrayImpl, TextureImpl};
use crate::image::{AddressMode, ChannelFormat, ChannelType, FilterMode, ImageShape, ReadMode};
use crate::kind::Backend;
use chorus_cpu::{
    DeviceBuffer, ImageLayout, PrecheckedArg, SamplerDesc, SurfaceObject, TextureObject,
};
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

fn format(f: ChannelFormat) -> Result<chorus_cpu::ChannelFormat> {
    let channel = match f.channel() {
        ChannelType::U8 => chorus_cpu::ChannelType::U8,
        ChannelType::I8 => chorus_cpu::ChannelType::I8,
        ChannelType::U16 => chorus_cpu::ChannelType::U16,
        ChannelType::I16 => chorus_cpu::ChannelType::I16,
        ChannelType::U32 => chorus_cpu::ChannelType::U32,
        ChannelType::I32 => chorus_cpu::ChannelType::I32,
        ChannelType::F16 => chorus_cpu::ChannelType::F16,
        ChannelType::F32 => chorus_cpu::ChannelType::F32,
    };
    Ok(chorus_cpu::ChannelFormat::new(channel, f.channels())?)
}

fn sampler(desc: &TextureDesc) -> SamplerDesc {
    SamplerDesc {
        address: desc.address.map(|m| match m {
            AddressMode::Wrap => chorus_cpu::AddressMode::Wrap,
            AddressMode::Clamp => chorus_cpu::AddressMode::Clamp,
            AddressMode::Mirror => chorus_cpu::AddressMode::Mirror,
            AddressMode::Border => chorus_cpu::AddressMode::Border,
        }),
        filter: match desc.filter {
            FilterMode::Point => chorus_cpu::FilterMode::Point,
            FilterMode::Linear => chorus_cpu::FilterMode::Linear,
        },
        read_mode: match desc.read_mode {
            ReadMode::ElementType => chorus_cpu::ReadMode::ElementType,
            ReadMode::NormalizedFloat => chorus_cpu::ReadMode::NormalizedFloat,
        },
        normalized_coords: desc.normalized_coords,
        border_color: desc.border_color,
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
    let layout = ImageLayout::array(format(f)?, w, h, d)?;
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
    let object = TextureObject::new(array.layout, sampler(desc))?;
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
        ImageShape::Linear { width } => ImageLayout::linear(format(f)?, width)?,
        ImageShape::Pitch2D {
            width,
            height,
            pitch,
        } => ImageLayout::pitch2d(format(f)?, width, height, pitch)?,
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
    let object = TextureObject::new(layout, sampler(desc))?;
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
