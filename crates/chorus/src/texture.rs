//! Textures and surfaces: [`TextureArray`] (a CUDA array, or its CPU counterpart),
//! [`Texture`] over an array or a [`MemoryBlock`], [`Surface`] over an array. Each is made on
//! one device and passed to a launch with `as_arg()`, like a memory block; the kernel declares a
//! `texture-object` or `surface-object` parameter and reads it with `tex2d` and friends.
//!
//! ```
//! # fn main() -> chorus::Result<()> {
//! use chorus::{ChannelFormat, ChannelType, FilterMode, TextureArray, Texture, TextureDesc};
//! let mut image = TextureArray::alloc(ChannelFormat::scalar(ChannelType::F32), [2, 2, 0])?;
//! image.upload(&[0.0f32, 1.0, 2.0, 3.0])?;
//! let desc = TextureDesc::default().with_filter(FilterMode::Linear);
//! let texture = Texture::from_array(&image, &desc)?;
//! // Program::launch(…, &[out.as_arg(), texture.as_arg()]) passes it to a kernel.
//! # let _ = texture.as_arg();
//! # Ok(()) }
//! ```

use crate::TextureDesc;
use crate::args::Arg;
use crate::backend::current_device;
use crate::dispatch;
use crate::error::{Error, Result};
use crate::hal::{ArrayImpl, ImageSource, TextureImpl};
use crate::image::{ChannelFormat, ImageShape};
use crate::kind::Device;
use crate::memory::MemoryBlock;
use chorus_lang::host::KernelValue;
use std::marker::PhantomData;

fn invalid<T>(reason: impl Into<String>) -> Result<T> {
    Err(Error::Texture {
        reason: reason.into(),
    })
}

/// An array of elements laid out for textures and surfaces, on one device: a CUDA array
/// (`cuArray3DCreate`) on CUDA, a buffer on the CPU executor.
///
/// The extent is `[width, 0, 0]` for a 1-D array, `[width, height, 0]` for 2-D and
/// `[width, height, depth]` for 3-D, as CUDA writes it. Its contents are copied from and to the
/// host whole, rows packed ([`TextureArray::upload`], [`TextureArray::download`]).
#[derive(Debug)]
pub struct TextureArray {
    device: Device,
    format: ChannelFormat,
    extent: [usize; 3],
    surface: bool,
    array: Box<dyn ArrayImpl>,
}

impl TextureArray {
    /// An array for textures on the current device (contents unspecified until uploaded).
    pub fn alloc(format: ChannelFormat, extent: [usize; 3]) -> Result<TextureArray> {
        TextureArray::alloc_on(current_device()?, format, extent, false)
    }

    /// An array for textures and surfaces on the current device.
    pub fn alloc_surface(format: ChannelFormat, extent: [usize; 3]) -> Result<TextureArray> {
        TextureArray::alloc_on(current_device()?, format, extent, true)
    }

    /// An array on `device`; surfaces may use it when `surface`.
    pub fn alloc_on(
        device: Device,
        format: ChannelFormat,
        extent: [usize; 3],
        surface: bool,
    ) -> Result<TextureArray> {
        let [w, h, d] = extent;
        if w == 0 || (h == 0 && d != 0) {
            return invalid(format!(
                "an array of {w} × {h} × {d} elements: the width must be at least 1, and a 3-D array needs a height"
            ));
        }
        if format
            .element_bytes()
            .checked_mul(w)
            .and_then(|b| b.checked_mul(h.max(1)))
            .and_then(|b| b.checked_mul(d.max(1)))
            .is_none()
        {
            return invalid("the array's size overflows");
        }
        let array = dispatch::device(device)?.alloc_array(format, extent, surface)?;
        Ok(TextureArray {
            device,
            format,
            extent,
            surface,
            array,
        })
    }

    /// Copies `data` (exactly the array's bytes, rows packed) into the array.
    pub fn upload<T: KernelValue>(&mut self, data: &[T]) -> Result<()> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        self.check_len(bytes.len())?;
        self.array.upload(bytes)
    }

    /// Copies the array into `data` (exactly the array's bytes, rows packed).
    pub fn download<T: KernelValue>(&self, data: &mut [T]) -> Result<()> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(data);
        self.check_len(bytes.len())?;
        self.array.download(bytes)
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if len != self.byte_len() {
            return invalid(format!(
                "a host copy of {len} bytes for an array of {} bytes",
                self.byte_len()
            ));
        }
        Ok(())
    }

    /// The element format.
    pub fn format(&self) -> ChannelFormat {
        self.format
    }

    /// `[width, height, depth]`, 0 for the dimensions it lacks.
    pub fn extent(&self) -> [usize; 3] {
        self.extent
    }

    /// Bytes of the whole array.
    pub fn byte_len(&self) -> usize {
        let [w, h, d] = self.extent;
        self.format.element_bytes() * w * h.max(1) * d.max(1)
    }

    /// The device it is on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether surfaces may use it.
    pub fn is_surface(&self) -> bool {
        self.surface
    }

    fn dims(&self) -> usize {
        match self.extent {
            [_, 0, _] => 1,
            [_, _, 0] => 2,
            _ => 3,
        }
    }
}

