//! Memory blocks: a host copy and a device copy of one array, synchronized on request.

use crate::args::Arg;
use crate::backend::current_device;
use crate::dispatch;
use crate::error::{Error, Result};
use crate::hal::DeviceMemory;
use crate::kind::{Backend, CopyRoute, Device};
use chorus_lang::host::KernelValue;
use chorus_lang::ir::StructDef;
use chorus_lang::target::{LayoutRules, Target};
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

/// Which way [`MemoryBlock::sync`] copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host copy → device copy (`:host-to-device`).
    HostToDevice,
    /// Device copy → host copy (`:device-to-host`).
    DeviceToHost,
}

/// `n` elements of `T` on the host and on a device, allocated together (cl-cuda's memory
/// block).
///
/// Indexing reads and writes the host copy; [`MemoryBlock::sync`] copies the whole block
/// between the host and the device, as `sync-memory-block` does. Kernels see the device copy.
/// The block belongs to one device: the current one when it was allocated
/// ([`crate::current_device`]), or the one [`MemoryBlock::alloc_on`] names. It is freed when
/// dropped: freeing twice cannot happen.
///
/// ```
/// # fn main() -> chorus::Result<()> {
/// use chorus::{Direction, MemoryBlock};
/// let mut a = MemoryBlock::<f32>::alloc(4)?;
/// a[2] = 1.5;
/// a.sync(Direction::HostToDevice)?;
/// assert_eq!(a.as_slice(), &[0.0, 0.0, 1.5, 0.0]);
/// # Ok(()) }
/// ```
pub struct MemoryBlock<T: KernelValue> {
    host: Vec<T>,
    device: DeviceMemory,
    /// The device's layout of `T` where it differs from the host's (C's): Metal's `float3` is
    /// 16 bytes, so the device copy is stored with MSL's stride and converted at each sync.
    device_layout: Option<DeviceLayout>,
}

/// How a memory block's device copy is laid out when the device's rules differ from C's.
struct DeviceLayout {
    rules: LayoutRules,
    /// The element's structure definitions (`KernelValue::struct_defs`).
    structs: Vec<StructDef>,
}

impl<T: KernelValue> MemoryBlock<T> {
    /// A block of `len` elements on the current device ([`crate::current_device`]). The host
    /// copy is zeroed; the device copy holds whatever the device gives until the first
    /// [`MemoryBlock::sync`].
    ///
    /// Errors: `len` of 0, a size in bytes that overflows, host or device memory exhausted, or a
    /// current device that is not available.
    pub fn alloc(len: usize) -> Result<MemoryBlock<T>> {
        MemoryBlock::alloc_on(current_device()?, len)
    }

    /// A block of `len` elements on `device`, as [`MemoryBlock::alloc`].
    pub fn alloc_on(device: Device, len: usize) -> Result<MemoryBlock<T>> {
        if len == 0 {
            return Err(Error::EmptyMemoryBlock {
                element: T::kernel_type(),
            });
        }
        let too_large = || Error::MemoryBlockTooLarge {
            element: T::kernel_type(),
            len,
        };
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(too_large)?;
        let device_impl = dispatch::device(device)?;
        let (device_layout, device_bytes) = match device_layout::<T>(device_impl.target()) {
            Some((layout, size)) => (Some(layout), len.checked_mul(size).ok_or_else(too_large)?),
            None => (None, bytes),
        };
        let memory = device_impl.alloc(device_bytes)?;
        let mut host = Vec::new();
        host.try_reserve_exact(len)
            .map_err(|source| Error::HostMemory { bytes, source })?;
        host.resize(len, T::zeroed());
        Ok(MemoryBlock {
            host,
            device: DeviceMemory { device, memory },
            device_layout,
        })
    }

    /// A block holding a copy of `data` on the host and on the current device.
    pub fn from_slice(data: &[T]) -> Result<MemoryBlock<T>> {
        MemoryBlock::from_slice_on(current_device()?, data)
    }

    /// A block holding a copy of `data` on the host and on `device`.
    pub fn from_slice_on(device: Device, data: &[T]) -> Result<MemoryBlock<T>> {
        let mut block = MemoryBlock::alloc_on(device, data.len())?;
        block.host.copy_from_slice(data);
        block.sync(Direction::HostToDevice)?;
        Ok(block)
    }

