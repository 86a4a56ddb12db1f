//! Images as pitched device memory, shared by NPP and nvJPEG: `height` rows of `width` pixels
//! of `channels` interleaved values of `T`, each row starting `pitch` bytes after the previous
//! (the pitch is at least a row and a whole number of `T`s; rows are padded so each starts on an
//! aligned address, which the libraries read fastest).
//!
//! [`Image`] owns its memory (a `chorus_driver::MemoryBlock`, whose host copy is used for the
//! uploads and downloads); [`ImageView`] and [`ImageViewMut`] describe any device memory
//! ([`DeviceSlice`]s of a memory block, a kernel's output) as an image, checked once when made:
//! the library calls then never read or write past the memory.

use crate::error::{Error, Result};
use bytemuck::Pod;
use chorus_driver::{DeviceSlice, DeviceSliceMut, Direction};
use chorus_driver::{MemoryBlock, sys::CUdeviceptr};

/// Rows of an owned [`Image`] start on multiples of this many bytes (what `nppiMalloc` uses).
pub const PITCH_ALIGNMENT: usize = 512;

/// The shape of an image: its size in pixels, values per pixel and bytes per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageShape {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Interleaved values per pixel (1 for grey, 3 for RGB).
    pub channels: usize,
    /// Bytes from the start of one row to the start of the next.
    pub pitch: usize,
}

impl ImageShape {
    /// A shape with rows padded to [`PITCH_ALIGNMENT`] bytes.
    pub fn packed_aligned<T>(width: usize, height: usize, channels: usize) -> Result<ImageShape> {
        let row = row_bytes::<T>(width, channels)?;
        let pitch = row
            .checked_next_multiple_of(PITCH_ALIGNMENT)
            .ok_or_else(|| Error::invalid("image", "the row size overflows"))?;
        let shape = ImageShape {
            width,
            height,
            channels,
            pitch,
        };
        shape.elements::<T>()?;
        Ok(shape)
    }

    /// The bytes of one row's pixels (`width · channels · size_of::<T>()`).
    pub fn row_bytes<T>(&self) -> usize {
        self.width * self.channels * size_of::<T>()
    }

    /// The elements of `T` the image spans, from the first row's start to the last row's end,
    /// after checking the shape: sizes of at least 1, a pitch that holds a row and is a whole
    /// number of elements, and sizes that fit NPP's `int`s.
    pub fn elements<T>(&self) -> Result<usize> {
        if self.width == 0 || self.height == 0 || self.channels == 0 {
            return Err(Error::invalid(
                "image",
                format!(
                    "an image of {} × {} pixels of {} channels: each must be at least 1",
                    self.width, self.height, self.channels
                ),
            ));
        }
        let row = row_bytes::<T>(self.width, self.channels)?;
        let size = size_of::<T>();
        if self.pitch < row || !self.pitch.is_multiple_of(size) {
            return Err(Error::invalid(
                "image",
                format!(
                    "a pitch of {} bytes for rows of {row} bytes: it must hold a row and be a multiple of {size}",
                    self.pitch
                ),
            ));
        }
        if self.pitch > i32::MAX as usize || self.height > i32::MAX as usize {
            return Err(Error::invalid(
                "image",
                format!(
                    "a pitch of {} bytes and {} rows: NPP takes both as int",
                    self.pitch, self.height
                ),
            ));
        }
        let bytes = (self.height - 1)
            .checked_mul(self.pitch)
            .and_then(|b| b.checked_add(row))
            .ok_or_else(|| Error::invalid("image", "the image size overflows"))?;
        Ok(bytes.div_ceil(size))
    }
}

fn row_bytes<T>(width: usize, channels: usize) -> Result<usize> {
    width
        .checked_mul(channels)
        .and_then(|v| v.checked_mul(size_of::<T>()))
        .filter(|&b| b <= i32::MAX as usize)
        .ok_or_else(|| Error::invalid("image", "the row size overflows an int"))
}

