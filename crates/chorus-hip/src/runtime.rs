//! Devices, memory, streams, events, modules and launches through the HIP runtime.

use crate::error::{Error, Result};
use crate::loader::{Loaded, loaded};
use crate::sys::{self, hipError_t};
use chorus_lang::target::Target;
use std::ffi::{CStr, CString, c_int, c_void};

/// `Ok` for `hipSuccess`, else [`Error::Hip`] naming `call`.
pub(crate) fn check(l: &Loaded, call: &'static str, code: hipError_t) -> Result<()> {
    if code == sys::HIP_SUCCESS {
        return Ok(());
    }
    // SAFETY: hipGetErrorString returns a static NUL-terminated string (or null).
    let text = unsafe { (l.hip.hipGetErrorString)(code) };
    let message = if text.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: non-null, NUL-terminated, static.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    };
    Err(Error::Hip {
        call,
        code,
        message,
    })
}

/// The runtime, initialised (`hipInit`), with its device count.
fn initialised() -> Result<&'static Loaded> {
    let l = loaded()?;
    // SAFETY: hipInit takes flags (0) and may be called more than once.
    check(l, "hipInit", unsafe { (l.hip.hipInit)(0) })?;
    Ok(l)
}

/// How many HIP devices there are: `Err(HipNotFound)` without ROCm, `Ok(0)` when the runtime
/// loads but sees no device.
pub fn device_count() -> Result<usize> {
    let l = loaded()?;
    // SAFETY: as in `initialised`.
    let init = unsafe { (l.hip.hipInit)(0) };
    if init == sys::HIP_ERROR_NO_DEVICE {
        return Ok(0);
    }
    check(l, "hipInit", init)?;
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer.
    let code = unsafe { (l.hip.hipGetDeviceCount)(&mut n) };
    if code == sys::HIP_ERROR_NO_DEVICE {
        return Ok(0);
    }
    check(l, "hipGetDeviceCount", code)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// What one device is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    /// The marketing name (`AMD Instinct MI300X`).
    pub name: String,
    /// `gcnArchName` as the runtime reports it, with feature suffixes
    /// (`gfx942:sramecc+:xnack-`).
    pub gcn_arch_name: String,
    /// Threads per wavefront: 64 on CDNA, 32 on RDNA.
    pub warp_size: u32,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Shared memory (LDS) per block in bytes.
    pub shared_memory_per_block: u32,
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Compute units.
    pub multiprocessors: u32,
}

impl DeviceProperties {
    /// The processor name: `gcnArchName` up to its first `:` (`gfx942`).
    pub fn arch(&self) -> &str {
        processor_name(&self.gcn_arch_name)
    }
}

/// `gcn_arch_name` up to its first `:` (`gfx90a:sramecc+:xnack-` → `gfx90a`).
pub fn processor_name(gcn_arch_name: &str) -> &str {
    gcn_arch_name.split(':').next().unwrap_or_default()
}

/// The `gfx…` name in a `hipDeviceProp_t` buffer: at ROCm 5's offset when `r0000` (what
/// `hipGetDeviceProperties` fills before ROCm 6), else at ROCm 6's (`hipDeviceProp_tR0600`,
/// what `hipGetDevicePropertiesR0600` fills). `None` when the field does not hold a `gfx` name.
pub fn gcn_arch_name_in(props: &[u8], r0000: bool) -> Option<String> {
    let start = if r0000 {
        sys::GCN_ARCH_NAME_OFFSET_R0000
    } else {
        sys::GCN_ARCH_NAME_OFFSET_R0600
    };
    let field = props.get(start..(start + 256).min(props.len()))?;
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let text = std::str::from_utf8(&field[..end]).ok()?;
    text.starts_with("gfx").then(|| text.to_string())
}

/// One HIP device, by ordinal.
#[derive(Clone, Debug)]
pub struct Device {
    ordinal: usize,
    properties: DeviceProperties,
    target: Target,
}