/// Checks `desc` for a texture of `format` over `dims` dimensions (`linear`: linear memory),
/// with the rules CUDA sets ([`TextureDesc::check`]), so every backend refuses the same
/// descriptors before it is asked.
fn check_desc(desc: &TextureDesc, format: ChannelFormat, dims: usize, linear: bool) -> Result<()> {
    Ok(desc.check(format, dims.min(3) as u8, linear)?)
}

/// A texture object on one device, reading an array or a memory block's device copy through a
/// [`TextureDesc`]; it borrows what it reads. Pass it to a `texture-object` parameter with
/// [`Texture::as_arg`].
#[derive(Debug)]
pub struct Texture<'a> {
    device: Device,
    object: Box<dyn TextureImpl>,
    source: PhantomData<&'a ()>,
}

impl<'a> Texture<'a> {
    /// A texture reading `array` (`tex1d`, `tex2d` or `tex3d` by its dimensions).
    pub fn from_array(array: &'a TextureArray, desc: &TextureDesc) -> Result<Texture<'a>> {
        check_desc(desc, array.format, array.dims(), false)?;
        let object = dispatch::device(array.device)?.texture(
            ImageSource::Array(&*array.array),
            ImageShape::Array {
                extent: array.extent,
            },
            array.format,
            desc,
        )?;
        Ok(Texture {
            device: array.device,
            object,
            source: PhantomData,
        })
    }

    /// A texture reading `block`'s device copy as linear memory of `format` elements, as many as
    /// fit (`tex1d-fetch`; point filtering and unnormalized coordinates only). Sync the block
    /// to the device first: the texture borrows it.
    pub fn from_linear<T: KernelValue>(
        block: &'a MemoryBlock<T>,
        format: ChannelFormat,
        desc: &TextureDesc,
    ) -> Result<Texture<'a>> {
        check_desc(desc, format, 1, true)?;
        let width = block.len() * size_of::<T>() / format.element_bytes();
        if width == 0 {
            return invalid(format!(
                "a memory block of {} bytes holds no {}-byte element",
                block.len() * size_of::<T>(),
                format.element_bytes()
            ));
        }
        Texture::from_memory(block, ImageShape::Linear { width }, format, desc)
    }

    /// A texture reading `height` rows of `width` elements of `format` in `block`'s device
    /// copy, each row `pitch` bytes after the previous (`tex2d`). On CUDA the pitch must be a
    /// multiple of the device's texture pitch alignment (32 bytes on current GPUs).
    pub fn from_pitch2d<T: KernelValue>(
        block: &'a MemoryBlock<T>,
        format: ChannelFormat,
        [width, height]: [usize; 2],
        pitch: usize,
        desc: &TextureDesc,
    ) -> Result<Texture<'a>> {
        check_desc(desc, format, 2, false)?;
        let row = width.checked_mul(format.element_bytes());
        let needed = height
            .checked_sub(1)
            .and_then(|h| h.checked_mul(pitch))
            .and_then(|b| b.checked_add(row?));
        let bytes = block.len() * size_of::<T>();
        match (row, needed) {
            (Some(row), Some(needed)) if width > 0 && pitch >= row && needed <= bytes => {}
            _ => {
                return invalid(format!(
                    "{height} rows of {width} {}-byte elements, {pitch} bytes apart, do not fit a memory block of {bytes} bytes (or a row does not fit the pitch)",
                    format.element_bytes()
                ));
            }
        }
        Texture::from_memory(
            block,
            ImageShape::Pitch2D {
                width,
                height,
                pitch,
            },
            format,
            desc,
        )
    }

    fn from_memory<T: KernelValue>(
        block: &'a MemoryBlock<T>,
        shape: ImageShape,
        format: ChannelFormat,
        desc: &TextureDesc,
    ) -> Result<Texture<'a>> {
        let memory = block.device_memory();
        let object = dispatch::device(memory.device)?.texture(
            ImageSource::Memory(&*memory.memory),
            shape,
            format,
            desc,
        )?;
        Ok(Texture {
            device: memory.device,
            object,
            source: PhantomData,
        })
    }

    /// The texture as a kernel argument (for a `texture-object` parameter).
    pub fn as_arg(&self) -> Arg<'_> {
        Arg::texture(&*self.object, self.device, false)
    }

    /// The device it is on.
    pub fn device(&self) -> Device {
        self.device
    }
}

/// A surface object on one device, reading and writing an array made with
/// [`TextureArray::alloc_surface`]; it borrows the array. Pass it to a `surface-object`
/// parameter with [`Surface::as_arg`].
#[derive(Debug)]
pub struct Surface<'a> {
    device: Device,
    object: Box<dyn TextureImpl>,
    source: PhantomData<&'a ()>,
}

impl<'a> Surface<'a> {
    /// A surface over `array`.
    pub fn from_array(array: &'a TextureArray) -> Result<Surface<'a>> {
        if !array.surface {
            return invalid(
                "a surface needs an array made for surfaces (TextureArray::alloc_surface)",
            );
        }
        let object =
            dispatch::device(array.device)?.surface(&*array.array, array.format, array.extent)?;
        Ok(Surface {
            device: array.device,
            object,
            source: PhantomData,
        })
    }

    /// The surface as a kernel argument (for a `surface-object` parameter).
    pub fn as_arg(&self) -> Arg<'_> {
        Arg::texture(&*self.object, self.device, true)
    }

    /// The device it is on.
    pub fn device(&self) -> Device {
        self.device
    }
}