/// A read-only image over device memory, borrowed for `'a`.
#[derive(Debug, Clone, Copy)]
pub struct ImageView<'a, T> {
    slice: DeviceSlice<'a, T>,
    shape: ImageShape,
}

/// A writable image over device memory, borrowed exclusively for `'a`.
#[derive(Debug)]
pub struct ImageViewMut<'a, T> {
    slice: DeviceSliceMut<'a, T>,
    shape: ImageShape,
}

impl<'a, T> ImageView<'a, T> {
    /// `slice` as an image of `shape`; an error when the image would reach past the slice.
    pub fn new(slice: DeviceSlice<'a, T>, shape: ImageShape) -> Result<ImageView<'a, T>> {
        check_fits(shape.elements::<T>()?, slice.len())?;
        Ok(ImageView { slice, shape })
    }

    /// The shape.
    pub fn shape(&self) -> ImageShape {
        self.shape
    }

    /// The device address of the first pixel.
    pub fn ptr(&self) -> CUdeviceptr {
        self.slice.ptr()
    }
}

impl<'a, T> ImageViewMut<'a, T> {
    /// `slice` as an image of `shape`; an error when the image would reach past the slice.
    pub fn new(slice: DeviceSliceMut<'a, T>, shape: ImageShape) -> Result<ImageViewMut<'a, T>> {
        check_fits(shape.elements::<T>()?, slice.len())?;
        Ok(ImageViewMut { slice, shape })
    }

    /// The shape.
    pub fn shape(&self) -> ImageShape {
        self.shape
    }

    /// The device address of the first pixel.
    pub fn ptr(&self) -> CUdeviceptr {
        self.slice.ptr()
    }

    /// A read-only view of the same image.
    pub fn as_view(&self) -> ImageView<'_, T> {
        ImageView {
            slice: self.slice.as_slice(),
            shape: self.shape,
        }
    }

    /// The same image, reborrowed.
    pub fn reborrow(&mut self) -> ImageViewMut<'_, T> {
        ImageViewMut {
            slice: self.slice.reborrow(),
            shape: self.shape,
        }
    }
}

fn check_fits(needed: usize, len: usize) -> Result<()> {
    if needed > len {
        return Err(Error::invalid(
            "image",
            format!("the image spans {needed} elements but the memory holds {len}"),
        ));
    }
    Ok(())
}

/// An image that owns its pitched device memory (and a host copy for uploads and downloads).
#[derive(Debug)]
pub struct Image<T: Pod> {
    block: MemoryBlock<T>,
    shape: ImageShape,
}

impl<T: Pod> Image<T> {
    /// A zeroed image in the current context, rows padded to [`PITCH_ALIGNMENT`] bytes.
    pub fn new(width: usize, height: usize, channels: usize) -> Result<Image<T>> {
        let shape = ImageShape::packed_aligned::<T>(width, height, channels)?;
        let elements = (shape.pitch * height) / size_of::<T>();
        let mut block = MemoryBlock::alloc(elements)?;
        block.memset_device_bytes(0)?;
        Ok(Image { block, shape })
    }

    /// An image holding `pixels` (rows of `width · channels` values, unpadded), uploaded.
    pub fn from_host(
        width: usize,
        height: usize,
        channels: usize,
        pixels: &[T],
    ) -> Result<Image<T>> {
        let mut image = Image::new(width, height, channels)?;
        image.upload(pixels)?;
        Ok(image)
    }

    /// Copies `pixels` (unpadded rows) to the device, synchronously.
    pub fn upload(&mut self, pixels: &[T]) -> Result<()> {
        let ImageShape {
            width,
            height,
            channels,
            pitch,
        } = self.shape;
        let (row, step) = (width * channels, pitch / size_of::<T>());
        if pixels.len() != row * height {
            return Err(Error::invalid(
                "upload",
                format!(
                    "{} values for an image of {width} × {height} × {channels}",
                    pixels.len()
                ),
            ));
        }
        let host = self.block.as_mut_slice();
        for (y, src) in pixels.chunks_exact(row).enumerate() {
            host[y * step..y * step + row].copy_from_slice(src);
        }
        self.block.sync(Direction::HostToDevice)?;
        Ok(())
    }

