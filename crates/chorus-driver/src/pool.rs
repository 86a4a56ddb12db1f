//! Stream-ordered allocation (`cuMemAllocAsync`, `cuMemFreeAsync`) and memory pools
//! (`cuMemPoolCreate`, the device's default pool, release threshold, trimming, usage).
//!
//! An allocation made on a stream is usable by work queued after it on that stream, and its
//! memory returns to its pool when a free queued on a stream is reached: no device-wide
//! synchronisation, as `cuMemAlloc`/`cuMemFree` have. A pool keeps freed memory (up to its
//! release threshold) for later allocations.

use crate::call::{cu, cu_drop};
use crate::context::{current_device, device_attribute, device_handle};
use crate::entry::require;
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::vmm::check_within;
use cudarc::driver::sys::{self, CUdeviceptr, CUmemPool_attribute};

const FEATURE: &str = "stream-ordered allocation";
const ENTRY_POINTS: &[&str] = &[
    "cuMemAllocAsync",
    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",
    "cuMemPoolCreate",
    "cuMemPoolDestroy",
    "cuMemPoolSetAttribute",
    "cuMemPoolGetAttribute",
    "cuMemPoolTrimTo",
    "cuDeviceGetDefaultMemPool",
];

/// The driver has the entry points and device `id` supports memory pools.
fn require_pools(id: usize) -> Result<()> {
    require(FEATURE, ENTRY_POINTS)?;
    pools_supported(id)
}

/// The current device, which supports memory pools (the driver is checked first, so that its
/// absence is `SdkNotFound`).
fn current_pool_device() -> Result<usize> {
    require(FEATURE, ENTRY_POINTS)?;
    let id = current_device()?;
    pools_supported(id)?;
    Ok(id)
}

fn pools_supported(id: usize) -> Result<()> {
    let supported = device_attribute(
        id,
        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
    )?;
    if supported == 0 {
        return Err(Error::Unsupported {
            feature: FEATURE,
            reason: format!("device {id} does not support memory pools"),
        });
    }
    Ok(())
}

/// A memory pool: the device's default one, or one made by [`MemoryPool::new`] (destroyed on
/// drop, after the allocations from it are freed).
#[derive(Debug)]
pub struct MemoryPool {
    raw: sys::CUmemoryPool,
    owned: bool,
}

// SAFETY: pool handles are usable from any thread.
unsafe impl Send for MemoryPool {}
// SAFETY: as above; attribute calls are thread-safe in the driver.
unsafe impl Sync for MemoryPool {}

impl MemoryPool {
    /// The default pool of device `id` (what [`StreamAllocation::new`] allocates from).
    pub fn default_for_device(id: usize) -> Result<MemoryPool> {
        require_pools(id)?;
        let mut raw = std::ptr::null_mut();
        cu!(cuDeviceGetDefaultMemPool(&mut raw, device_handle(id)?))?;
        Ok(MemoryPool { raw, owned: false })
    }

    /// A new pool of pinned memory on the current device; `max_bytes` caps its size (`None`:
    /// the driver's default).
    pub fn new(max_bytes: Option<usize>) -> Result<MemoryPool> {
        let id = current_pool_device()?;
        // SAFETY: a C struct of integers, pointers and enums whose zero value is their
        // INVALID/NONE member.
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = device_handle(id)?;
        props.maxSize = max_bytes.unwrap_or(0);
        let mut raw = std::ptr::null_mut();
        cu!(cuMemPoolCreate(&mut raw, &props))?;
        Ok(MemoryPool { raw, owned: true })
    }

    /// The raw handle.
    pub fn raw(&self) -> sys::CUmemoryPool {
        self.raw
    }

    fn get_u64(&self, attribute: CUmemPool_attribute) -> Result<u64> {
        let mut value: u64 = 0;
        cu!(cuMemPoolGetAttribute(
            self.raw,
            attribute,
            (&mut value as *mut u64).cast()
        ))?;
        Ok(value)
    }

    fn set_u64(&self, attribute: CUmemPool_attribute, mut value: u64) -> Result<()> {
        cu!(cuMemPoolSetAttribute(
            self.raw,
            attribute,
            (&mut value as *mut u64).cast()
        ))
    }