impl Device {
    /// Device `ordinal`, with its properties read once.
    pub fn new(ordinal: usize) -> Result<Device> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let l = initialised()?;
        let id = ordinal as c_int;
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: the buffer holds 256 bytes, as passed.
        check(l, "hipDeviceGetName", unsafe {
            (l.hip.hipDeviceGetName)(name.as_mut_ptr(), 256, id)
        })?;
        // SAFETY: hipDeviceGetName NUL-terminates within the length given.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let attribute = |attr: c_int, call: &'static str| -> Result<u32> {
            let mut v: c_int = 0;
            // SAFETY: `v` is a valid out-pointer; `attr` is a hipDeviceAttribute_t value.
            check(l, call, unsafe {
                (l.hip.hipDeviceGetAttribute)(&mut v, attr, id)
            })?;
            Ok(u32::try_from(v).unwrap_or(0))
        };
        let mut total_memory = 0usize;
        // SAFETY: valid out-pointer.
        check(l, "hipDeviceTotalMem", unsafe {
            (l.hip.hipDeviceTotalMem)(&mut total_memory, id)
        })?;
        let mut props = vec![0u8; sys::DEVICE_PROP_BYTES];
        let (code, r0000) = match l.properties_r0600 {
            // SAFETY: the buffer is larger than ROCm 6's hipDeviceProp_t.
            Some(f) => (unsafe { f(props.as_mut_ptr().cast(), id) }, false),
            // SAFETY: the buffer is larger than ROCm 5's hipDeviceProp_t.
            None => (
                unsafe { (l.hip.hipGetDeviceProperties)(props.as_mut_ptr().cast(), id) },
                true,
            ),
        };
        check(l, "hipGetDeviceProperties", code)?;
        let gcn_arch_name = gcn_arch_name_in(&props, r0000).unwrap_or_default();
        let warp_size = attribute(sys::ATTRIBUTE_WARP_SIZE, "hipDeviceGetAttribute(WarpSize)")?;
        // The structure's own `warpSize` must agree with the attribute: a runtime whose layout
        // is not the one read here would be caught now, not by a wrong architecture later.
        let (warp_at, warp_call) = if r0000 {
            (sys::WARP_SIZE_OFFSET_R0000, "hipGetDeviceProperties")
        } else {
            (sys::WARP_SIZE_OFFSET_R0600, "hipGetDevicePropertiesR0600")
        };
        let in_props = u32::from_ne_bytes(props[warp_at..warp_at + 4].try_into().expect("4 bytes"));
        if in_props != warp_size {
            return Err(Error::Invalid(format!(
                "{warp_call} reports {in_props}-lane waves at its warpSize offset ({warp_at}), \
                 hipDeviceGetAttribute {warp_size}: the runtime's hipDeviceProp_t layout is not \
                 the one this crate reads"
            )));
        }
        let properties = DeviceProperties {
            name,
            warp_size,
            total_memory,
            shared_memory_per_block: attribute(
                sys::ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                "hipDeviceGetAttribute(MaxSharedMemoryPerBlock)",
            )?,
            max_threads_per_block: attribute(
                sys::ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                "hipDeviceGetAttribute(MaxThreadsPerBlock)",
            )?,
            multiprocessors: attribute(
                sys::ATTRIBUTE_MULTIPROCESSOR_COUNT,
                "hipDeviceGetAttribute(MultiprocessorCount)",
            )?,
            gcn_arch_name,
        };
        let target = Target::hip(properties.arch()).ok_or_else(|| Error::UnknownArch {
            arch: properties.gcn_arch_name.clone(),
        })?;
        if target.warp_width != properties.warp_size {
            return Err(Error::Invalid(format!(
                "{} reports {}-lane waves, but its target has {}",
                properties.gcn_arch_name, properties.warp_size, target.warp_width
            )));
        }
        Ok(Device {
            ordinal,
            properties,
            target,
        })
    }

    /// The ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The properties read when the device was opened.
    pub fn properties(&self) -> &DeviceProperties {
        &self.properties
    }

    /// The Chorus target of the device's architecture (warp width, capabilities, limits).
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Makes the device current on this thread (`hipSetDevice`).
    pub fn make_current(&self) -> Result<()> {
        let l = initialised()?;
        // SAFETY: a valid ordinal (checked when the device was opened).
        check(l, "hipSetDevice", unsafe {
            (l.hip.hipSetDevice)(self.ordinal as c_int)
        })
    }

    /// Waits for all work on the device (`hipDeviceSynchronize`).
    pub fn synchronize(&self) -> Result<()> {
        self.make_current()?;
        let l = loaded()?;
        // SAFETY: no arguments.
        check(l, "hipDeviceSynchronize", unsafe {
            (l.hip.hipDeviceSynchronize)()
        })
    }
}

