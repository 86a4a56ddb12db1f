//! Streams: ordered queues of launches and copies on one backend's device.

use crate::backend::{Backend, check_backend};
use crate::dispatch::StreamInner;
use crate::error::Result;

/// A queue of work on the current backend's device (`*cuda-stream*`, `:stream`).
///
/// On CUDA it is a driver stream: launches on it run in order with each other and may overlap
/// work on other streams. The CPU executor runs every launch to completion before returning, so
/// a CPU stream is already in order and [`Stream::synchronize`] has nothing to wait for.
#[derive(Debug)]
pub struct Stream {
    pub(crate) inner: StreamInner,
}

impl Stream {
    /// A new stream on the current backend ([`crate::backend`]).
    pub fn new() -> Result<Stream> {
        Ok(Stream {
            inner: StreamInner::new(check_backend()?)?,
        })
    }

    /// Waits until everything queued on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    /// The backend it belongs to.
    pub fn backend(&self) -> Backend {
        self.inner.backend()
    }
}
