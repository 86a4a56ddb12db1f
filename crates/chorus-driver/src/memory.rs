//! Device and host memory: memory blocks (the seed's `alloc-memory-block`, `sync-memory-block`,
//! `memory-block-aref`), raw allocations, memset and device copies.
//!
//! Freeing twice cannot happen: every allocation is owned by one value and freed by its `Drop`.

use crate::call::{cu, cu_drop};
use crate::context::{memory_info, synchronize_context};
use crate::error::{Error, Result};
use crate::stream::Stream;
use bytemuck::Pod;
use cudarc::driver::sys::{self, CUdeviceptr};
use std::ops::{Index, IndexMut};

/// The direction of [`MemoryBlock::sync`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host copy → device copy.
    HostToDevice,
    /// Device copy → host copy.
    DeviceToHost,
}

/// Allocates `bytes` of device memory, turning "not enough memory" into a clear error.
fn alloc_device(bytes: usize) -> Result<CUdeviceptr> {
    check_size(bytes)?;
    let mut ptr = 0;
    match cu!(cuMemAlloc_v2(&mut ptr, bytes)) {
        Ok(()) => Ok(ptr),
        Err(e) if e.is_driver_error("CUDA_ERROR_OUT_OF_MEMORY") => Err(out_of_memory(bytes)),
        Err(e) => Err(e),
    }
}

fn out_of_memory(requested: usize) -> Error {
    let (free, total) = memory_info().unwrap_or((0, 0));
    Error::OutOfMemory {
        requested,
        free,
        total,
    }
}

fn check_size(bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Err(Error::InvalidArgument("cannot allocate 0 bytes".into()));
    }
    Ok(())
}

/// `n` elements of `T` in bytes, or an error when that overflows.
fn byte_size<T>(n: usize) -> Result<usize> {
    if n == 0 {
        return Err(Error::InvalidArgument(
            "a memory block needs at least one element".into(),
        ));
    }
    n.checked_mul(size_of::<T>()).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{n} elements of {} bytes overflow the address space",
            size_of::<T>()
        ))
    })
}

/// Raw device memory (`cuMemAlloc`), freed on drop. For low-level use; see [`MemoryBlock`].
#[derive(Debug)]
pub struct DeviceMemory {
    ptr: CUdeviceptr,
    bytes: usize,
}

impl DeviceMemory {
    /// Allocates `bytes` bytes (not initialised) in the current context.
    pub fn alloc(bytes: usize) -> Result<DeviceMemory> {
        Ok(DeviceMemory {
            ptr: alloc_device(bytes)?,
            bytes,
        })
    }

    /// The device address.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Always false: allocations are never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Copies `src` to the start of this memory.
    pub fn copy_from_host(&mut self, src: &[u8]) -> Result<()> {
        self.check_fits(src.len())?;
        cu!(cuMemcpyHtoD_v2(self.ptr, src.as_ptr().cast(), src.len()))
    }

    /// Copies the start of this memory into `dst`.
    pub fn copy_to_host(&self, dst: &mut [u8]) -> Result<()> {
        self.check_fits(dst.len())?;
        cu!(cuMemcpyDtoH_v2(
            dst.as_mut_ptr().cast(),
            self.ptr,
            dst.len()
        ))
    }

    fn check_fits(&self, bytes: usize) -> Result<()> {
        if bytes > self.bytes {
            return Err(Error::InvalidArgument(format!(
                "{bytes} bytes do not fit in {} bytes of device memory",
                self.bytes
            )));
        }
        Ok(())
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        cu_drop!(cuMemFree_v2(self.ptr));
    }
}

/// Page-locked host memory (`cuMemAllocHost`), freed on drop: copies from and to it run at
/// full PCIe speed and can be asynchronous.
#[derive(Debug)]
pub struct PinnedMemory {
    ptr: *mut u8,
    bytes: usize,
}

// SAFETY: plain host memory owned by this value.
unsafe impl Send for PinnedMemory {}
// SAFETY: shared access only reads through `as_slice`.
unsafe impl Sync for PinnedMemory {}

