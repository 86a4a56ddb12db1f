//! Sharing device memory and events between processes (`cuIpcGetMemHandle`,
//! `cuIpcOpenMemHandle`, `cuIpcGetEventHandle`, `cuIpcOpenEventHandle`).
//!
//! A handle is 64 opaque bytes; send them to the other process any way you like
//! ([`IpcMemHandle::to_hex`] / [`IpcMemHandle::from_hex`] make them text for an environment
//! variable or a pipe). The other process opens the handle on the same device and reads and
//! writes the exporter's memory in place; the memory stays the exporter's, and must outlive
//! the other side's use of it.

use crate::call::{cu, cu_drop};
use crate::error::{Error, Result};
use crate::memory::DeviceMemory;
use crate::stream::Event;
use crate::vmm::check_within;
use cudarc::driver::sys::{self, CUdeviceptr};

/// The 64 bytes of a handle as 128 lowercase hex digits.
fn hex(bytes: &[u8; 64]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 128 hex digits back to 64 bytes.
fn unhex(text: &str) -> Result<[u8; 64]> {
    let text = text.trim();
    if text.len() != 128 || !text.is_ascii() {
        return Err(Error::InvalidArgument(format!(
            "an IPC handle is 128 hex digits, not {} characters",
            text.chars().count()
        )));
    }
    let mut bytes = [0u8; 64];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| {
            Error::InvalidArgument(format!("an IPC handle has a non-hex digit near {}", 2 * i))
        })?;
    }
    Ok(bytes)
}

fn to_c_bytes(bytes: &[u8; 64]) -> [std::ffi::c_char; 64] {
    bytes.map(|b| b as std::ffi::c_char)
}

fn from_c_bytes(reserved: &[std::ffi::c_char; 64]) -> [u8; 64] {
    reserved.map(|b| b as u8)
}

/// The handle of a device allocation, for another process to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpcMemHandle {
    bytes: [u8; 64],
}

impl IpcMemHandle {
    /// The handle of `memory` (an allocation of `cuMemAlloc`).
    pub fn of(memory: &DeviceMemory) -> Result<IpcMemHandle> {
        let mut raw = sys::CUipcMemHandle { reserved: [0; 64] };
        cu!(cuIpcGetMemHandle(&mut raw, memory.ptr()))?;
        Ok(IpcMemHandle {
            bytes: from_c_bytes(&raw.reserved),
        })
    }

    /// The bytes.
    pub fn to_bytes(&self) -> [u8; 64] {
        self.bytes
    }

    /// A handle from its bytes.
    pub fn from_bytes(bytes: [u8; 64]) -> IpcMemHandle {
        IpcMemHandle { bytes }
    }

    /// The bytes as 128 hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.bytes)
    }

    /// A handle from [`IpcMemHandle::to_hex`]'s text.
    pub fn from_hex(text: &str) -> Result<IpcMemHandle> {
        Ok(IpcMemHandle {
            bytes: unhex(text)?,
        })
    }

    /// Opens the handle in this process (the exporter's memory, in the current context; peer
    /// access is enabled as needed). Closed when the [`IpcMemory`] is dropped.
    pub fn open(&self) -> Result<IpcMemory> {
        let raw = sys::CUipcMemHandle {
            reserved: to_c_bytes(&self.bytes),
        };
        let mut ptr = 0;
        let flags = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32;
        cu!(cuIpcOpenMemHandle_v2(&mut ptr, raw, flags))?;
        let (mut base, mut range) = (0, 0);
        if let Err(e) = cu!(cuMemGetAddressRange_v2(&mut base, &mut range, ptr)) {
            cu_drop!(cuIpcCloseMemHandle(ptr));
            return Err(e);
        }
        // The bytes from the opened address to the end of the allocation it lies in.
        let bytes = (base + range as CUdeviceptr).saturating_sub(ptr) as usize;
        Ok(IpcMemory { ptr, bytes })
    }
}

