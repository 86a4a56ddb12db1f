//! Virtual memory management: reserving device address ranges (`cuMemAddressReserve`),
//! creating physical memory (`cuMemCreate`), mapping it into a range (`cuMemMap`), granting
//! access (`cuMemSetAccess`), and [`GrowableBuffer`], a device buffer that grows in place.
//!
//! Sizes and offsets are multiples of the [allocation granularity](allocation_granularity)
//! (2 MiB on current GPUs); they are checked before any driver call.

use crate::call::{cu, cu_drop};
use crate::context::{current_device, device_handle};
use crate::entry::require;
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUdeviceptr, CUmemGenericAllocationHandle};
#[cfg(unix)]
use std::os::fd::{FromRawFd, OwnedFd};

const FEATURE: &str = "virtual memory management";
const ENTRY_POINTS: &[&str] = &[
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
    "cuMemGetAllocationGranularity",
    "cuMemExportToShareableHandle",
    "cuMemImportFromShareableHandle",
];

fn require_vmm() -> Result<()> {
    require(FEATURE, ENTRY_POINTS)
}

/// How physical memory may be shared with other processes or APIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shareable {
    /// Not exportable.
    No,
    /// Exportable as a POSIX file descriptor ([`PhysicalMemory::export_fd`]).
    PosixFd,
}

impl Shareable {
    fn raw(self) -> sys::CUmemAllocationHandleType {
        match self {
            Shareable::No => sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            Shareable::PosixFd => {
                sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            }
        }
    }
}

/// The properties of pinned device memory on device `id`.
fn allocation_prop(id: usize, shareable: Shareable) -> Result<sys::CUmemAllocationProp> {
    let device = device_handle(id)?;
    // SAFETY: a C struct of integers, pointers and enums whose zero value is their INVALID
    // member; zero means "no special flags".
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = shareable.raw();
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    Ok(prop)
}

/// The granularity of physical allocations and mappings on device `id`, in bytes: the
/// minimum (`recommended == false`) or the one the driver recommends for performance.
pub fn allocation_granularity(id: usize, recommended: bool) -> Result<usize> {
    require_vmm()?;
    let prop = allocation_prop(id, Shareable::No)?;
    let flag = if recommended {
        sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
    } else {
        sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM
    };
    let mut granularity = 0;
    cu!(cuMemGetAllocationGranularity(&mut granularity, &prop, flag))?;
    Ok(granularity)
}

/// `bytes` rounded up to a multiple of `granularity`, or an error on overflow or zero.
pub fn round_up_to_granularity(bytes: usize, granularity: usize) -> Result<usize> {
    if granularity == 0 {
        return Err(Error::InvalidArgument("granularity cannot be 0".into()));
    }
    if bytes == 0 {
        return Err(Error::InvalidArgument(
            "cannot reserve or map 0 bytes".into(),
        ));
    }
    bytes
        .div_ceil(granularity)
        .checked_mul(granularity)
        .ok_or_else(|| Error::InvalidArgument(format!("{bytes} bytes overflow the address space")))
}

/// Checks that `len` bytes at `offset` fit a range of `range` bytes and are aligned to
/// `granularity`.
fn check_mapping(range: usize, offset: usize, len: usize, granularity: usize) -> Result<()> {
    if len == 0 {
        return Err(Error::InvalidArgument("cannot map 0 bytes".into()));
    }
    if granularity == 0 || !offset.is_multiple_of(granularity) || !len.is_multiple_of(granularity) {
        return Err(Error::InvalidArgument(format!(
            "mapping {len} bytes at offset {offset}: both must be multiples of the granularity {granularity}"
        )));
    }
    if offset.checked_add(len).is_none_or(|end| end > range) {
        return Err(Error::InvalidArgument(format!(
            "mapping {len} bytes at offset {offset} overruns the {range}-byte range"
        )));
    }
    Ok(())
}

/// A reserved range of device addresses (`cuMemAddressReserve`), with no memory behind it
/// until [`VirtualRange::map`]; freed on drop.
#[derive(Debug)]
pub struct VirtualRange {
    base: CUdeviceptr,
    bytes: usize,
    granularity: usize,
}

impl VirtualRange {
    /// Reserves `bytes` (rounded up to the current device's granularity) of addresses.
    pub fn reserve(bytes: usize) -> Result<VirtualRange> {
        require_vmm()?;
        let granularity = allocation_granularity(current_device()?, false)?;
        let bytes = round_up_to_granularity(bytes, granularity)?;
        let mut base = 0;
        cu!(cuMemAddressReserve(&mut base, bytes, 0, 0, 0))?;
        Ok(VirtualRange {
            base,
            bytes,
            granularity,
        })
    }

