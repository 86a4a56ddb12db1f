//! Streams: ordered queues of launches and copies on one device.

use crate::backend::current_device;
use crate::dispatch;
use crate::error::Result;
use crate::hal::DeviceStream;
use crate::kind::{Backend, Device};

/// A queue of work on one device (`*cuda-stream*`, `:stream`).
///
/// On CUDA it is a driver stream: launches on it run in order with each other and may overlap
/// work on other streams. The CPU executor runs every launch to completion before returning, so
/// a CPU stream is already in order and [`Stream::synchronize`] has nothing to wait for. A
/// launch on a stream runs on the stream's device.
#[derive(Debug)]
pub struct Stream {
    pub(crate) inner: DeviceStream,
}

impl Stream {
    /// A new stream on the current device ([`crate::current_device`]).
    pub fn new() -> Result<Stream> {
        Stream::new_on(current_device()?)
    }

    /// A new stream on `device`.
    pub fn new_on(device: Device) -> Result<Stream> {
        Ok(Stream {
            inner: DeviceStream {
                device,
                stream: dispatch::device(device)?.stream()?,
            },
        })
    }

    /// Waits until everything queued on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.stream.synchronize()
    }

    /// Makes the work queued on this stream from now on wait until everything queued on
    /// `other` so far has finished (`cuEventRecord` on `other`, `cuStreamWaitEvent` on this
    /// one): the host does not wait, and work queued on `other` later is not waited for.
    ///
    /// This is how work on two streams overlaps and still meets where one needs the other's
    /// results: kernels on one stream and NCCL collectives or copies on another, each stream
    /// waiting for the other only where it reads what the other wrote. `other` may be a
    /// stream of another device of the same backend. A stream of another backend is waited
    /// for on the host (its work is finished when this returns). The CPU executor and Metal
    /// finish each launch before it returns, so their streams have nothing to wait for.
    pub fn wait_for(&self, other: &Stream) -> Result<()> {
        if other.backend() == self.backend() {
            self.inner.stream.wait_for(&*other.inner.stream)
        } else {
            other.synchronize()
        }
    }

    /// The backend it belongs to.
    pub fn backend(&self) -> Backend {
        self.inner.device.backend()
    }

    /// The device it belongs to.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// The CUDA stream, for the CUDA libraries (`chorus-cuda-libs`: cuBLAS, NCCL, …) to queue
    /// their work after and before kernels launched on this stream; `None` on other backends,
    /// and after the device was reset. It is a stream of the device's primary context.
    pub fn cuda_stream(&self) -> Option<&chorus_cuda::Stream> {
        crate::backends::cuda::cuda_stream(&*self.inner.stream)
    }
}
