//! What every library handle is bound to: the CUDA context current when it was made, and a
//! stream of that context that its work goes on.

use crate::error::{Error, Result};
use chorus_driver::loader::{driver_dirs, probe_library};
use chorus_driver::{Stream, sys};
use std::sync::OnceLock;

/// A context and a stream of it, borrowed for `'s`. Handles keep one and [`Bound::enter`] it
/// before each call, so a handle works from any thread and whatever context is current there.
#[derive(Debug, Clone, Copy)]
pub struct Bound<'s> {
    context: sys::CUcontext,
    stream: &'s Stream,
}

// SAFETY: a CUcontext is a handle the driver lets any thread make current; the stream is Sync.
unsafe impl Send for Bound<'_> {}
// SAFETY: as above; only passed to the driver.
unsafe impl Sync for Bound<'_> {}

impl<'s> Bound<'s> {
    /// The current context and `stream`, which must belong to it (the null stream belongs to
    /// every context). Errors: no driver, no current context, or
    /// [`Error::StreamFromAnotherContext`].
    pub fn current(stream: &'s Stream) -> Result<Bound<'s>> {
        chorus_driver::ensure_driver()?;
        let context = chorus_driver::current_context().ok_or(chorus_driver::Error::NoContext)?;
        check_stream_context(context, stream)?;
        Ok(Bound { context, stream })
    }

    /// The same context with another stream of it.
    pub fn with_stream(&self, stream: &'s Stream) -> Result<Bound<'s>> {
        check_stream_context(self.context, stream)?;
        Ok(Bound {
            context: self.context,
            stream,
        })
    }

    /// Makes the context current on this thread when it is not (asking is cheap; setting takes
    /// the driver's locks, so it is done only when needed).
    pub fn enter(&self) -> Result<()> {
        if chorus_driver::current_context() == Some(self.context) {
            return Ok(());
        }
        chorus_driver::ensure_driver()?;
        // SAFETY: the driver is loaded; the context was current when this was made.
        chorus_driver::check("cuCtxSetCurrent", unsafe {
            sys::cuCtxSetCurrent(self.context)
        })?;
        Ok(())
    }

    /// The stream.
    pub fn stream(&self) -> &'s Stream {
        self.stream
    }

    /// The raw context.
    pub fn context(&self) -> sys::CUcontext {
        self.context
    }
}

/// `Ok` when `stream` belongs to `context` (`cuStreamGetCtx`; the null stream always does).
fn check_stream_context(context: sys::CUcontext, stream: &Stream) -> Result<()> {
    if stream.raw().is_null() {
        return Ok(());
    }
    // cuStreamGetCtx is not among the entry points chorus-driver checks: check it once here.
    static HAS_GET_CTX: OnceLock<bool> = OnceLock::new();
    let present = *HAS_GET_CTX.get_or_init(|| {
        probe_library("cuda", &driver_dirs(), &["cuStreamGetCtx"], || {
            // SAFETY: only asks the system loader whether cudarc's names resolve.
            unsafe { sys::is_culib_present() }
        })
        .present()
    });
    if !present {
        // A driver this old (before CUDA 9.2) cannot run these libraries anyway.
        return Ok(());
    }
    let mut owner = std::ptr::null_mut();
    // SAFETY: the driver is loaded (ensured by the caller) with the symbol; the stream is live.
    chorus_driver::check("cuStreamGetCtx", unsafe {
        sys::cuStreamGetCtx(stream.raw(), &mut owner)
    })?;
    if owner != context {
        return Err(Error::StreamFromAnotherContext);
    }
    Ok(())
}