    /// The first address.
    pub fn base(&self) -> CUdeviceptr {
        self.base
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Always false: a range is never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The granularity its mappings are aligned to.
    pub fn granularity(&self) -> usize {
        self.granularity
    }

    /// Maps all of `memory` at `offset` and grants the current device read and write access;
    /// unmapped (and the memory released) when the [`Mapping`] is dropped.
    pub fn map(&self, offset: usize, memory: PhysicalMemory) -> Result<Mapping<'_>> {
        check_mapping(self.bytes, offset, memory.bytes, self.granularity)?;
        let ptr = self.base + offset as CUdeviceptr;
        map_and_grant(ptr, &memory)?;
        Ok(Mapping {
            _range: self,
            ptr,
            memory,
        })
    }
}

impl Drop for VirtualRange {
    fn drop(&mut self) {
        cu_drop!(cuMemAddressFree(self.base, self.bytes));
    }
}

/// Maps `memory` at `ptr` and grants its device read and write access; unmaps again when the
/// access cannot be granted.
fn map_and_grant(ptr: CUdeviceptr, memory: &PhysicalMemory) -> Result<()> {
    cu!(cuMemMap(ptr, memory.bytes, 0, memory.handle, 0))?;
    let mut access: sys::CUmemAccessDesc = sys::CUmemAccessDesc {
        location: allocation_prop(memory.device, Shareable::No)?.location,
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    if let Err(e) = cu!(cuMemSetAccess(ptr, memory.bytes, &mut access, 1)) {
        cu_drop!(cuMemUnmap(ptr, memory.bytes));
        return Err(e);
    }
    Ok(())
}

/// Physical device memory (`cuMemCreate`) with no address until mapped; released on drop
/// (the driver keeps it while a mapping of it remains).
#[derive(Debug)]
pub struct PhysicalMemory {
    handle: CUmemGenericAllocationHandle,
    bytes: usize,
    device: usize,
}

impl PhysicalMemory {
    /// Creates `bytes` (a multiple of the granularity) of memory on the current device.
    pub fn new(bytes: usize, shareable: Shareable) -> Result<PhysicalMemory> {
        require_vmm()?;
        let device = current_device()?;
        let granularity = allocation_granularity(device, false)?;
        if bytes == 0 || !bytes.is_multiple_of(granularity) {
            return Err(Error::InvalidArgument(format!(
                "physical memory of {bytes} bytes: must be a positive multiple of the granularity {granularity}"
            )));
        }
        let prop = allocation_prop(device, shareable)?;
        let mut handle = 0;
        cu!(cuMemCreate(&mut handle, bytes, &prop, 0))?;
        Ok(PhysicalMemory {
            handle,
            bytes,
            device,
        })
    }

    #[cfg(unix)]
    /// Imports memory another process or API exported as a POSIX file descriptor
    /// (`cuMemImportFromShareableHandle`); `bytes` is its size, which the exporter knows.
    /// The descriptor stays the caller's (the driver does not take it).
    pub fn import_fd(fd: &OwnedFd, bytes: usize) -> Result<PhysicalMemory> {
        use std::os::fd::AsRawFd;
        require_vmm()?;
        let device = current_device()?;
        let mut handle = 0;
        // The handle travels as the integer in the pointer-sized argument (the API's
        // convention for POSIX file descriptors).
        let raw = fd.as_raw_fd() as usize as *mut std::ffi::c_void;
        cu!(cuMemImportFromShareableHandle(
            &mut handle,
            raw,
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        ))?;
        Ok(PhysicalMemory {
            handle,
            bytes,
            device,
        })
    }

    #[cfg(unix)]
    /// Exports this memory as a new POSIX file descriptor (`cuMemExportToShareableHandle`),
    /// for another process ([`PhysicalMemory::import_fd`]) or for
    /// [`crate::ExternalMemory::import_fd`]. Needs [`Shareable::PosixFd`].
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let mut fd: std::ffi::c_int = -1;
        cu!(cuMemExportToShareableHandle(
            (&mut fd as *mut std::ffi::c_int).cast(),
            self.handle,
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0
        ))?;
        if fd < 0 {
            return Err(Error::InvalidArgument(
                "the driver exported no file descriptor".into(),
            ));
        }
        // SAFETY: the driver returned a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Always false: physical memory is never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The device ordinal it lives on.
    pub fn device(&self) -> usize {
        self.device
    }
}

impl Drop for PhysicalMemory {
    fn drop(&mut self) {
        cu_drop!(cuMemRelease(self.handle));
    }
}

/// Physical memory mapped into a [`VirtualRange`], readable and writable by the device;
/// unmapped and released on drop.
#[derive(Debug)]
pub struct Mapping<'r> {
    _range: &'r VirtualRange,
    ptr: CUdeviceptr,
    memory: PhysicalMemory,
}