/// Device memory: `len` bytes from `hipMalloc`, freed on drop.
#[derive(Debug)]
pub struct DeviceMemory {
    ptr: *mut c_void,
    len: usize,
    device: usize,
}

// SAFETY: a device address is not tied to a host thread; HIP's calls on it are thread-safe.
unsafe impl Send for DeviceMemory {}
// SAFETY: as above; every mutation goes through HIP calls.
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// `len` bytes (at least one) on `device`.
    pub fn alloc(device: &Device, len: usize) -> Result<DeviceMemory> {
        device.make_current()?;
        let l = loaded()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: valid out-pointer; HIP allocates.
        check(l, "hipMalloc", unsafe {
            (l.hip.hipMalloc)(&mut ptr, len.max(1))
        })?;
        Ok(DeviceMemory {
            ptr,
            len,
            device: device.ordinal,
        })
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty allocation.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ordinal of the device it lives on.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The device address.
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }

    fn same_len(&self, len: usize) -> Result<()> {
        if len == self.len {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "a copy of {len} bytes into or out of {} bytes of device memory",
                self.len
            )))
        }
    }

    /// Copies `data` (exactly [`DeviceMemory::len`] bytes) to the device.
    pub fn copy_from_host(&mut self, data: &[u8]) -> Result<()> {
        self.same_len(data.len())?;
        let l = loaded()?;
        // SAFETY: both ranges hold `len` bytes.
        check(l, "hipMemcpy", unsafe {
            (l.hip.hipMemcpy)(
                self.ptr,
                data.as_ptr().cast(),
                data.len(),
                sys::MEMCPY_HOST_TO_DEVICE,
            )
        })
    }

    /// Copies the device's bytes into `out` (exactly [`DeviceMemory::len`] bytes).
    pub fn copy_to_host(&self, out: &mut [u8]) -> Result<()> {
        self.same_len(out.len())?;
        let l = loaded()?;
        // SAFETY: both ranges hold `len` bytes.
        check(l, "hipMemcpy", unsafe {
            (l.hip.hipMemcpy)(
                out.as_mut_ptr().cast(),
                self.ptr,
                out.len(),
                sys::MEMCPY_DEVICE_TO_HOST,
            )
        })
    }

    /// Copies `other`'s bytes (the same length) into this memory.
    pub fn copy_from_device(&mut self, other: &DeviceMemory) -> Result<()> {
        self.same_len(other.len)?;
        let l = loaded()?;
        // SAFETY: both device ranges hold `len` bytes.
        check(l, "hipMemcpy", unsafe {
            (l.hip.hipMemcpy)(self.ptr, other.ptr, self.len, sys::MEMCPY_DEVICE_TO_DEVICE)
        })
    }

    /// Sets every byte to `value`.
    pub fn memset(&mut self, value: u8) -> Result<()> {
        let l = loaded()?;
        // SAFETY: the range holds `len` bytes.
        check(l, "hipMemset", unsafe {
            (l.hip.hipMemset)(self.ptr, c_int::from(value), self.len)
        })
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if let Ok(l) = loaded() {
            // SAFETY: `ptr` came from hipMalloc and is freed once. A failure cannot be
            // reported from drop.
            let _ = unsafe { (l.hip.hipFree)(self.ptr) };
        }
    }
}

/// Copies `len` bytes between the host and the device: device to host when `to_host`
/// (`dst` on the host), else host to device (`src` on the host).
///
/// # Safety
///
/// Both ranges must be valid for `len` bytes, the device one a live device allocation.
pub(crate) unsafe fn copy_raw(
    dst: *mut c_void,
    src: *mut c_void,
    len: usize,
    to_host: bool,
) -> Result<()> {
    let l = loaded()?;
    let kind = if to_host {
        sys::MEMCPY_DEVICE_TO_HOST
    } else {
        sys::MEMCPY_HOST_TO_DEVICE
    };
    // SAFETY: the caller vouches for both ranges.
    check(l, "hipMemcpy", unsafe {
        (l.hip.hipMemcpy)(dst, src, len, kind)
    })
}

