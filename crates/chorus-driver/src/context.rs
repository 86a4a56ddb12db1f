//! Devices and contexts (the seed's `with-cuda`, `device-attribute`, primary contexts).

use crate::call::{cu, cu_drop};
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUdevice, CUdevice_attribute};
use std::sync::{OnceLock, PoisonError, RwLock};

/// What `chorus devices` prints about one GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The ordinal (`with_cuda(id, …)`).
    pub id: usize,
    /// The marketing name (`NVIDIA H200`).
    pub name: String,
    /// Compute capability (`(9, 0)`).
    pub compute_capability: (u32, u32),
    /// Device memory in bytes.
    pub total_memory: usize,
}

/// The number of CUDA devices.
pub fn device_count() -> Result<usize> {
    let mut n = 0;
    cu!(cuDeviceGetCount(&mut n))?;
    Ok(n.max(0) as usize)
}

/// Every CUDA device with its name, compute capability and memory.
pub fn devices() -> Result<Vec<DeviceInfo>> {
    (0..device_count()?)
        .map(|id| {
            Ok(DeviceInfo {
                id,
                name: device_name(id)?,
                compute_capability: compute_capability(id)?,
                total_memory: device_total_memory(id)?,
            })
        })
        .collect()
}

/// The driver's handle of device `id`.
pub(crate) fn device_handle(id: usize) -> Result<CUdevice> {
    let ordinal = i32::try_from(id)
        .map_err(|_| Error::InvalidArgument(format!("device ordinal {id} is too large")))?;
    let mut dev = 0;
    cu!(cuDeviceGet(&mut dev, ordinal))?;
    Ok(dev)
}

/// Any `CUdevice_attribute` of device `id` (`cuDeviceGetAttribute`).
pub fn device_attribute(id: usize, attribute: CUdevice_attribute) -> Result<i32> {
    let dev = device_handle(id)?;
    let mut value = 0;
    cu!(cuDeviceGetAttribute(&mut value, attribute, dev))?;
    Ok(value)
}

/// The compute capability of device `id`, as `(major, minor)`.
///
/// Asked of the driver once per device (for the first 64 ordinals): it never changes, and every
/// compile, cache hits included, needs it.
pub fn compute_capability(id: usize) -> Result<(u32, u32)> {
    use CUdevice_attribute::*;
    static KNOWN: [OnceLock<(u32, u32)>; 64] = [const { OnceLock::new() }; 64];
    if let Some(known) = KNOWN.get(id).and_then(OnceLock::get) {
        return Ok(*known);
    }
    let major = device_attribute(id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = device_attribute(id, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let capability = (major as u32, minor as u32);
    if let Some(slot) = KNOWN.get(id) {
        let _ = slot.set(capability);
    }
    Ok(capability)
}

/// The name of device `id`.
pub fn device_name(id: usize) -> Result<String> {
    let dev = device_handle(id)?;
    let mut buf = [0 as std::ffi::c_char; 256];
    cu!(cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, dev))?;
    // SAFETY: the driver wrote a NUL-terminated string into the buffer.
    Ok(unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// Device memory of device `id` in bytes.
pub fn device_total_memory(id: usize) -> Result<usize> {
    let dev = device_handle(id)?;
    let mut bytes = 0;
    cu!(cuDeviceTotalMem_v2(&mut bytes, dev))?;
    Ok(bytes)
}

/// Free and total bytes of the current context's device (`cuMemGetInfo`).
pub fn memory_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0, 0);
    cu!(cuMemGetInfo_v2(&mut free, &mut total))?;
    Ok((free, total))
}

/// Blocks until every task of the current context has finished (`cuCtxSynchronize`).
pub fn synchronize_context() -> Result<()> {
    cu!(cuCtxSynchronize())
}

/// The current context of this thread, if any (`None` without a driver or outside every
/// context).
pub fn current_context() -> Option<sys::CUcontext> {
    let current = || -> Result<sys::CUcontext> {
        let mut ctx = std::ptr::null_mut();
        cu!(cuCtxGetCurrent(&mut ctx))?;
        Ok(ctx)
    };
    current().ok().filter(|ctx| !ctx.is_null())
}

/// The current context's device ordinal (`NoContext` outside every context).
pub fn current_device() -> Result<usize> {
    current_context().ok_or(Error::NoContext)?;
    let mut dev = 0;
    cu!(cuCtxGetDevice(&mut dev))?;
    // CUdevice values are the ordinals for every driver in use.
    Ok(dev.max(0) as usize)
}

/// The compute capability of the current context's device, or `None` outside any context (or
/// without a driver). Compiles use it for `-arch=sm_XY`; outside a context nvcc gets
/// `-arch=native`.
pub fn current_compute_capability() -> Option<(u32, u32)> {
    compute_capability(current_device().ok()?).ok()
}

/// How a [`Context`] came to be, which decides how it is released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ownership {
    /// `cuCtxCreate`: destroyed on drop.
    Created,
    /// `cuDevicePrimaryCtxRetain`: released on drop.
    Primary,
}

/// A CUDA context, current on the thread that made it; released on drop.
///
/// Memory blocks, streams, programs and functions made while it is current belong to it. They
/// do not borrow it (so they can be stored freely), but they must not be used after it is
/// dropped: the driver then answers `CUDA_ERROR_INVALID_CONTEXT` (never undefined behaviour
/// in this crate's wrappers, whose drops ignore that error).
#[derive(Debug)]
pub struct Context {
    raw: sys::CUcontext,
    device: usize,
    ownership: Ownership,
}

// SAFETY: a CUcontext is a handle the driver lets any thread make current and use.
unsafe impl Send for Context {}
// SAFETY: as above; the methods take `&self` and only pass the handle to the driver.
unsafe impl Sync for Context {}