impl Mapping<'_> {
    /// The device address of the mapped memory.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The mapped size in bytes.
    pub fn len(&self) -> usize {
        self.memory.bytes
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Copies `src` to `offset` bytes into the mapping.
    pub fn copy_from_host(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        check_within(self.len(), offset, src.len())?;
        cu!(cuMemcpyHtoD_v2(
            self.ptr + offset as CUdeviceptr,
            src.as_ptr().cast(),
            src.len()
        ))
    }

    /// Copies from `offset` bytes into the mapping into `dst`.
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_within(self.len(), offset, dst.len())?;
        cu!(cuMemcpyDtoH_v2(
            dst.as_mut_ptr().cast(),
            self.ptr + offset as CUdeviceptr,
            dst.len()
        ))
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        cu_drop!(cuMemUnmap(self.ptr, self.memory.bytes));
    }
}

/// Checks that `bytes` bytes at `offset` lie within `len` bytes.
pub(crate) fn check_within(len: usize, offset: usize, bytes: usize) -> Result<()> {
    if offset.checked_add(bytes).is_none_or(|end| end > len) {
        return Err(Error::InvalidArgument(format!(
            "{bytes} bytes at offset {offset} overrun {len} bytes of device memory"
        )));
    }
    Ok(())
}

/// The chunks to add to `mapped` bytes (in chunks of `chunk`) so that at least `wanted` bytes
/// are mapped, within a reservation of `reserved` bytes.
fn chunks_to_add(mapped: usize, wanted: usize, chunk: usize, reserved: usize) -> Result<usize> {
    if wanted > reserved {
        return Err(Error::InvalidArgument(format!(
            "cannot grow to {wanted} bytes: only {reserved} bytes of addresses are reserved"
        )));
    }
    Ok(wanted.saturating_sub(mapped).div_ceil(chunk))
}

/// A device buffer that grows without moving: a large range of addresses is reserved once,
/// and physical chunks are mapped at its end as it grows, so [`GrowableBuffer::ptr`] never
/// changes and the data stay in place (no copy, unlike a reallocation).
///
/// Dropping it unmaps and releases every chunk and frees the range.
#[derive(Debug)]
pub struct GrowableBuffer {
    base: CUdeviceptr,
    reserved: usize,
    chunk: usize,
    device: usize,
    // The handles of the mapped chunks, in address order.
    chunks: Vec<CUmemGenericAllocationHandle>,
    len: usize,
}

impl GrowableBuffer {
    /// Reserves room for up to `max_bytes` on the current device, mapping in chunks of the
    /// device's recommended granularity. Nothing is mapped yet.
    pub fn new(max_bytes: usize) -> Result<GrowableBuffer> {
        require_vmm()?;
        let chunk = allocation_granularity(current_device()?, true)?;
        GrowableBuffer::with_chunk(max_bytes, chunk)
    }

    /// As [`GrowableBuffer::new`], mapping `chunk` bytes at a time (a multiple of the
    /// device's minimum granularity).
    pub fn with_chunk(max_bytes: usize, chunk: usize) -> Result<GrowableBuffer> {
        require_vmm()?;
        let device = current_device()?;
        let granularity = allocation_granularity(device, false)?;
        if chunk == 0 || !chunk.is_multiple_of(granularity) {
            return Err(Error::InvalidArgument(format!(
                "chunk of {chunk} bytes: must be a positive multiple of the granularity {granularity}"
            )));
        }
        let reserved = round_up_to_granularity(max_bytes, chunk)?;
        let mut base = 0;
        cu!(cuMemAddressReserve(&mut base, reserved, chunk, 0, 0))?;
        Ok(GrowableBuffer {
            base,
            reserved,
            chunk,
            device,
            chunks: Vec::new(),
            len: 0,
        })
    }

    /// The device address of the first byte; the same for the buffer's whole life.
    pub fn ptr(&self) -> CUdeviceptr {
        self.base
    }

    /// The bytes in use (what [`GrowableBuffer::grow_to`] asked for).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first growth.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes mapped (a whole number of chunks, at least [`GrowableBuffer::len`]).
    pub fn capacity(&self) -> usize {
        self.chunks.len() * self.chunk
    }

    /// The bytes of addresses reserved: the most it can grow to.
    pub fn reserved(&self) -> usize {
        self.reserved
    }