impl PinnedMemory {
    /// Allocates `bytes` zeroed bytes of page-locked memory.
    pub fn alloc(bytes: usize) -> Result<PinnedMemory> {
        check_size(bytes)?;
        let mut ptr = std::ptr::null_mut();
        match cu!(cuMemAllocHost_v2(&mut ptr, bytes)) {
            Ok(()) => {}
            Err(e) if e.is_driver_error("CUDA_ERROR_OUT_OF_MEMORY") => {
                return Err(Error::InvalidArgument(format!(
                    "cannot pin {bytes} bytes of host memory"
                )));
            }
            Err(e) => return Err(e),
        }
        // SAFETY: the driver returned `bytes` writable bytes.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), 0, bytes) };
        Ok(PinnedMemory {
            ptr: ptr.cast(),
            bytes,
        })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `bytes` initialised bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }

    /// The host address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        cu_drop!(cuMemFreeHost(self.ptr.cast()));
    }
}

/// Where a [`MemoryBlock`]'s host copy lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Ordinary (pageable) host memory and a separate device allocation.
    Pageable,
    /// Page-locked host memory (`cuMemAllocHost`) and a separate device allocation.
    Pinned,
    /// One managed allocation (`cuMemAllocManaged`) seen by host and device; `sync` only
    /// waits for the device (host to device needs nothing).
    Managed,
}

/// The host side of a block.
#[derive(Debug)]
enum Host<T> {
    Pageable(Vec<T>),
    Pinned(PinnedMemory),
    /// The host view of the managed allocation (freed with the device side).
    Managed,
}

/// `n` values of type `T` on the host and on the device (the seed's memory block).
///
/// Index it like a `Vec` (`block[i]`, which panics past the end as `Vec` does; [`get`] and
/// [`get_mut`] return `None` instead): indexing reads and writes the **host** copy; [`sync`]
/// copies between the copies. The device pointer is passed to kernels.
///
/// [`get`]: MemoryBlock::get
/// [`get_mut`]: MemoryBlock::get_mut
/// [`sync`]: MemoryBlock::sync
#[derive(Debug)]
pub struct MemoryBlock<T: Pod> {
    host: Host<T>,
    device: CUdeviceptr,
    len: usize,
}

// SAFETY: the block owns its host and device memory; T is Pod.
unsafe impl<T: Pod> Send for MemoryBlock<T> {}
// SAFETY: shared access only reads.
unsafe impl<T: Pod> Sync for MemoryBlock<T> {}

impl<T: Pod> MemoryBlock<T> {
    /// `n` zeroed elements in pageable host memory plus `n` on the device of the current
    /// context. `n == 0` and sizes beyond the device's free memory are errors.
    pub fn alloc(n: usize) -> Result<MemoryBlock<T>> {
        let bytes = byte_size::<T>(n)?;
        let device = alloc_device(bytes)?;
        Ok(MemoryBlock {
            host: Host::Pageable(vec![T::zeroed(); n]),
            device,
            len: n,
        })
    }

    /// As [`MemoryBlock::alloc`], with page-locked host memory.
    pub fn alloc_pinned(n: usize) -> Result<MemoryBlock<T>> {
        let bytes = byte_size::<T>(n)?;
        let pinned = PinnedMemory::alloc(bytes)?;
        let device = alloc_device(bytes)?;
        Ok(MemoryBlock {
            host: Host::Pinned(pinned),
            device,
            len: n,
        })
    }

    /// `n` zeroed elements of managed memory, one allocation both sides use.
    pub fn alloc_managed(n: usize) -> Result<MemoryBlock<T>> {
        let bytes = byte_size::<T>(n)?;
        let mut device = 0;
        let flags = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
        match cu!(cuMemAllocManaged(&mut device, bytes, flags)) {
            Ok(()) => {}
            Err(e) if e.is_driver_error("CUDA_ERROR_OUT_OF_MEMORY") => {
                return Err(out_of_memory(bytes));
            }
            Err(e) => return Err(e),
        }
        // SAFETY: managed memory is host-addressable at the same address.
        unsafe { std::ptr::write_bytes(device as usize as *mut u8, 0, bytes) };
        Ok(MemoryBlock {
            host: Host::Managed,
            device,
            len: n,
        })
    }