/// A HIP stream, destroyed on drop.
#[derive(Debug)]
pub struct Stream {
    raw: sys::hipStream_t,
}

// SAFETY: HIP streams may be used from any thread.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream on `device`.
    pub fn new(device: &Device) -> Result<Stream> {
        device.make_current()?;
        let l = loaded()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(l, "hipStreamCreate", unsafe {
            (l.hip.hipStreamCreate)(&mut raw)
        })?;
        Ok(Stream { raw })
    }

    /// The raw handle (null is the default stream).
    pub fn raw(&self) -> sys::hipStream_t {
        self.raw
    }

    /// Waits for the stream's work.
    pub fn synchronize(&self) -> Result<()> {
        let l = loaded()?;
        // SAFETY: a live stream.
        check(l, "hipStreamSynchronize", unsafe {
            (l.hip.hipStreamSynchronize)(self.raw)
        })
    }

    /// Makes later work on this stream wait for `event`'s last recording
    /// (`hipStreamWaitEvent`), without waiting on the host.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        let l = loaded()?;
        // SAFETY: a live stream and event.
        check(l, "hipStreamWaitEvent", unsafe {
            (l.hip.hipStreamWaitEvent)(self.raw, event.raw, 0)
        })
    }

    /// Copies `data` into `memory` in stream order.
    ///
    /// # Safety
    ///
    /// `data` must stay alive and unchanged until the stream reaches the copy.
    pub unsafe fn copy_from_host_async(
        &self,
        memory: &mut DeviceMemory,
        data: &[u8],
    ) -> Result<()> {
        memory.same_len(data.len())?;
        let l = loaded()?;
        // SAFETY: both ranges hold `len` bytes; the caller keeps `data` alive.
        check(l, "hipMemcpyAsync", unsafe {
            (l.hip.hipMemcpyAsync)(
                memory.ptr,
                data.as_ptr().cast(),
                data.len(),
                sys::MEMCPY_HOST_TO_DEVICE,
                self.raw,
            )
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Ok(l) = loaded() {
            // SAFETY: a stream this value created, destroyed once.
            let _ = unsafe { (l.hip.hipStreamDestroy)(self.raw) };
        }
    }
}

/// A HIP event, destroyed on drop.
#[derive(Debug)]
pub struct Event {
    raw: sys::hipEvent_t,
}

// SAFETY: HIP events may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    /// A new event (on the current device).
    pub fn new() -> Result<Event> {
        let l = initialised()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(l, "hipEventCreate", unsafe {
            (l.hip.hipEventCreate)(&mut raw)
        })?;
        Ok(Event { raw })
    }

    /// Records the event on `stream` (`None`: the default stream).
    pub fn record(&self, stream: Option<&Stream>) -> Result<()> {
        let l = loaded()?;
        let s = stream.map_or(std::ptr::null_mut(), Stream::raw);
        // SAFETY: a live event and stream.
        check(l, "hipEventRecord", unsafe {
            (l.hip.hipEventRecord)(self.raw, s)
        })
    }

    /// Waits until the event has happened.
    pub fn synchronize(&self) -> Result<()> {
        let l = loaded()?;
        // SAFETY: a live event.
        check(l, "hipEventSynchronize", unsafe {
            (l.hip.hipEventSynchronize)(self.raw)
        })
    }

    /// Milliseconds from `start` to this event (both recorded and complete).
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        let l = loaded()?;
        let mut ms = 0f32;
        // SAFETY: valid out-pointer, live events.
        check(l, "hipEventElapsedTime", unsafe {
            (l.hip.hipEventElapsedTime)(&mut ms, start.raw, self.raw)
        })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Ok(l) = loaded() {
            // SAFETY: an event this value created, destroyed once.
            let _ = unsafe { (l.hip.hipEventDestroy)(self.raw) };
        }
    }
}

/// A loaded code object, unloaded on drop.
#[derive(Debug)]
pub struct Module {
    raw: sys::hipModule_t,
}

// SAFETY: HIP modules may be used from any thread.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