    /// Copies the whole block between the host copy and the device copy. On CUDA the copy waits
    /// for the work launched before it on the default stream.
    pub fn sync(&mut self, direction: Direction) -> Result<()> {
        let Some(layout) = &self.device_layout else {
            return match direction {
                Direction::HostToDevice => {
                    self.device.memory.upload(bytemuck::cast_slice(&self.host))
                }
                Direction::DeviceToHost => self
                    .device
                    .memory
                    .download(bytemuck::cast_slice_mut(&mut self.host)),
            };
        };
        let ty = T::kernel_type();
        let len = self.host.len();
        let unconvertible = || Error::Layout {
            element: ty.clone(),
            device: self.device.device,
        };
        match direction {
            Direction::HostToDevice => {
                let bytes = LayoutRules::C
                    .convert_array(
                        layout.rules,
                        &ty,
                        &layout.structs,
                        bytemuck::cast_slice(&self.host),
                        len,
                    )
                    .ok_or_else(unconvertible)?;
                self.device.memory.upload(&bytes)
            }
            Direction::DeviceToHost => {
                let (size, _) = layout
                    .rules
                    .layout(&ty, &layout.structs)
                    .ok_or_else(unconvertible)?;
                let mut bytes = vec![0u8; size * len];
                self.device.memory.download(&mut bytes)?;
                let host = layout
                    .rules
                    .convert_array(LayoutRules::C, &ty, &layout.structs, &bytes, len)
                    .ok_or_else(unconvertible)?;
                // Converted into zeroed padding: every byte of every element is written.
                bytemuck::cast_slice_mut::<T, u8>(&mut self.host).copy_from_slice(&host);
                Ok(())
            }
        }
    }

    /// Copies `src`'s device copy into this block's device copy (host copies untouched), on any
    /// two devices: within a device, directly between CUDA devices that can reach each other's
    /// memory (peer access, enabled on first use), and through the host otherwise (other GPUs,
    /// other backends, the CPU executor). Says which it took. The copy is ordered after the
    /// work launched before it on both devices' default streams.
    ///
    /// Errors: blocks of different lengths ([`Error::CopyLength`]), a device's error.
    pub fn copy_device_from(&mut self, src: &MemoryBlock<T>) -> Result<CopyRoute> {
        if src.len() != self.len() {
            return Err(Error::CopyLength {
                src: src.len(),
                dst: self.len(),
            });
        }
        let bytes = std::mem::size_of_val(self.host.as_slice());
        if let Some(route) = src.device.memory.copy_to(&mut *self.device.memory, bytes)? {
            return Ok(route);
        }
        let mut staging = Vec::new();
        staging
            .try_reserve_exact(bytes)
            .map_err(|source| Error::HostMemory { bytes, source })?;
        staging.resize(bytes, 0u8);
        src.device.memory.download(&mut staging)?;
        self.device.memory.upload(&staging)?;
        Ok(CopyRoute::Host)
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.host.len()
    }

    /// Always false: a block has at least one element.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }

    /// The host copy.
    pub fn as_slice(&self) -> &[T] {
        &self.host
    }

    /// The host copy, for writing.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.host
    }

    /// The backend whose device holds the device copy.
    pub fn backend(&self) -> Backend {
        self.device.device.backend()
    }

    /// The device that holds the device copy.
    pub fn device(&self) -> Device {
        self.device.device
    }

    /// The device copy as a kernel argument.
    pub fn as_arg(&self) -> Arg<'_> {
        Arg::memory(&self.device, T::kernel_type())
    }

    /// The device copy (what a texture over the block reads).
    pub(crate) fn device_memory(&self) -> &DeviceMemory {
        &self.device
    }

    /// The device address of the device copy, on backends that have addresses (CUDA); `None`
    /// on the CPU executor.
    pub fn device_address(&self) -> Option<u64> {
        self.device.memory.address()
    }
}

/// The layout of `T`'s elements on a device of `target` and their size there, when it differs
/// from the host's (C's); `None` when the bytes are the same, or when the target cannot lay `T`
/// out at all (its kernels are refused by validation, so the bytes are never read there).
fn device_layout<T: KernelValue>(target: &Target) -> Option<(DeviceLayout, usize)> {
    let rules = target.layout_rules;
    let ty = T::kernel_type();
    let structs = T::struct_defs();
    if LayoutRules::C.same_as(rules, &ty, &structs) {
        return None;
    }
    let (size, _) = rules.layout(&ty, &structs)?;
    Some((DeviceLayout { rules, structs }, size))
}

impl<T: KernelValue> Index<usize> for MemoryBlock<T> {
    type Output = T;
    fn index(&self, index: usize) -> &T {
        &self.host[index]
    }
}

impl<T: KernelValue> IndexMut<usize> for MemoryBlock<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.host[index]
    }
}