/// Another process's device memory, opened from an [`IpcMemHandle`]; closed on drop.
#[derive(Debug)]
pub struct IpcMemory {
    ptr: CUdeviceptr,
    bytes: usize,
}

impl IpcMemory {
    /// The device address in this process.
    pub fn ptr(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The bytes addressable from [`IpcMemory::ptr`] (to the end of the exported allocation,
    /// which the driver may have rounded up).
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Always false: allocations are never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Copies `offset` bytes into the memory into `dst`.
    pub fn copy_to_host(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_within(self.bytes, offset, dst.len())?;
        cu!(cuMemcpyDtoH_v2(
            dst.as_mut_ptr().cast(),
            self.ptr + offset as CUdeviceptr,
            dst.len()
        ))
    }

    /// Copies `src` to `offset` bytes into the memory.
    pub fn copy_from_host(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        check_within(self.bytes, offset, src.len())?;
        cu!(cuMemcpyHtoD_v2(
            self.ptr + offset as CUdeviceptr,
            src.as_ptr().cast(),
            src.len()
        ))
    }
}

impl Drop for IpcMemory {
    fn drop(&mut self) {
        cu_drop!(cuIpcCloseMemHandle(self.ptr));
    }
}

/// The handle of an event, for another process to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpcEventHandle {
    bytes: [u8; 64],
}

impl IpcEventHandle {
    /// A new event that can be shared ([`IpcEventHandle::interprocess_event`]'s flags:
    /// interprocess, no timing).
    pub fn interprocess_event() -> Result<Event> {
        use sys::CUevent_flags::*;
        Event::with_flags(CU_EVENT_INTERPROCESS as u32 | CU_EVENT_DISABLE_TIMING as u32)
    }

    /// The handle of `event`, which must have been made by
    /// [`IpcEventHandle::interprocess_event`].
    pub fn of(event: &Event) -> Result<IpcEventHandle> {
        let mut raw = sys::CUipcEventHandle { reserved: [0; 64] };
        cu!(cuIpcGetEventHandle(&mut raw, event.raw()))?;
        Ok(IpcEventHandle {
            bytes: from_c_bytes(&raw.reserved),
        })
    }

    /// The bytes as 128 hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.bytes)
    }

    /// A handle from [`IpcEventHandle::to_hex`]'s text.
    pub fn from_hex(text: &str) -> Result<IpcEventHandle> {
        Ok(IpcEventHandle {
            bytes: unhex(text)?,
        })
    }

    /// The bytes.
    pub fn to_bytes(&self) -> [u8; 64] {
        self.bytes
    }

    /// Opens the handle in this process: an event to record and wait on like one's own
    /// (interprocess, no timing).
    pub fn open(&self) -> Result<Event> {
        let raw = sys::CUipcEventHandle {
            reserved: to_c_bytes(&self.bytes),
        };
        let mut event = std::ptr::null_mut();
        cu!(cuIpcOpenEventHandle(&mut event, raw))?;
        Ok(Event::from_owned_raw(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_through_hex() {
        let mut bytes = [0u8; 64];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i * 37 + 5) as u8;
        }
        let handle = IpcMemHandle::from_bytes(bytes);
        let text = handle.to_hex();
        assert_eq!(text.len(), 128);
        assert_eq!(IpcMemHandle::from_hex(&text).unwrap(), handle);
        assert_eq!(IpcEventHandle::from_hex(&text).unwrap().to_bytes(), bytes);
        assert_eq!(from_c_bytes(&to_c_bytes(&bytes)), bytes);
        let e = IpcMemHandle::from_hex("abc").unwrap_err().to_string();
        assert!(e.contains("128 hex digits"), "{e}");
        let bad = "zz".repeat(64);
        assert!(IpcMemHandle::from_hex(&bad).is_err());
        let wide = "é".repeat(64);
        assert!(IpcMemHandle::from_hex(&wide).is_err());
    }
}