    /// The size of each mapped chunk.
    pub fn chunk_size(&self) -> usize {
        self.chunk
    }

    /// The number of chunks mapped.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Grows the buffer to `bytes`, mapping as many new chunks as that needs. The address and
    /// the bytes already there do not change. Shrinking is not done (`bytes` below
    /// [`GrowableBuffer::len`] leaves it as it is).
    pub fn grow_to(&mut self, bytes: usize) -> Result<()> {
        let add = chunks_to_add(self.capacity(), bytes, self.chunk, self.reserved)?;
        for _ in 0..add {
            let memory = PhysicalMemory::new(self.chunk, Shareable::No)?;
            let ptr = self.base + self.capacity() as CUdeviceptr;
            map_and_grant(ptr, &memory)?;
            // The mapping keeps the memory; the handle is released when it is unmapped.
            self.chunks.push(memory.handle);
            std::mem::forget(memory);
        }
        self.len = self.len.max(bytes);
        Ok(())
    }

    /// Copies `src` to `offset` bytes into the buffer (within [`GrowableBuffer::len`]).
    pub fn copy_from_host(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        check_within(self.len, offset, src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        cu!(cuMemcpyHtoD_v2(
            self.base + offset as CUdeviceptr,
            src.as_ptr().cast(),
            src.len()
        ))
    }

    /// Copies from `offset` bytes into the buffer into `dst` (within [`GrowableBuffer::len`]).
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_within(self.len, offset, dst.len())?;
        if dst.is_empty() {
            return Ok(());
        }
        cu!(cuMemcpyDtoH_v2(
            dst.as_mut_ptr().cast(),
            self.base + offset as CUdeviceptr,
            dst.len()
        ))
    }

    /// The device ordinal.
    pub fn device(&self) -> usize {
        self.device
    }
}

impl Drop for GrowableBuffer {
    fn drop(&mut self) {
        for (i, handle) in self.chunks.iter().enumerate() {
            cu_drop!(cuMemUnmap(
                self.base + (i * self.chunk) as CUdeviceptr,
                self.chunk
            ));
            cu_drop!(cuMemRelease(*handle));
        }
        cu_drop!(cuMemAddressFree(self.base, self.reserved));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_the_granularity() {
        const MIB2: usize = 2 << 20;
        assert_eq!(round_up_to_granularity(1, MIB2).unwrap(), MIB2);
        assert_eq!(round_up_to_granularity(MIB2, MIB2).unwrap(), MIB2);
        assert_eq!(round_up_to_granularity(MIB2 + 1, MIB2).unwrap(), 2 * MIB2);
        assert!(round_up_to_granularity(0, MIB2).is_err());
        assert!(round_up_to_granularity(5, 0).is_err());
        assert!(round_up_to_granularity(usize::MAX, MIB2).is_err());
    }

    #[test]
    fn mappings_are_aligned_and_inside_the_range() {
        let g = 1 << 21;
        assert!(check_mapping(4 * g, 0, g, g).is_ok());
        assert!(check_mapping(4 * g, 3 * g, g, g).is_ok());
        let e = check_mapping(4 * g, 3 * g, 2 * g, g)
            .unwrap_err()
            .to_string();
        assert!(e.contains("overruns"), "{e}");
        let e = check_mapping(4 * g, 1, g, g).unwrap_err().to_string();
        assert!(e.contains("multiples of the granularity"), "{e}");
        assert!(check_mapping(4 * g, 0, g + 1, g).is_err());
        assert!(check_mapping(4 * g, 0, 0, g).is_err());
        assert!(check_mapping(usize::MAX, usize::MAX - g + 1, 2 * g, g).is_err());
    }

    #[test]
    fn growth_maps_whole_chunks_within_the_reservation() {
        let c = 100;
        assert_eq!(chunks_to_add(0, 1, c, 1000).unwrap(), 1);
        assert_eq!(chunks_to_add(0, 250, c, 1000).unwrap(), 3);
        assert_eq!(chunks_to_add(300, 250, c, 1000).unwrap(), 0);
        assert_eq!(chunks_to_add(300, 301, c, 1000).unwrap(), 1);
        let e = chunks_to_add(0, 1001, c, 1000).unwrap_err().to_string();
        assert!(e.contains("only 1000 bytes"), "{e}");
    }

    #[test]
    fn copies_stay_within_the_length() {
        assert!(check_within(10, 0, 10).is_ok());
        assert!(check_within(10, 10, 0).is_ok());
        assert!(check_within(10, 5, 6).is_err());
        assert!(check_within(10, usize::MAX, 2).is_err());
    }
}
