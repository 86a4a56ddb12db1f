//! External memory and semaphores imported from POSIX file descriptors
//! (`cuImportExternalMemory`, `cuExternalMemoryGetMappedBuffer`,
//! `cuImportExternalSemaphore`, `cuSignalExternalSemaphoresAsync`,
//! `cuWaitExternalSemaphoresAsync`): memory and synchronisation objects another API (Vulkan,
//! another CUDA allocation exported with [`crate::PhysicalMemory::export_fd`]) made.
//!
//! On a successful import the driver takes the file descriptor (it is closed by the driver);
//! on failure it stays the caller's and is closed when the [`OwnedFd`] is dropped.

use crate::call::{cu, cu_drop};
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::vmm::check_within;
use cudarc::driver::sys::{self, CUdeviceptr};
use std::os::fd::{IntoRawFd, OwnedFd};

/// Memory imported from another API (`cuImportExternalMemory`), destroyed on drop (after the
/// buffers mapped from it, which borrow it).
#[derive(Debug)]
pub struct ExternalMemory {
    raw: sys::CUexternalMemory,
    bytes: u64,
}

// SAFETY: external memory handles are usable from any thread.
unsafe impl Send for ExternalMemory {}
// SAFETY: as above.
unsafe impl Sync for ExternalMemory {}

impl ExternalMemory {
    /// Imports `bytes` of memory exported as an opaque POSIX file descriptor
    /// (`CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`; Vulkan's `VK_KHR_external_memory_fd`, or a
    /// CUDA allocation's [`crate::PhysicalMemory::export_fd`]). `bytes` is the whole
    /// allocation's size; `dedicated` says it is a dedicated allocation (Vulkan's flag).
    pub fn import_fd(fd: OwnedFd, bytes: u64, dedicated: bool) -> Result<ExternalMemory> {
        use std::os::fd::AsRawFd;
        if bytes == 0 {
            return Err(Error::InvalidArgument(
                "cannot import 0 bytes of external memory".into(),
            ));
        }
        let desc = sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
            type_: sys::CUexternalMemoryHandleType::CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
            handle: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC_st__bindgen_ty_1 { fd: fd.as_raw_fd() },
            size: bytes,
            flags: if dedicated { 1 } else { 0 },
            reserved: [0; 16],
        };
        let mut raw = std::ptr::null_mut();
        cu!(cuImportExternalMemory(&mut raw, &desc))?;
        // The driver owns the descriptor now.
        let _ = fd.into_raw_fd();
        Ok(ExternalMemory { raw, bytes })
    }

    /// The imported size in bytes.
    pub fn len(&self) -> u64 {
        self.bytes
    }

    /// Always false: imports are never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Maps `bytes` at `offset` of the memory as a device buffer
    /// (`cuExternalMemoryGetMappedBuffer`).
    pub fn mapped_buffer(&self, offset: u64, bytes: u64) -> Result<ExternalBuffer<'_>> {
        if bytes == 0 || offset.checked_add(bytes).is_none_or(|end| end > self.bytes) {
            return Err(Error::InvalidArgument(format!(
                "a buffer of {bytes} bytes at offset {offset} does not fit {} bytes of external memory",
                self.bytes
            )));
        }
        let desc = sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
            offset,
            size: bytes,
            flags: 0,
            reserved: [0; 16],
        };
        let mut ptr = 0;
        cu!(cuExternalMemoryGetMappedBuffer(&mut ptr, self.raw, &desc))?;
        Ok(ExternalBuffer {
            _memory: self,
            ptr,
            bytes: bytes as usize,
        })
    }
}

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        cu_drop!(cuDestroyExternalMemory(self.raw));
    }
}

/// A device buffer over external memory; freed (`cuMemFree`) on drop.
#[derive(Debug)]
pub struct ExternalBuffer<'m> {
    _memory: &'m ExternalMemory,
    ptr: CUdeviceptr,
    bytes: usize,
}

impl ExternalBuffer<'_> {
    /// The device address.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Copies `offset` bytes into the buffer into `dst`.
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_within(self.bytes, offset, dst.len())?;
        cu!(cuMemcpyDtoH_v2(
            dst.as_mut_ptr().cast(),
            self.ptr + offset as CUdeviceptr,
            dst.len()
        ))
    }

    /// Copies `src` to `offset` bytes into the buffer.
    pub fn copy_from_host(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        check_within(self.bytes, offset, src.len())?;
        cu!(cuMemcpyHtoD_v2(
            self.ptr + offset as CUdeviceptr,
            src.as_ptr().cast(),
            src.len()
        ))
    }
}

impl Drop for ExternalBuffer<'_> {
    fn drop(&mut self) {
        cu_drop!(cuMemFree_v2(self.ptr));
    }
}

/// The kind of an external semaphore's file descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SemaphoreFdKind {
    /// A binary semaphore (`CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD`, Vulkan's
    /// `VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT`).
    Opaque,
    /// A timeline semaphore
    /// (`CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD`): signals and waits carry
    /// a value.
    Timeline,
}

/// A semaphore imported from another API (`cuImportExternalSemaphore`), destroyed on drop.
#[derive(Debug)]
pub struct ExternalSemaphore {
    raw: sys::CUexternalSemaphore,
}

// SAFETY: external semaphore handles are usable from any thread.
unsafe impl Send for ExternalSemaphore {}
// SAFETY: as above.
unsafe impl Sync for ExternalSemaphore {}

impl ExternalSemaphore {
    /// Imports a semaphore exported as a POSIX file descriptor of `kind`.
    pub fn import_fd(fd: OwnedFd, kind: SemaphoreFdKind) -> Result<ExternalSemaphore> {
        use std::os::fd::AsRawFd;
        use sys::CUexternalSemaphoreHandleType::*;
        let desc = sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC {
            type_: match kind {
                SemaphoreFdKind::Opaque => CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD,
                SemaphoreFdKind::Timeline => {
                    CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD
                }
            },
            handle: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC_st__bindgen_ty_1 {
                fd: fd.as_raw_fd(),
            },
            flags: 0,
            reserved: [0; 16],
        };
        let mut raw = std::ptr::null_mut();
        cu!(cuImportExternalSemaphore(&mut raw, &desc))?;
        // The driver owns the descriptor now.
        let _ = fd.into_raw_fd();
        Ok(ExternalSemaphore { raw })
    }

    /// Queues a signal on `stream` (`value` is the timeline value; binary semaphores ignore it).
    pub fn signal(&self, value: u64, stream: &Stream) -> Result<()> {
        // SAFETY: a C struct of integers and unions of integers: zero is valid.
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
        params.params.fence.value = value;
        cu!(cuSignalExternalSemaphoresAsync(
            &self.raw,
            &params,
            1,
            stream.raw()
        ))
    }

    /// Queues a wait on `stream` until the semaphore is signalled (with at least `value` for a
    /// timeline).
    pub fn wait(&self, value: u64, stream: &Stream) -> Result<()> {
        // SAFETY: as in `signal`.
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
        params.params.fence.value = value;
        cu!(cuWaitExternalSemaphoresAsync(
            &self.raw,
            &params,
            1,
            stream.raw()
        ))
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        cu_drop!(cuDestroyExternalSemaphore(self.raw));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_imports_are_refused_before_the_driver() {
        let fd = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let e = ExternalMemory::import_fd(fd, 0, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 bytes"), "{e}");
    }
}