impl<T: KernelValue> std::fmt::Debug for MemoryBlock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBlock")
            .field("type", &T::kernel_type().to_string())
            .field("len", &self.len())
            .field("device", &self.device())
            .finish()
    }
}

/// Something a kernel's `T*` parameter accepts: a memory block of `T` (by reference), or a raw
/// device address of `T`.
pub trait DevicePtr<T: KernelValue> {
    /// The pointer as a kernel argument.
    fn kernel_arg(&self) -> Arg<'_>;
}

impl<T: KernelValue> DevicePtr<T> for &MemoryBlock<T> {
    fn kernel_arg(&self) -> Arg<'_> {
        self.as_arg()
    }
}

impl<T: KernelValue> DevicePtr<T> for &mut MemoryBlock<T> {
    fn kernel_arg(&self) -> Arg<'_> {
        self.as_arg()
    }
}

/// A memory block of the native CUDA API ([`crate::cuda::MemoryBlock`]), passed as its device
/// address; the launch must run on the CUDA backend. The block must belong to the context the
/// facade launches in: the primary context of the launch's device, which
/// [`crate::cuda::with_primary_cuda`] also uses.
impl<T: KernelValue> DevicePtr<T> for &chorus_cuda::MemoryBlock<T> {
    fn kernel_arg(&self) -> Arg<'_> {
        Arg::device_address(self.device_ptr(), T::kernel_type())
    }
}

/// A raw device address of elements of `T`, for memory Chorus did not allocate (cuBLAS
/// workspaces, memory from another library). Only the CUDA backend has device addresses; the CPU
/// executor refuses them. The address is not checked: the kernel reads whatever it points at,
/// which is why making one is `unsafe`.
#[derive(Debug)]
pub struct DeviceAddress<T> {
    address: u64,
    element: PhantomData<fn() -> T>,
}

impl<T> Clone for DeviceAddress<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DeviceAddress<T> {}

impl<T: KernelValue> DeviceAddress<T> {
    /// The address `address` (a `CUdeviceptr`).
    ///
    /// # Safety
    ///
    /// Kernels launched with it read and write through it unchecked: `address` must point to
    /// device memory, in the context of the device the kernel runs on, holding elements of `T`
    /// as many as the kernel accesses, and that memory must stay allocated (and not be
    /// accessed in conflicting ways) until those kernels have finished.
    pub unsafe fn new(address: u64) -> DeviceAddress<T> {
        DeviceAddress {
            address,
            element: PhantomData,
        }
    }

    /// The address.
    pub fn get(self) -> u64 {
        self.address
    }
}

impl<T: KernelValue> DevicePtr<T> for DeviceAddress<T> {
    fn kernel_arg(&self) -> Arg<'_> {
        Arg::device_address(self.address, T::kernel_type())
    }
}

/// The device copy of a block on CUDA, as the CUDA libraries (`chorus-cuda-libs`) take it: a
/// library call reads and writes the memory kernels use, without a copy. The block belongs to its
/// device's primary context; make library handles while that context is current (it is, on this
/// thread, after any CUDA operation of the facade). On the CPU executor there is no device
/// address: an error.
impl<T: KernelValue> chorus_cuda::driver::AsDeviceSlice<T> for MemoryBlock<T> {
    fn as_device_slice(
        &self,
    ) -> chorus_cuda::driver::Result<chorus_cuda::driver::DeviceSlice<'_, T>> {
        let address = self
            .device_address()
            .ok_or_else(|| no_device_address(self.device()))?;
        // SAFETY: the block owns `len` elements of device memory at `address`, allocated for as
        // long as it is borrowed; writes go only through `&mut` borrows of it.
        Ok(unsafe { chorus_cuda::driver::DeviceSlice::from_raw(address, self.len()) })
    }
}

impl<T: KernelValue> chorus_cuda::driver::AsDeviceSliceMut<T> for MemoryBlock<T> {
    fn as_device_slice_mut(
        &mut self,
    ) -> chorus_cuda::driver::Result<chorus_cuda::driver::DeviceSliceMut<'_, T>> {
        let address = self
            .device_address()
            .ok_or_else(|| no_device_address(self.device()))?;
        // SAFETY: as above, borrowed exclusively.
        Ok(unsafe { chorus_cuda::driver::DeviceSliceMut::from_raw(address, self.len()) })
    }
}

fn no_device_address(device: Device) -> chorus_cuda::driver::Error {
    chorus_cuda::driver::Error::InvalidArgument(format!(
        "a memory block on {device} has no device address (the CUDA libraries need the CUDA backend)"
    ))
}