    /// Sets the release threshold: freed memory the pool keeps, instead of returning it to
    /// the system, at each synchronisation (`u64::MAX`: keep everything).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        self.set_u64(
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            bytes,
        )
    }

    /// The release threshold.
    pub fn release_threshold(&self) -> Result<u64> {
        self.get_u64(CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    }

    /// Returns memory to the system until the pool holds at most `keep_bytes` beyond what is
    /// allocated from it (`cuMemPoolTrimTo`).
    pub fn trim_to(&self, keep_bytes: usize) -> Result<()> {
        cu!(cuMemPoolTrimTo(self.raw, keep_bytes))
    }

    /// The current usage of the pool.
    pub fn usage(&self) -> Result<PoolUsage> {
        use CUmemPool_attribute::*;
        Ok(PoolUsage {
            reserved: self.get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
            reserved_high: self.get_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
            used: self.get_u64(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
            used_high: self.get_u64(CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
        })
    }

    /// Resets the high watermarks to the current values.
    pub fn reset_high_watermarks(&self) -> Result<()> {
        use CUmemPool_attribute::*;
        // Setting either to zero resets it (the only value the driver accepts).
        self.set_u64(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0)?;
        self.set_u64(CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0)
    }
}

impl Drop for MemoryPool {
    fn drop(&mut self) {
        if self.owned {
            cu_drop!(cuMemPoolDestroy(self.raw));
        }
    }
}

/// A pool's memory, in bytes (the pool attributes `CU_MEMPOOL_ATTR_*_MEM_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolUsage {
    /// Backing memory the pool holds now.
    pub reserved: u64,
    /// The most it held since the last reset.
    pub reserved_high: u64,
    /// Memory allocated from it now.
    pub used: u64,
    /// The most allocated since the last reset.
    pub used_high: u64,
}

/// Device memory allocated in stream order (`cuMemAllocAsync`): usable by work queued after
/// the allocation on its stream (or made to wait for it). Give it back in stream order with
/// [`StreamAllocation::free_async`]; dropped otherwise, it is freed with `cuMemFree`, which
/// waits for the device.
#[derive(Debug)]
pub struct StreamAllocation {
    ptr: CUdeviceptr,
    bytes: usize,
}

// SAFETY: a device address owned by this value.
unsafe impl Send for StreamAllocation {}
// SAFETY: shared access only reads the address.
unsafe impl Sync for StreamAllocation {}

impl StreamAllocation {
    /// `bytes` from the current device's default pool, in the order of `stream`.
    pub fn new(bytes: usize, stream: &Stream) -> Result<StreamAllocation> {
        check_bytes(bytes)?;
        current_pool_device()?;
        let mut ptr = 0;
        cu!(cuMemAllocAsync(&mut ptr, bytes, stream.raw()))?;
        Ok(StreamAllocation { ptr, bytes })
    }

    /// `bytes` from `pool`, in the order of `stream`.
    pub fn from_pool(pool: &MemoryPool, bytes: usize, stream: &Stream) -> Result<StreamAllocation> {
        check_bytes(bytes)?;
        let mut ptr = 0;
        cu!(cuMemAllocFromPoolAsync(
            &mut ptr,
            bytes,
            pool.raw,
            stream.raw()
        ))?;
        Ok(StreamAllocation { ptr, bytes })
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

    /// Queues a copy of `src` to `offset` bytes into the allocation on `stream`.
    ///
    /// # Safety
    ///
    /// The device reads `src` until `stream` reaches the copy: it must stay alive and
    /// unchanged until then (pageable memory is staged by the driver before the call
    /// returns, but pinned memory is not).
    pub unsafe fn copy_from_host_async(
        &mut self,
        offset: usize,
        src: &[u8],
        stream: &Stream,
    ) -> Result<()> {
        check_within(self.bytes, offset, src.len())?;
        cu!(cuMemcpyHtoDAsync_v2(
            self.ptr + offset as CUdeviceptr,
            src.as_ptr().cast(),
            src.len(),
            stream.raw()
        ))
    }

    /// Copies from `offset` bytes into the allocation into `dst`, after the work queued on
    /// `stream` (which is synchronised).
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8], stream: &Stream) -> Result<()> {
        check_within(self.bytes, offset, dst.len())?;
        cu!(cuMemcpyDtoHAsync_v2(
            dst.as_mut_ptr().cast(),
            self.ptr + offset as CUdeviceptr,
            dst.len(),
            stream.raw()
        ))?;
        stream.synchronize()
    }

    /// Frees the memory in the order of `stream`: it returns to its pool when the stream gets
    /// there (work queued before it may still use it).
    pub fn free_async(self, stream: &Stream) -> Result<()> {
        // On failure the drop frees it instead.
        cu!(cuMemFreeAsync(self.ptr, stream.raw()))?;
        // Freed in stream order: not again by the drop.
        std::mem::forget(self);
        Ok(())
    }
}

impl Drop for StreamAllocation {
    fn drop(&mut self) {
        cu_drop!(cuMemFree_v2(self.ptr));
    }
}

fn check_bytes(bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Err(Error::InvalidArgument("cannot allocate 0 bytes".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_byte_allocations_are_refused_before_the_driver() {
        let e = StreamAllocation::new(0, &Stream::null())
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 bytes"), "{e}");
    }

    #[test]
    fn without_a_driver_pools_are_sdk_not_found() {
        if !crate::sdk_not_found() {
            return;
        }
        assert!(matches!(
            MemoryPool::default_for_device(0),
            Err(Error::SdkNotFound { .. })
        ));
        assert!(matches!(
            StreamAllocation::new(16, &Stream::null()),
            Err(Error::SdkNotFound { .. })
        ));
    }
}
