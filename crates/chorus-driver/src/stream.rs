//! Streams, the per-thread current stream (the seed's `*cuda-stream*`), events, timers and
//! CUDA graphs.

use crate::call::{cu, cu_drop};
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUresult, CUstream};
use std::cell::Cell;

/// A CUDA stream. [`Stream::null`] is the legacy default stream (the seed's default
/// `*cuda-stream*`); [`Stream::new`] creates one, destroyed on drop.
#[derive(Debug)]
pub struct Stream {
    raw: CUstream,
    owned: bool,
}

// SAFETY: a CUstream is a handle usable from any thread of the process.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new stream in the current context (`cuStreamCreate`, default flags).
    pub fn new() -> Result<Stream> {
        let mut raw = std::ptr::null_mut();
        cu!(cuStreamCreate(&mut raw, 0))?;
        Ok(Stream { raw, owned: true })
    }

    /// The legacy default stream (the null handle).
    pub const fn null() -> Stream {
        Stream {
            raw: std::ptr::null_mut(),
            owned: false,
        }
    }

    /// The raw handle.
    pub fn raw(&self) -> CUstream {
        self.raw
    }

    /// Takes ownership of a stream made by another entry point (a green context's), destroyed
    /// on drop.
    pub(crate) fn from_owned_raw(raw: CUstream) -> Stream {
        Stream { raw, owned: true }
    }

    /// Waits until every task of the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        cu!(cuStreamSynchronize(self.raw))
    }

    /// True when every task of the stream has finished (`cuStreamQuery`).
    pub fn is_idle(&self) -> Result<bool> {
        crate::call::ensure_driver()?;
        // SAFETY: the driver is loaded; the handle is valid while self lives.
        match unsafe { sys::cuStreamQuery(self.raw) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => crate::call::check("cuStreamQuery", other).map(|()| false),
        }
    }

    /// Makes later work on this stream wait for `event`.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        cu!(cuStreamWaitEvent(self.raw, event.raw, 0))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned {
            cu_drop!(cuStreamDestroy_v2(self.raw));
        }
    }
}

thread_local! {
    static CURRENT_STREAM: Cell<CUstream> = const { Cell::new(std::ptr::null_mut()) };
}

/// The calling thread's current stream: the one kernel launches and async copies use unless
/// told otherwise (the null stream outside [`with_stream`]).
pub fn current_stream() -> CUstream {
    CURRENT_STREAM.with(Cell::get)
}

/// Runs `body` with `stream` as this thread's current stream (the seed's binding of
/// `*cuda-stream*`), restoring the previous one afterwards, also on panic.
pub fn with_stream<R>(stream: &Stream, body: impl FnOnce() -> R) -> R {
    struct Restore(CUstream);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT_STREAM.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CURRENT_STREAM.with(|c| c.replace(stream.raw)));
    body()
}

/// A CUDA event (`cuEventCreate`), destroyed on drop.
#[derive(Debug)]
pub struct Event {
    raw: sys::CUevent,
}

// SAFETY: event handles are usable from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    /// A new event with timing (`CU_EVENT_DEFAULT`).
    pub fn new() -> Result<Event> {
        Event::with_flags(sys::CUevent_flags::CU_EVENT_DEFAULT as u32)
    }

    /// A new event with `CUevent_flags` bits.
    pub fn with_flags(flags: u32) -> Result<Event> {
        let mut raw = std::ptr::null_mut();
        cu!(cuEventCreate(&mut raw, flags))?;
        Ok(Event { raw })
    }

    /// Takes ownership of an event made by another entry point (an opened IPC handle),
    /// destroyed on drop.
    pub(crate) fn from_owned_raw(raw: sys::CUevent) -> Event {
        Event { raw }
    }

    /// Records the event on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        cu!(cuEventRecord(self.raw, stream.raw))
    }

    /// Waits until the event has happened.
    pub fn synchronize(&self) -> Result<()> {
        cu!(cuEventSynchronize(self.raw))
    }

    /// Milliseconds between `start` and `self` (both recorded and completed).
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        let mut ms = 0.0;
        cu!(cuEventElapsedTime_v2(&mut ms, start.raw, self.raw))?;
        Ok(ms)
    }

    /// The raw handle.
    pub fn raw(&self) -> sys::CUevent {
        self.raw
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        cu_drop!(cuEventDestroy_v2(self.raw));
    }
}

