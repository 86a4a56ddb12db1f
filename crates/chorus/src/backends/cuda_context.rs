//! The CUDA backend's context handling, shared by its files: making a device's primary context
//! current, and naming the device in errors.

use crate::error::{Error, Result};
use crate::kind::{Backend, Device};

/// A CUDA error of the operation on device `index`.
pub(crate) fn device_error<E: Into<chorus_cuda::Error>>(index: usize) -> impl Fn(E) -> Error {
    move |source| Error::Cuda {
        device: Some(Device::handle(Backend::Cuda, index)),
        source: source.into(),
    }
}

/// Makes `context` current on this thread (every CUDA call needs one).
///
/// Asking which context is current reads the driver's thread state; setting it takes the
/// driver's locks, so it is done only when another context (or none) is current: launches in
/// a loop on one device set it once.
pub(crate) fn enter(context: &chorus_cuda::Context) -> Result<()> {
    let mut current = std::ptr::null_mut();
    // SAFETY: the driver is loaded and initialised (the context exists), and `current` is a
    // valid place for the handle.
    let result = unsafe { chorus_cuda::sys::cuCtxGetCurrent(&mut current) };
    if result == chorus_cuda::sys::CUresult::CUDA_SUCCESS && current == context.raw() {
        return Ok(());
    }
    context
        .make_current()
        .map_err(device_error(context.device()))
}