impl Context {
    /// Creates a new context on device `id` and makes it current (`cuCtxCreate`), as the
    /// seed's `with-cuda` does.
    pub fn new(id: usize) -> Result<Context> {
        let dev = device_handle(id)?;
        let mut raw = std::ptr::null_mut();
        cu!(cuCtxCreate_v4(&mut raw, std::ptr::null_mut(), 0, dev))?;
        Ok(Context {
            raw,
            device: id,
            ownership: Ownership::Created,
        })
    }

    /// Retains device `id`'s primary context (the one the runtime API and other libraries
    /// share) and makes it current. Released on drop.
    pub fn primary(id: usize) -> Result<Context> {
        let dev = device_handle(id)?;
        let mut raw = std::ptr::null_mut();
        cu!(cuDevicePrimaryCtxRetain(&mut raw, dev))?;
        let ctx = Context {
            raw,
            device: id,
            ownership: Ownership::Primary,
        };
        ctx.make_current()?;
        Ok(ctx)
    }

    /// Makes this context current on the calling thread.
    pub fn make_current(&self) -> Result<()> {
        cu!(cuCtxSetCurrent(self.raw))
    }

    /// The device ordinal.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The device's compute capability.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        compute_capability(self.device)
    }

    /// The raw handle, for calls through [`crate::sys`].
    pub fn raw(&self) -> sys::CUcontext {
        self.raw
    }

    /// True for a retained primary context.
    pub fn is_primary(&self) -> bool {
        self.ownership == Ownership::Primary
    }

    /// Waits for all work of this context (made current first).
    pub fn synchronize(&self) -> Result<()> {
        self.make_current()?;
        synchronize_context()
    }

    /// True when this context's device can address `peer`'s memory.
    pub fn can_access_peer(&self, peer: &Context) -> Result<bool> {
        let mut can = 0;
        cu!(cuDeviceCanAccessPeer(
            &mut can,
            device_handle(self.device)?,
            device_handle(peer.device)?
        ))?;
        Ok(can != 0)
    }

    /// Lets kernels of this context (made current) read and write `peer`'s memory
    /// (`cuCtxEnablePeerAccess`).
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        self.make_current()?;
        cu!(cuCtxEnablePeerAccess(peer.raw, 0))
    }

    /// Undoes [`Context::enable_peer_access`].
    pub fn disable_peer_access(&self, peer: &Context) -> Result<()> {
        self.make_current()?;
        cu!(cuCtxDisablePeerAccess(peer.raw))
    }
}

/// What runs as a [`Context`] is released: see [`on_context_release`].
pub type ReleaseHook = fn(sys::CUcontext);

static RELEASE_HOOKS: RwLock<Vec<ReleaseHook>> = RwLock::new(Vec::new());

/// Registers `hook` to run, with the raw handle, as each [`Context`] is dropped, before the
/// driver destroys or releases it: a layer above that keeps per-context state (`chorus-cuda`'s
/// kernel manager, which forgets the modules it loaded in that context) lets go of it there.
/// Hooks run in the order registered; register each once.
pub fn on_context_release(hook: ReleaseHook) {
    RELEASE_HOOKS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .push(hook);
}

/// Runs the [release hooks](on_context_release) for `raw`, which is about to be destroyed (a
/// [`Context`] or a green context's).
pub(crate) fn run_release_hooks(raw: sys::CUcontext) {
    // Copied out so that a hook may register another without deadlocking.
    let hooks = RELEASE_HOOKS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for hook in hooks {
        hook(raw);
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        run_release_hooks(self.raw);
        match self.ownership {
            Ownership::Created => cu_drop!(cuCtxDestroy_v2(self.raw)),
            Ownership::Primary => {
                if let Ok(dev) = device_handle(self.device) {
                    cu_drop!(cuDevicePrimaryCtxRelease_v2(dev));
                }
            }
        }
    }
}

/// Runs `body` with a new context on device `id` (the seed's `with-cuda`). Before it returns,
/// the context is destroyed, after the [release hooks](on_context_release) have run
/// (`chorus-cuda`'s default kernel manager unloads the modules it loaded in it there).
pub fn with_cuda<R, E: From<Error>>(
    id: usize,
    body: impl FnOnce(&Context) -> std::result::Result<R, E>,
) -> std::result::Result<R, E> {
    let ctx = Context::new(id)?;
    body(&ctx)
}

/// [`with_cuda`] over device `id`'s primary context (retained, made current, released).
pub fn with_primary_cuda<R, E: From<Error>>(
    id: usize,
    body: impl FnOnce(&Context) -> std::result::Result<R, E>,
) -> std::result::Result<R, E> {
    let ctx = Context::primary(id)?;
    body(&ctx)
}

/// Destroys every allocation, module and stream of device `id`'s primary context and resets
/// its state (`cuDevicePrimaryCtxReset`): the one way out of a sticky error (a kernel that
/// faulted makes its context unusable, see [`crate::Error::is_sticky`]). Contexts retained
/// before stay retained; retain it again ([`Context::primary`]) for a handle to the fresh
/// context. Every object made in it before is gone: do not use or free one (the driver may
/// give a new allocation the same address).
pub fn reset_primary_context(id: usize) -> Result<()> {
    let dev = device_handle(id)?;
    cu!(cuDevicePrimaryCtxReset_v2(dev))
}

/// Retains device `id`'s primary context (the seed's `retain-primary-context`). The same as
/// [`Context::primary`]; dropping the value is `release-primary-context`.
pub fn retain_primary_context(id: usize) -> Result<Context> {
    Context::primary(id)
}