    /// A block holding a copy of `values` on the host (not yet synced to the device).
    pub fn from_slice(values: &[T]) -> Result<MemoryBlock<T>> {
        let mut block = MemoryBlock::alloc(values.len())?;
        block.as_mut_slice().copy_from_slice(values);
        Ok(block)
    }

    /// Where the host copy lives.
    pub fn kind(&self) -> BlockKind {
        match self.host {
            Host::Pageable(_) => BlockKind::Pageable,
            Host::Pinned(_) => BlockKind::Pinned,
            Host::Managed => BlockKind::Managed,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: blocks hold at least one element.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The size in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The device address, for kernel arguments and raw driver calls.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.device
    }

    /// The host copy.
    pub fn as_slice(&self) -> &[T] {
        match &self.host {
            Host::Pageable(v) => v,
            Host::Pinned(p) => bytemuck::cast_slice(p.as_slice()),
            // SAFETY: `len` initialised elements at the managed address, owned by self.
            Host::Managed => unsafe {
                std::slice::from_raw_parts(self.device as usize as *const T, self.len)
            },
        }
    }

    /// The host copy, writable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.host {
            Host::Pageable(v) => v,
            Host::Pinned(p) => bytemuck::cast_slice_mut(p.as_mut_slice()),
            // SAFETY: as above, exclusively borrowed.
            Host::Managed => unsafe {
                std::slice::from_raw_parts_mut(self.device as usize as *mut T, self.len)
            },
        }
    }

    /// Element `i` of the host copy, or `None` past the end.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.as_slice().get(i)
    }

    /// Element `i` of the host copy, writable, or `None` past the end.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.as_mut_slice().get_mut(i)
    }

    /// Element `i` of the host copy, or [`Error::IndexOutOfRange`].
    pub fn at(&self, i: usize) -> Result<T> {
        self.get(i).copied().ok_or(Error::IndexOutOfRange {
            index: i,
            len: self.len,
        })
    }

    /// Sets element `i` of the host copy, or returns [`Error::IndexOutOfRange`].
    pub fn set(&mut self, i: usize, value: T) -> Result<()> {
        let len = self.len;
        *self
            .get_mut(i)
            .ok_or(Error::IndexOutOfRange { index: i, len })? = value;
        Ok(())
    }

    /// Copies the whole block between host and device (synchronously, the seed's
    /// `sync-memory-block`). For managed memory, device-to-host waits for the context.
    pub fn sync(&mut self, direction: Direction) -> Result<()> {
        let bytes = self.byte_len();
        match (self.kind(), direction) {
            (BlockKind::Managed, Direction::HostToDevice) => Ok(()),
            (BlockKind::Managed, Direction::DeviceToHost) => synchronize_context(),
            (_, Direction::HostToDevice) => {
                let src = self.as_slice().as_ptr();
                cu!(cuMemcpyHtoD_v2(self.device, src.cast(), bytes))
            }
            (_, Direction::DeviceToHost) => {
                let dst = self.as_mut_slice().as_mut_ptr();
                cu!(cuMemcpyDtoH_v2(dst.cast(), self.device, bytes))
            }
        }
    }

    /// Starts the copy on `stream` and returns. Pageable blocks copy through the driver's
    /// staging buffers, so only pinned blocks overlap with other work.
    ///
    /// # Safety
    ///
    /// The device reads or writes the host copy until `stream` has finished the copy, and the
    /// borrow checker cannot see that: until then the host copy must not be written (nor, for
    /// [`Direction::DeviceToHost`], read), and the block must not be dropped.
    pub unsafe fn sync_async(&mut self, direction: Direction, stream: &Stream) -> Result<()> {
        let bytes = self.byte_len();
        match (self.kind(), direction) {
            (BlockKind::Managed, _) => Ok(()),
            (_, Direction::HostToDevice) => {
                let src = self.as_slice().as_ptr();
                cu!(cuMemcpyHtoDAsync_v2(
                    self.device,
                    src.cast(),
                    bytes,
                    stream.raw()
                ))
            }
            (_, Direction::DeviceToHost) => {
                let dst = self.as_mut_slice().as_mut_ptr();
                cu!(cuMemcpyDtoHAsync_v2(
                    dst.cast(),
                    self.device,
                    bytes,
                    stream.raw()
                ))
            }
        }
    }

    /// Fills the device copy with bytes of value `byte` (`cuMemsetD8`).
    pub fn memset_device_bytes(&mut self, byte: u8) -> Result<()> {
        // SAFETY: the block owns `byte_len()` bytes of device memory at `device`.
        unsafe { memset_device(self.device, MemsetValue::U8(byte), self.byte_len()) }
    }
}

