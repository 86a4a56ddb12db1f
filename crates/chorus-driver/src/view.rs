//! Borrowed views of device memory: a device address with a length, typed, that lives no longer
//! than the memory it views. Libraries (cuBLAS, cuFFT, …) take these, so that memory of any
//! owner (a [`MemoryBlock`], the facade's memory blocks, a sub-range of either) goes to them
//! without copies and with its length known for the checks before each call.

use crate::error::{Error, Result};
use crate::memory::MemoryBlock;
use bytemuck::Pod;
use cudarc::driver::sys::CUdeviceptr;
use std::marker::PhantomData;
use std::ops::Range;

/// `len` elements of `T` at a device address, read-only, borrowed for `'a`.
#[derive(Debug)]
pub struct DeviceSlice<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    borrow: PhantomData<&'a [T]>,
}

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DeviceSlice<'_, T> {}

/// `len` elements of `T` at a device address, writable, borrowed exclusively for `'a`.
#[derive(Debug)]
pub struct DeviceSliceMut<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    borrow: PhantomData<&'a mut [T]>,
}

/// The elements `range` of `len`, or the error naming both.
fn check_range(range: &Range<usize>, len: usize) -> Result<()> {
    if range.start > range.end || range.end > len {
        return Err(Error::InvalidArgument(format!(
            "range {}..{} of a device slice of {len} elements",
            range.start, range.end
        )));
    }
    Ok(())
}

/// The same bytes as `len` elements of `U` instead of `T`, or an error when they do not divide.
fn cast_len<T, U>(ptr: CUdeviceptr, len: usize) -> Result<usize> {
    let bytes = len * size_of::<T>();
    if size_of::<U>() == 0
        || !bytes.is_multiple_of(size_of::<U>())
        || !ptr.is_multiple_of(align_of::<U>() as u64)
    {
        return Err(Error::InvalidArgument(format!(
            "{len} elements of {} bytes at {ptr:#x} are not whole, aligned elements of {} bytes",
            size_of::<T>(),
            size_of::<U>()
        )));
    }
    Ok(bytes / size_of::<U>())
}

impl<'a, T> DeviceSlice<'a, T> {
    /// A view of `len` elements at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must address `len` initialised elements of `T` of device memory that stays
    /// allocated, and is not written except through views derived from this one, for `'a`.
    pub unsafe fn from_raw(ptr: CUdeviceptr, len: usize) -> DeviceSlice<'a, T> {
        DeviceSlice {
            ptr,
            len,
            borrow: PhantomData,
        }
    }

    /// The device address of the first element.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements `range` of this view.
    pub fn slice(&self, range: Range<usize>) -> Result<DeviceSlice<'a, T>> {
        check_range(&range, self.len)?;
        Ok(DeviceSlice {
            ptr: self.ptr + (range.start * size_of::<T>()) as u64,
            len: range.end - range.start,
            borrow: PhantomData,
        })
    }

    /// The same bytes viewed as elements of `U` (`f32` pairs as complex numbers, say).
    pub fn cast<U: Pod>(&self) -> Result<DeviceSlice<'a, U>>
    where
        T: Pod,
    {
        Ok(DeviceSlice {
            ptr: self.ptr,
            len: cast_len::<T, U>(self.ptr, self.len)?,
            borrow: PhantomData,
        })
    }
}