    /// The pixels as unpadded rows, after the current context's work finished.
    pub fn download(&mut self) -> Result<Vec<T>> {
        chorus_driver::synchronize_context()?;
        self.block.sync(Direction::DeviceToHost)?;
        let ImageShape {
            width,
            height,
            channels,
            pitch,
        } = self.shape;
        let (row, step) = (width * channels, pitch / size_of::<T>());
        let host = self.block.as_slice();
        let mut out = Vec::with_capacity(row * height);
        for y in 0..height {
            out.extend_from_slice(&host[y * step..y * step + row]);
        }
        Ok(out)
    }

    /// The shape.
    pub fn shape(&self) -> ImageShape {
        self.shape
    }

    /// Pixels per row.
    pub fn width(&self) -> usize {
        self.shape.width
    }

    /// Rows.
    pub fn height(&self) -> usize {
        self.shape.height
    }

    /// Values per pixel.
    pub fn channels(&self) -> usize {
        self.shape.channels
    }

    /// Bytes per row.
    pub fn pitch(&self) -> usize {
        self.shape.pitch
    }

    /// The memory block (rows at multiples of the pitch).
    pub fn block(&self) -> &MemoryBlock<T> {
        &self.block
    }

    /// A read-only view.
    pub fn view(&self) -> ImageView<'_, T> {
        ImageView {
            // SAFETY: the block owns `len` elements at its device address while borrowed.
            slice: unsafe { DeviceSlice::from_raw(self.block.device_ptr(), self.block.len()) },
            shape: self.shape,
        }
    }

    /// A writable view.
    pub fn view_mut(&mut self) -> ImageViewMut<'_, T> {
        ImageViewMut {
            // SAFETY: as above, borrowed exclusively.
            slice: unsafe { DeviceSliceMut::from_raw(self.block.device_ptr(), self.block.len()) },
            shape: self.shape,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked() {
        let s = ImageShape::packed_aligned::<u8>(100, 10, 3).unwrap();
        assert_eq!(s.pitch, 512);
        assert_eq!(s.elements::<u8>().unwrap(), 9 * 512 + 300);
        let s = ImageShape::packed_aligned::<f32>(200, 2, 1).unwrap();
        assert_eq!((s.pitch, s.elements::<f32>().unwrap()), (1024, 256 + 200));
        let bad = ImageShape {
            width: 10,
            height: 2,
            channels: 3,
            pitch: 20,
        };
        let e = bad.elements::<u8>().unwrap_err().to_string();
        assert!(e.contains("pitch of 20 bytes for rows of 30"), "{e}");
        let odd = ImageShape { pitch: 42, ..bad };
        assert!(odd.elements::<f32>().is_err());
        assert!(ImageShape { width: 0, ..bad }.elements::<u8>().is_err());
    }

    #[test]
    fn views_must_fit_their_memory() {
        let shape = ImageShape {
            width: 4,
            height: 3,
            channels: 1,
            pitch: 8,
        };
        // SAFETY: the address is never dereferenced.
        let slice = unsafe { DeviceSlice::<u8>::from_raw(0x1000, 20) };
        assert!(ImageView::new(slice, shape).is_ok()); // 2 · 8 + 4 = 20
        // SAFETY: as above.
        let short = unsafe { DeviceSlice::<u8>::from_raw(0x1000, 19) };
        let e = ImageView::new(short, shape).unwrap_err().to_string();
        assert!(
            e.contains("spans 20 elements but the memory holds 19"),
            "{e}"
        );
    }
}