/// Two events that time work on the null stream (the seed's timer).
#[derive(Debug)]
pub struct Timer {
    start: Event,
    stop: Event,
}

impl Timer {
    /// A timer in the current context.
    pub fn new() -> Result<Timer> {
        Ok(Timer {
            start: Event::new()?,
            stop: Event::new()?,
        })
    }

    /// Records the start on the current stream.
    pub fn start(&self) -> Result<()> {
        self.start.record(&borrowed(current_stream()))
    }

    /// Records the stop on the current stream.
    pub fn stop(&self) -> Result<()> {
        self.stop.record(&borrowed(current_stream()))
    }

    /// Waits for the stop event.
    pub fn synchronize(&self) -> Result<()> {
        self.stop.synchronize()
    }

    /// Milliseconds between start and stop (waits for the stop first).
    pub fn elapsed_ms(&self) -> Result<f32> {
        self.synchronize()?;
        self.stop.elapsed_ms_since(&self.start)
    }
}

/// A non-owning [`Stream`] over a raw handle.
fn borrowed(raw: CUstream) -> Stream {
    Stream { raw, owned: false }
}

/// A captured CUDA graph (`cuStreamBeginCapture` … `cuStreamEndCapture`), destroyed on drop.
#[derive(Debug)]
pub struct Graph {
    raw: sys::CUgraph,
}

// SAFETY: graph handles are usable from any thread (not concurrently mutated by this crate).
unsafe impl Send for Graph {}

impl Graph {
    /// Records the work `body` puts on `stream` (which becomes the current stream inside)
    /// into a graph instead of running it. `stream` must not be the null stream. `body` may
    /// fail with any error this crate's converts into (`chorus-cuda`'s launches, say).
    pub fn capture<E: From<Error>>(
        stream: &Stream,
        body: impl FnOnce() -> std::result::Result<(), E>,
    ) -> std::result::Result<Graph, E> {
        if stream.raw.is_null() {
            return Err(Error::InvalidArgument("cannot capture the null stream".into()).into());
        }
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        cu!(cuStreamBeginCapture_v2(stream.raw, mode))?;
        let result = with_stream(stream, body);
        let mut raw = std::ptr::null_mut();
        let ended = cu!(cuStreamEndCapture(stream.raw, &mut raw));
        let graph = (!raw.is_null()).then_some(Graph { raw });
        result?;
        ended?;
        graph.ok_or_else(|| Error::InvalidArgument("the capture produced no graph".into()).into())
    }

    /// An executable instance of the graph.
    pub fn instantiate(&self) -> Result<GraphExec> {
        let mut raw = std::ptr::null_mut();
        cu!(cuGraphInstantiateWithFlags(&mut raw, self.raw, 0))?;
        Ok(GraphExec { raw })
    }

    /// The raw handle.
    pub fn raw(&self) -> sys::CUgraph {
        self.raw
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        cu_drop!(cuGraphDestroy(self.raw));
    }
}

/// An instantiated graph, replayed with [`GraphExec::launch`].
#[derive(Debug)]
pub struct GraphExec {
    raw: sys::CUgraphExec,
}

// SAFETY: as for Graph.
unsafe impl Send for GraphExec {}

impl GraphExec {
    /// Replays the graph on `stream`.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        cu!(cuGraphLaunch(self.raw, stream.raw))
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        cu_drop!(cuGraphExecDestroy(self.raw));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_stream_sets_and_restores_the_current_stream() {
        let outer = borrowed(0x10 as CUstream);
        let inner = borrowed(0x20 as CUstream);
        assert!(current_stream().is_null());
        with_stream(&outer, || {
            assert_eq!(current_stream(), outer.raw());
            with_stream(&inner, || assert_eq!(current_stream(), inner.raw()));
            assert_eq!(current_stream(), outer.raw());
        });
        assert!(current_stream().is_null());
        let caught = std::panic::catch_unwind(|| with_stream(&outer, || panic!("inside")));
        assert!(caught.is_err());
        assert!(current_stream().is_null(), "restored after a panic");
    }
}