impl<'a, T> DeviceSliceMut<'a, T> {
    /// A writable view of `len` elements at `ptr`.
    ///
    /// # Safety
    ///
    /// As for [`DeviceSlice::from_raw`], and no other view of the memory may be used for `'a`.
    pub unsafe fn from_raw(ptr: CUdeviceptr, len: usize) -> DeviceSliceMut<'a, T> {
        DeviceSliceMut {
            ptr,
            len,
            borrow: PhantomData,
        }
    }

    /// The device address of the first element.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the view holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A read-only view of the same elements, borrowing this one.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        DeviceSlice {
            ptr: self.ptr,
            len: self.len,
            borrow: PhantomData,
        }
    }

    /// A writable view of the same elements, borrowing this one (to pass it on and keep it).
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut {
            ptr: self.ptr,
            len: self.len,
            borrow: PhantomData,
        }
    }

    /// The elements `range` of this view, consuming it.
    pub fn slice(self, range: Range<usize>) -> Result<DeviceSliceMut<'a, T>> {
        check_range(&range, self.len)?;
        Ok(DeviceSliceMut {
            ptr: self.ptr + (range.start * size_of::<T>()) as u64,
            len: range.end - range.start,
            borrow: PhantomData,
        })
    }

    /// Two disjoint writable views: elements `..mid` and `mid..`.
    pub fn split_at(self, mid: usize) -> Result<(DeviceSliceMut<'a, T>, DeviceSliceMut<'a, T>)> {
        check_range(&(0..mid), self.len)?;
        let rest = DeviceSliceMut {
            ptr: self.ptr + (mid * size_of::<T>()) as u64,
            len: self.len - mid,
            borrow: PhantomData,
        };
        Ok((
            DeviceSliceMut {
                ptr: self.ptr,
                len: mid,
                borrow: PhantomData,
            },
            rest,
        ))
    }

    /// The same bytes viewed as elements of `U`, consuming this view.
    pub fn cast<U: Pod>(self) -> Result<DeviceSliceMut<'a, U>>
    where
        T: Pod,
    {
        Ok(DeviceSliceMut {
            ptr: self.ptr,
            len: cast_len::<T, U>(self.ptr, self.len)?,
            borrow: PhantomData,
        })
    }
}

/// Memory that gives a read-only [`DeviceSlice`] of its device copy: this crate's
/// [`MemoryBlock`], the facade's `chorus::MemoryBlock` on CUDA, the views themselves.
pub trait AsDeviceSlice<T> {
    /// The whole device copy; an error for memory without a device address (the CPU executor's).
    fn as_device_slice(&self) -> Result<DeviceSlice<'_, T>>;
}

/// Memory that gives a writable [`DeviceSliceMut`] of its device copy.
pub trait AsDeviceSliceMut<T>: AsDeviceSlice<T> {
    /// The whole device copy, writable.
    fn as_device_slice_mut(&mut self) -> Result<DeviceSliceMut<'_, T>>;
}

impl<T: Pod> AsDeviceSlice<T> for MemoryBlock<T> {
    fn as_device_slice(&self) -> Result<DeviceSlice<'_, T>> {
        // SAFETY: the block owns `len` elements at `device_ptr` for as long as it is borrowed.
        Ok(unsafe { DeviceSlice::from_raw(self.device_ptr(), self.len()) })
    }
}

impl<T: Pod> AsDeviceSliceMut<T> for MemoryBlock<T> {
    fn as_device_slice_mut(&mut self) -> Result<DeviceSliceMut<'_, T>> {
        // SAFETY: as above, borrowed exclusively.
        Ok(unsafe { DeviceSliceMut::from_raw(self.device_ptr(), self.len()) })
    }
}

impl<T> AsDeviceSlice<T> for DeviceSlice<'_, T> {
    fn as_device_slice(&self) -> Result<DeviceSlice<'_, T>> {
        Ok(*self)
    }
}

impl<T> AsDeviceSlice<T> for DeviceSliceMut<'_, T> {
    fn as_device_slice(&self) -> Result<DeviceSlice<'_, T>> {
        Ok(self.as_slice())
    }
}

impl<T> AsDeviceSliceMut<T> for DeviceSliceMut<'_, T> {
    fn as_device_slice_mut(&mut self) -> Result<DeviceSliceMut<'_, T>> {
        Ok(self.reborrow())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_slices_and_casts_keep_within_the_view() {
        // SAFETY: the address is never dereferenced by these tests.
        let view = unsafe { DeviceSlice::<f32>::from_raw(0x1000, 8) };
        let sub = view.slice(2..6).unwrap();
        assert_eq!((sub.ptr(), sub.len()), (0x1008, 4));
        assert!(view.slice(6..9).is_err());
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = view.slice(5..4);
        assert!(reversed.is_err());
        assert_eq!(view.cast::<[f32; 2]>().unwrap().len(), 4);
        assert!(view.slice(0..3).unwrap().cast::<[f32; 2]>().is_err());
        assert!(
            view.slice(1..3).unwrap().cast::<f64>().is_err(),
            "misaligned"
        );
        // SAFETY: as above.
        let writable = unsafe { DeviceSliceMut::<f64>::from_raw(0x2000, 4) };
        let (a, b) = writable.split_at(1).unwrap();
        assert_eq!((a.ptr(), a.len(), b.ptr(), b.len()), (0x2000, 1, 0x2008, 3));
        assert!(b.split_at(4).is_err());
    }
}