/// A kernel of a [`Module`] (valid while the module lives).
#[derive(Clone, Copy, Debug)]
pub struct Function {
    raw: sys::hipFunction_t,
}

// SAFETY: a function handle is an immutable reference into a live module.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl Module {
    /// Loads `code_object` (a hipRTC or hipcc code object for the device's architecture) on
    /// `device`.
    pub fn load(device: &Device, code_object: &[u8]) -> Result<Module> {
        device.make_current()?;
        let l = loaded()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: HIP reads the code object from the pointer (its ELF header gives its size).
        check(l, "hipModuleLoadData", unsafe {
            (l.hip.hipModuleLoadData)(&mut raw, code_object.as_ptr().cast())
        })?;
        Ok(Module { raw })
    }

    /// The kernel whose symbol is `c_name`.
    pub fn function(&self, c_name: &str) -> Result<Function> {
        let l = loaded()?;
        let name = CString::new(c_name).map_err(|_| Error::NotFound {
            what: "kernel",
            name: c_name.into(),
        })?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a live module, a NUL-terminated name, a valid out-pointer.
        check(l, "hipModuleGetFunction", unsafe {
            (l.hip.hipModuleGetFunction)(&mut raw, self.raw, name.as_ptr())
        })?;
        Ok(Function { raw })
    }

    /// The device address and size of the global whose symbol is `c_name`.
    pub fn global(&self, c_name: &str) -> Result<(*mut c_void, usize)> {
        let l = loaded()?;
        let name = CString::new(c_name).map_err(|_| Error::NotFound {
            what: "global",
            name: c_name.into(),
        })?;
        let (mut ptr, mut size) = (std::ptr::null_mut(), 0usize);
        // SAFETY: a live module, a NUL-terminated name, valid out-pointers.
        check(l, "hipModuleGetGlobal", unsafe {
            (l.hip.hipModuleGetGlobal)(&mut ptr, &mut size, self.raw, name.as_ptr())
        })?;
        Ok((ptr, size))
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Ok(l) = loaded() {
            // SAFETY: a module this value loaded, unloaded once.
            let _ = unsafe { (l.hip.hipModuleUnload)(self.raw) };
        }
    }
}

/// Grid, block, dynamic shared memory and stream of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_mem: u32,
}

/// Launches `function` with `args`: one pointer per kernel parameter, each to the parameter's
/// bytes, on `stream` (`None`: the default stream).
///
/// # Safety
///
/// `args` must match the kernel's parameters in number, size and layout, and every device
/// pointer among them must be valid for what the kernel does with it.
pub unsafe fn launch(
    function: Function,
    config: &LaunchConfig,
    args: &mut [*mut c_void],
    stream: Option<&Stream>,
) -> Result<()> {
    let l = loaded()?;
    let [gx, gy, gz] = config.grid;
    let [bx, by, bz] = config.block;
    let s = stream.map_or(std::ptr::null_mut(), Stream::raw);
    // SAFETY: the caller vouches for the arguments; `args` outlives the call (HIP copies the
    // parameter bytes at launch).
    check(l, "hipModuleLaunchKernel", unsafe {
        (l.hip.hipModuleLaunchKernel)(
            function.raw,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            config.shared_mem,
            s,
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names_are_read_from_either_layout() {
        let mut props = vec![0u8; 2048];
        props[..6].copy_from_slice(b"MI250X");
        props[396..396 + 22].copy_from_slice(b"gfx90a:sramecc+:xnack-");
        assert_eq!(
            gcn_arch_name_in(&props, true).as_deref(),
            Some("gfx90a:sramecc+:xnack-")
        );
        // Not at ROCm 6's offset: the R0600 reading finds nothing there.
        assert_eq!(gcn_arch_name_in(&props, false), None);
        let mut props = vec![0u8; 2048];
        props[1160..1166].copy_from_slice(b"gfx942");
        assert_eq!(gcn_arch_name_in(&props, false).as_deref(), Some("gfx942"));
        assert_eq!(gcn_arch_name_in(&props, true), None);
        assert_eq!(processor_name("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(gcn_arch_name_in(&[0u8; 2048], false), None);
        assert_eq!(gcn_arch_name_in(&[0u8; 100], false), None);
    }
}