impl<T: Pod> Index<usize> for MemoryBlock<T> {
    type Output = T;
    /// The host copy's element `i`. Panics past the end, like `Vec`; see [`MemoryBlock::get`].
    fn index(&self, i: usize) -> &T {
        &self.as_slice()[i]
    }
}

impl<T: Pod> IndexMut<usize> for MemoryBlock<T> {
    /// The host copy's element `i`, writable. Panics past the end, like `Vec`.
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.as_mut_slice()[i]
    }
}

impl<T: Pod> Drop for MemoryBlock<T> {
    fn drop(&mut self) {
        cu_drop!(cuMemFree_v2(self.device));
    }
}

/// The value and width of a [`memset_device`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemsetValue {
    /// 8-bit (`cuMemsetD8`).
    U8(u8),
    /// 16-bit (`cuMemsetD16`; the address must be 2-aligned).
    U16(u16),
    /// 32-bit (`cuMemsetD32`; the address must be 4-aligned).
    U32(u32),
}

/// Sets `count` elements of the value's width at `ptr` (the seed's `memset-device`).
///
/// # Safety
///
/// `ptr` is an integer taken for a device address: `count` elements of the value's width
/// from it must be device memory of the current context that the caller may write (an
/// allocation it owns, such as [`DeviceMemory::ptr`] or [`MemoryBlock::device_ptr`]), aligned
/// to that width, and not in use by a kernel or copy still running.
pub unsafe fn memset_device(ptr: CUdeviceptr, value: MemsetValue, count: usize) -> Result<()> {
    match value {
        MemsetValue::U8(v) => cu!(cuMemsetD8_v2(ptr, v, count)),
        MemsetValue::U16(v) => cu!(cuMemsetD16_v2(ptr, v, count)),
        MemsetValue::U32(v) => cu!(cuMemsetD32_v2(ptr, v, count)),
    }
}

/// Copies `bytes` bytes between device addresses (`cuMemcpyDtoD`).
///
/// # Safety
///
/// `src` and `dst` are integers taken for device addresses: `bytes` bytes from `src` must be
/// readable device memory, and `bytes` bytes from `dst` device memory the caller may write,
/// both of the current context (or peer-accessible), not in use by work still running.
pub unsafe fn memcpy_device_to_device(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
) -> Result<()> {
    cu!(cuMemcpyDtoD_v2(dst, src, bytes))
}

/// Copies a `width_bytes` × `height` rectangle between device buffers with row pitches
/// `dst_pitch` and `src_pitch` bytes (`cuMemcpy2D`).
///
/// # Safety
///
/// As for [`memcpy_device_to_device`], for the `height` rows of `width_bytes` bytes at
/// `src + row · src_pitch` and `dst + row · dst_pitch`.
pub unsafe fn memcpy_device_to_device_2d(
    dst: CUdeviceptr,
    dst_pitch: usize,
    src: CUdeviceptr,
    src_pitch: usize,
    width_bytes: usize,
    height: usize,
) -> Result<()> {
    if width_bytes > dst_pitch || width_bytes > src_pitch {
        return Err(Error::InvalidArgument(format!(
            "a 2-D copy of {width_bytes}-byte rows needs pitches of at least that (got dst {dst_pitch}, src {src_pitch})"
        )));
    }
    let copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: width_bytes,
        Height: height,
    };
    cu!(cuMemcpy2D_v2(&copy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_checked_before_the_driver() {
        let e = byte_size::<f32>(0).unwrap_err().to_string();
        assert!(e.contains("at least one element"), "{e}");
        let e = byte_size::<f64>(usize::MAX / 4).unwrap_err().to_string();
        assert!(e.contains("overflow"), "{e}");
        assert_eq!(byte_size::<f32>(10).unwrap(), 40);
    }
}
