//! NCCL: collective communication between GPUs, in one process or across processes.
//!
//! - **Communicators** ([`Comm`]): [`Comm::init_all`] makes one for each of the local GPUs a
//!   process drives (`ncclCommInitAll`); [`Comm::init_rank`] makes one rank of a communicator
//!   spread over processes, from a [`UniqueId`] that rank 0 made ([`UniqueId::new`]) and handed
//!   over (as bytes or hexadecimal text: a file, an environment variable).
//!   [`Comm::from_env`] does that for a process started by a launcher ([`launch`]:
//!   `CHORUS_RANK`, `CHORUS_WORLD_SIZE`, `CHORUS_NCCL_ID` or `CHORUS_NCCL_ID_FILE`).
//! - **Operations** on device memory (anything [`AsDeviceSlice`]: `chorus::MemoryBlock`,
//!   `chorus_driver::MemoryBlock`, sub-slices) and a stream of the communicator's device:
//!   [`Comm::all_reduce`], [`Comm::broadcast`], [`Comm::reduce`], [`Comm::all_gather`],
//!   [`Comm::reduce_scatter`], [`Comm::send`], [`Comm::recv`], and in-place forms. Element types
//!   are checked at compile time ([`NcclType`]); lengths, roots, peers and the device of every
//!   buffer and stream are checked before NCCL is called, as [`Error::InvalidArgument`].
//! - **Groups** ([`Group`], [`group`]): calls that NCCL must see together
//!   (`ncclGroupStart`/`ncclGroupEnd`): send/recv pairs, and the collectives of several
//!   communicators driven by one thread. Each call is checked as it is added; nothing reaches
//!   NCCL unless every call of the group passed, and the buffers are borrowed until it is
//!   submitted.
//! - **Failures are errors, not hangs.** Communicators made by [`Comm::init_rank`] are
//!   non-blocking by default ([`Config`]): joining and every call are polled with
//!   `ncclCommGetAsyncError` against the configured timeout, and [`Comm::wait`] waits for a
//!   stream the same way. A peer that died or never came is an error (its status, or
//!   `ncclInProgress` past the timeout), after which the communicator is aborted
//!   (`ncclCommAbort`), so that its kernels stop. [`Comm::abort`] aborts on request.
//!   NCCL's statuses are [`Error::Status`] named as nccl.h names them (`ncclInvalidUsage`),
//!   with `ncclGetErrorString`'s and `ncclGetLastError`'s text.
//!
//! NCCL is loaded on first use (its soname `libnccl.so.2`, then `libnccl.so`: the system
//! loader, `CUDA_PATH`, `/usr/local/cuda*`, pip's `nvidia/nccl/lib`); without it every entry
//! point is [`Error::LibraryNotFound`]. NCCL 2.28 or newer.
//!
//! NCCL works in each device's primary context (the runtime API's): a communicator retains it,
//! its streams must be streams of its device ([`Comm::new_stream`] makes one), and memory must
//! be on its device. The memory of `chorus::MemoryBlock` on CUDA device k is.
//!
//! One process, every GPU (each rank's data summed on every GPU):
//!
//! ```no_run
//! # fn main() -> chorus_cuda_libs::Result<()> {
//! use chorus_cuda_libs::nccl::{self, Comm, ReduceOp};
//! use chorus_driver::MemoryBlock;
//! let devices: Vec<usize> = (0..chorus_driver::device_count()?).collect();
//! let comms = Comm::init_all(&devices)?;
//! let mut work = Vec::new();
//! for comm in &comms {
//!     let _current = comm.enter()?;
//!     let stream = comm.new_stream()?;
//!     let block = MemoryBlock::from_slice(&vec![comm.rank() as f32; 1024])?;
//!     work.push((block, stream));
//! }
//! nccl::group(|g| {
//!     for (comm, (block, stream)) in comms.iter().zip(&mut work) {
//!         g.all_reduce_in_place(comm, block, ReduceOp::Sum, stream)?;
//!     }
//!     Ok(())
//! })?;
//! for (comm, (_, stream)) in comms.iter().zip(&work) {
//!     comm.wait(stream)?;
//! }
//! # Ok(()) }
//! ```

#[path = "nccl_id.rs"]
mod id;
#[path = "nccl_launch.rs"]
pub mod launch;
#[path = "nccl_sys.rs"]
mod sys;

pub use id::UniqueId;

use crate::error::{Error, Result};
use chorus_driver::sys as cu;
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, Context, Stream};
use chorus_minifloat::{Fp8E4M3, Fp8E5M2};
use cudarc::nccl::sys::{ncclComm_t, ncclConfig_t};
use half::{bf16, f16};
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// True when NCCL loaded with every entry point the bindings call.
pub fn is_available() -> bool {
    sys::api().is_ok()
}

/// `Ok` when NCCL is available, else [`Error::LibraryNotFound`] saying what was searched.
pub fn ensure() -> Result<()> {
    sys::api().map(drop)
}

/// NCCL's version as `(major, minor, patch)`: `(2, 28, 5)`.
pub fn version() -> Result<(u32, u32, u32)> {
    let code = sys::api()?.version;
    Ok((code / 10000, code / 100 % 100, code % 100))
}

/// An element type NCCL reduces and moves (`ncclDataType_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `ncclInt8`.
    I8,
    /// `ncclUint8`.
    U8,
    /// `ncclInt32`.
    I32,
    /// `ncclUint32`.
    U32,
    /// `ncclInt64`.
    I64,
    /// `ncclUint64`.
    U64,
    /// `ncclFloat16`.
    F16,
    /// `ncclFloat32`.
    F32,
    /// `ncclFloat64`.
    F64,
    /// `ncclBfloat16`.
    Bf16,
    /// `ncclFloat8e4m3`: reductions need compute capability 9.0.
    F8E4M3,
    /// `ncclFloat8e5m2`: reductions need compute capability 9.0.
    F8E5M2,
}

impl DataType {
    fn raw(self) -> c_int {
        match self {
            DataType::I8 => 0,
            DataType::U8 => 1,
            DataType::I32 => 2,
            DataType::U32 => 3,
            DataType::I64 => 4,
            DataType::U64 => 5,
            DataType::F16 => 6,
            DataType::F32 => 7,
            DataType::F64 => 8,
            DataType::Bf16 => 9,
            DataType::F8E4M3 => 10,
            DataType::F8E5M2 => 11,
        }
    }

    fn is_fp8(self) -> bool {
        matches!(self, DataType::F8E4M3 | DataType::F8E5M2)
    }
}

/// A Rust type NCCL takes as elements: the buffers of one call have one element type, so a
/// mismatch does not compile.
///
/// ```compile_fail
/// # fn f(comm: &chorus_cuda_libs::nccl::Comm, s: &chorus_driver::Stream) -> chorus_cuda_libs::Result<()> {
/// use chorus_cuda_libs::nccl::ReduceOp;
/// let a = chorus_driver::MemoryBlock::<f32>::alloc(4)?;
/// let mut b = chorus_driver::MemoryBlock::<i32>::alloc(4)?;
/// comm.all_reduce(&a, &mut b, ReduceOp::Sum, s)?; // f32 into i32: refused by the compiler
/// # Ok(()) }
/// ```
pub trait NcclType: bytemuck::Pod {
    /// Its NCCL data type.
    const DATA_TYPE: DataType;
}

macro_rules! nccl_types {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl NcclType for $t {
            const DATA_TYPE: DataType = DataType::$d;
        }
    )*};
}

nccl_types!(
    i8 => I8, u8 => U8, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
    f16 => F16, f32 => F32, f64 => F64, bf16 => Bf16, Fp8E4M3 => F8E4M3, Fp8E5M2 => F8E5M2,
);

/// A reduction (`ncclRedOp_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `ncclSum`.
    Sum,
    /// `ncclProd`.
    Prod,
    /// `ncclMax`.
    Max,
    /// `ncclMin`.
    Min,
    /// `ncclAvg`: the sum divided by the number of ranks.
    Avg,
}

impl ReduceOp {
    fn raw(self) -> c_int {
        match self {
            ReduceOp::Sum => 0,
            ReduceOp::Prod => 1,
            ReduceOp::Max => 2,
            ReduceOp::Min => 3,
            ReduceOp::Avg => 4,
        }
    }
}

/// How [`Comm::init_rank`] makes a communicator.
#[derive(Clone, Debug)]
pub struct Config {
    /// NCCL's blocking mode. Non-blocking (`false`, the default) lets joining and every call be
    /// polled against [`Config::timeout`], so that a rank that never comes or dies is an error;
    /// a blocking communicator waits inside NCCL as long as NCCL does.
    pub blocking: bool,
    /// How long joining, a non-blocking call or [`Comm::wait`] may take before the
    /// communicator is aborted and the call fails with `ncclInProgress`. The default is
    /// `CHORUS_NCCL_TIMEOUT` seconds, else 300.
    pub timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            blocking: false,
            timeout: default_timeout(),
        }
    }
}

/// `CHORUS_NCCL_TIMEOUT` (seconds, fractions allowed), else 300 s.
pub(crate) fn default_timeout() -> Duration {
    std::env::var("CHORUS_NCCL_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(300), Duration::from_secs_f64)
}

/// One rank of an NCCL communicator, on one CUDA device of this process.
///
/// Made by [`Comm::init_all`] (every local GPU, one process), [`Comm::init_rank`] (one rank per
/// process) or [`Comm::from_env`]. It retains its device's primary context, in which NCCL
/// works, and is destroyed on drop (aborted instead when it has an error: destroying waits for
/// peers). A communicator is used by one thread at a time (`Send`, not `Sync`), as NCCL
/// requires.
pub struct Comm {
    raw: ncclComm_t,
    rank: usize,
    size: usize,
    device: usize,
    capability: (u32, u32),
    blocking: bool,
    timeout: Duration,
    /// Set once the communicator was aborted (its handle is gone), with why.
    aborted: OnceLock<String>,
    /// The device's primary context, kept for as long as NCCL uses it.
    context: Context,
    // Not Sync: NCCL communicators are not thread-safe.
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time (it is not `Sync`).
unsafe impl Send for Comm {}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.device)
            .field("blocking", &self.blocking)
            .field("aborted", &self.aborted.get())
            .finish_non_exhaustive()
    }
}

/// Makes the saved context current again when dropped (NCCL switches devices as it works).
#[must_use = "the previous context is restored when this is dropped"]
pub struct CurrentContext(Option<cu::CUcontext>);

impl CurrentContext {
    fn save() -> CurrentContext {
        CurrentContext(chorus_driver::current_context())
    }
}

impl Drop for CurrentContext {
    fn drop(&mut self) {
        let saved = self.0.unwrap_or(std::ptr::null_mut());
        if chorus_driver::current_context().unwrap_or(std::ptr::null_mut()) != saved {
            // SAFETY: the driver is loaded (a context was asked for); the saved handle was
            // current on this thread before (or null, which unsets the current context).
            let _ = unsafe { cu::cuCtxSetCurrent(saved) };
        }
    }
}

impl Comm {
    /// One communicator for each of `devices` (CUDA ordinals), in this process
    /// (`ncclCommInitAll`): rank `i` on `devices[i]`. NCCL refuses a device listed twice
    /// (`ncclInvalidUsage`, "Duplicate GPU detected"). These communicators are blocking; drive
    /// them from one thread with [`group`], or one thread each.
    pub fn init_all(devices: &[usize]) -> Result<Vec<Comm>> {
        let api = sys::api()?;
        if devices.is_empty() {
            return Err(Error::invalid("init_all", "no devices"));
        }
        chorus_driver::ensure_driver()?;
        let _restore = CurrentContext::save();
        let list = devices
            .iter()
            .map(|&d| {
                c_int::try_from(d)
                    .map_err(|_| Error::invalid("init_all", format!("device {d} does not exist")))
            })
            .collect::<Result<Vec<c_int>>>()?;
        let count = chorus_driver::device_count()?;
        if let Some(&d) = devices.iter().find(|&&d| d >= count) {
            return Err(Error::invalid(
                "init_all",
                format!("device {d} does not exist (this process sees {count})"),
            ));
        }
        // Retained first, so that the contexts NCCL makes current stay alive with the comms.
        let contexts = devices
            .iter()
            .map(|&d| Context::primary(d))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut raws = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: `raws` has room for one handle per device of `list`.
        let code =
            unsafe { (api.comm_init_all)(raws.as_mut_ptr(), list.len() as c_int, list.as_ptr()) };
        api.check("ncclCommInitAll", code, std::ptr::null_mut())?;
        raws.into_iter()
            .zip(contexts)
            .map(|(raw, context)| Comm::wrap(raw, context, true, default_timeout()))
            .collect()
    }

    /// Rank `rank` of a communicator of `size` ranks over processes, on CUDA device `device`
    /// of this process (`ncclCommInitRankConfig`), from `id` (made by rank 0,
    /// [`UniqueId::new`]). Returns once every rank has joined; a non-blocking `config` (the
    /// default) gives up after its timeout, aborting the communicator.
    pub fn init_rank(
        id: &UniqueId,
        size: usize,
        rank: usize,
        device: usize,
        config: &Config,
    ) -> Result<Comm> {
        let api = sys::api()?;
        if size == 0 || rank >= size {
            return Err(Error::invalid(
                "init_rank",
                format!("rank {rank} of a communicator of {size} ranks"),
            ));
        }
        let size_c = c_int::try_from(size)
            .map_err(|_| Error::invalid("init_rank", format!("{size} ranks")))?;
        chorus_driver::ensure_driver()?;
        let count = chorus_driver::device_count()?;
        if device >= count {
            return Err(Error::invalid(
                "init_rank",
                format!("device {device} does not exist (this process sees {count})"),
            ));
        }
        let _restore = CurrentContext::save();
        // NCCL takes the current device for the new rank: the primary context made current.
        let context = Context::primary(device)?;
        let mut raw_config = config_for(config);
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` receives the handle; the id and config are valid for the call (NCCL
        // copies the config).
        let code = unsafe {
            (api.comm_init_rank_config)(&mut raw, size_c, id.raw(), rank as c_int, &mut raw_config)
        };
        if code != sys::SUCCESS && code != sys::IN_PROGRESS {
            let error = api.status_error("ncclCommInitRankConfig", code, raw);
            if !raw.is_null() {
                // SAFETY: the handle NCCL returned for this failed communicator.
                unsafe { (api.comm_abort)(raw) };
            }
            return Err(error);
        }
        if !config.blocking {
            poll(api, raw, config.timeout, "ncclCommInitRankConfig").inspect_err(|_| {
                // SAFETY: as above: the joining did not finish; the handle is abandoned.
                unsafe { (api.comm_abort)(raw) };
            })?;
        }
        Comm::wrap(raw, context, config.blocking, config.timeout)
    }

    /// This process's rank of a communicator whose processes a launcher started
    /// ([`launch::RankEnv::from_env`]: rank, world size, device and the unique id from the
    /// environment; rank 0 makes the id and, under [`launch::Launcher`], writes it for the
    /// others). A process started alone is rank 0 of 1.
    pub fn from_env(config: &Config) -> Result<Comm> {
        let env = launch::RankEnv::from_env()?;
        let id = env.unique_id(config.timeout)?;
        Comm::init_rank(&id, env.world_size, env.rank, env.device, config)
    }

    fn wrap(raw: ncclComm_t, context: Context, blocking: bool, timeout: Duration) -> Result<Comm> {
        let api = sys::api()?;
        let query = |call: &'static str,
                     f: unsafe extern "C" fn(ncclComm_t, *mut c_int) -> c_int| {
            let mut value = 0;
            // SAFETY: a live communicator and a valid place for the value.
            let code = unsafe { f(raw, &mut value) };
            api.check(call, code, raw).map(|()| value as usize)
        };
        let made = (|| {
            Ok::<_, Error>((
                query("ncclCommUserRank", api.comm_user_rank)?,
                query("ncclCommCount", api.comm_count)?,
                query("ncclCommCuDevice", api.comm_cu_device)?,
            ))
        })();
        let (rank, size, device) = match made {
            Ok(v) => v,
            Err(e) => {
                // SAFETY: the handle is given up here.
                unsafe { (api.comm_abort)(raw) };
                return Err(e);
            }
        };
        let capability = chorus_driver::compute_capability(device)?;
        Ok(Comm {
            raw,
            rank,
            size,
            device,
            capability,
            blocking,
            timeout,
            aborted: OnceLock::new(),
            context,
            _not_sync: PhantomData,
        })
    }

    /// Its rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Its CUDA device ordinal.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Whether it is blocking ([`Config::blocking`]).
    pub fn is_blocking(&self) -> bool {
        self.blocking
    }

    /// Makes its device's primary context current on this thread, until the guard is dropped
    /// (to allocate its memory and streams there).
    pub fn enter(&self) -> Result<CurrentContext> {
        let saved = CurrentContext::save();
        self.context.make_current()?;
        Ok(saved)
    }

    /// A new stream of its device (in the primary context NCCL uses).
    pub fn new_stream(&self) -> Result<Stream> {
        let _restore = self.enter()?;
        Ok(Stream::new()?)
    }

    /// Why it was aborted, if it was.
    pub fn aborted(&self) -> Option<&str> {
        self.aborted.get().map(String::as_str)
    }

    /// Its asynchronous error (`ncclCommGetAsyncError`): `Ok` while it has none (or an
    /// operation is still in progress), else the error (after which abort it).
    pub fn async_error(&self) -> Result<()> {
        let api = self.live("ncclCommGetAsyncError")?;
        match async_state(api, self.raw)? {
            sys::SUCCESS | sys::IN_PROGRESS => Ok(()),
            code => Err(api.status_error("ncclCommGetAsyncError", code, self.raw)),
        }
    }

    /// Aborts it (`ncclCommAbort`): its pending operations stop (the kernels they left on
    /// streams return) and its resources are freed; every later call is an error.
    pub fn abort(&self) -> Result<()> {
        let api = self.live("ncclCommAbort")?;
        self.abort_because(api, "aborted on request".to_string())
    }

    fn abort_because(&self, api: &sys::Api, why: String) -> Result<()> {
        if self.aborted.set(why).is_err() {
            return Ok(());
        }
        let _restore = CurrentContext::save();
        // SAFETY: the live handle, given up here (`aborted` keeps it from being used again).
        let code = unsafe { (api.comm_abort)(self.raw) };
        api.check("ncclCommAbort", code, std::ptr::null_mut())
    }

    /// Finishes its work with the peers and destroys it (`ncclCommFinalize`, then
    /// `ncclCommDestroy`): the clean end of a communicator, on every rank. A non-blocking one
    /// waits up to its timeout, and is aborted on an error or past it. A thread that drives
    /// several communicators ends them together with [`finalize_all`].
    pub fn finalize(self) -> Result<()> {
        let api = self.live("finalize")?;
        let _restore = self.enter()?;
        // SAFETY: the live handle; destroyed by the drop below.
        let code = unsafe { (api.comm_finalize)(self.raw) };
        if code == sys::IN_PROGRESS && !self.blocking {
            self.settle(api, "ncclCommFinalize")
        } else {
            api.check("ncclCommFinalize", code, self.raw)
        }
    }

    /// Waits until everything queued on `stream` has finished, watching the communicator:
    /// an asynchronous error (a peer that died) or the timeout aborts it and is the error.
    pub fn wait(&self, stream: &Stream) -> Result<()> {
        let api = self.live("wait")?;
        let start = Instant::now();
        let deadline = start + self.timeout;
        // Polls without sleeping for the first millisecond, where most collectives end (a
        // sleep would add up to its own length to each wait: 20 all-reduces of 1 MiB take
        // about 300 µs on NVLink), then backs off from 20 µs to 2 ms.
        let spin_until = start + Duration::from_millis(1);
        let mut pause = Duration::from_micros(20);
        loop {
            if stream.is_idle()? {
                return self.async_error();
            }
            match async_state(api, self.raw)? {
                sys::SUCCESS | sys::IN_PROGRESS => {}
                code => {
                    let error = api.status_error("ncclCommGetAsyncError", code, self.raw);
                    let _ = self.abort_because(api, error.to_string());
                    return Err(error);
                }
            }
            if Instant::now() >= deadline {
                let error = timed_out("wait", self.timeout);
                let _ = self.abort_because(api, error.to_string());
                return Err(error);
            }
            if Instant::now() < spin_until {
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(2));
            }
        }
    }

    /// NCCL, if this communicator was not aborted.
    fn live(&self, call: &'static str) -> Result<&'static sys::Api> {
        let api = sys::api()?;
        match self.aborted.get() {
            None => Ok(api),
            Some(why) => Err(Error::invalid(
                call,
                format!("the communicator was aborted ({why})"),
            )),
        }
    }

    // ---- operations: each runs at once on a `Comm`, or is added to a `Group` (`operations!`) ----

    // ---- the checks, one per operation, making a call to run alone or in a group ----

    fn plan_all_reduce<'a, T: NcclType>(
        &'a self,
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "all_reduce";
        self.check_type::<T>(CALL, Some(op))?;
        let send = send.as_device_slice()?;
        let recv = recv.as_device_slice_mut()?;
        same_len(CALL, "send", send.len(), "recv", recv.len())?;
        self.check_memory(CALL, "send", send.ptr(), send.len())?;
        self.check_memory(CALL, "recv", recv.ptr(), recv.len())?;
        self.call::<T>(
            CALL,
            Kind::AllReduce(op),
            send.ptr(),
            recv.ptr(),
            send.len(),
            stream,
        )
    }

    fn plan_all_reduce_in_place<'a, T: NcclType>(
        &'a self,
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "all_reduce_in_place";
        self.check_type::<T>(CALL, Some(op))?;
        let buffer = buffer.as_device_slice_mut()?;
        self.check_memory(CALL, "buffer", buffer.ptr(), buffer.len())?;
        let p = buffer.ptr();
        self.call::<T>(CALL, Kind::AllReduce(op), p, p, buffer.len(), stream)
    }

    fn plan_broadcast<'a, T: NcclType, S: AsDeviceSlice<T> + ?Sized>(
        &'a self,
        send: Option<&'a S>,
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        root: usize,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "broadcast";
        self.check_type::<T>(CALL, None)?;
        self.check_rank(CALL, "root", root)?;
        let recv = recv.as_device_slice_mut()?;
        self.check_memory(CALL, "recv", recv.ptr(), recv.len())?;
        let mut send_ptr = 0;
        if self.rank == root {
            let send = send
                .ok_or_else(|| {
                    Error::invalid(
                        CALL,
                        format!("rank {root} is the root: it needs a send buffer"),
                    )
                })?
                .as_device_slice()?;
            same_len(CALL, "send", send.len(), "recv", recv.len())?;
            self.check_memory(CALL, "send", send.ptr(), send.len())?;
            send_ptr = send.ptr();
        }
        self.call::<T>(
            CALL,
            Kind::Broadcast(root),
            send_ptr,
            recv.ptr(),
            recv.len(),
            stream,
        )
    }

    fn plan_broadcast_in_place<'a, T: NcclType>(
        &'a self,
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        root: usize,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "broadcast_in_place";
        self.check_type::<T>(CALL, None)?;
        self.check_rank(CALL, "root", root)?;
        let buffer = buffer.as_device_slice_mut()?;
        self.check_memory(CALL, "buffer", buffer.ptr(), buffer.len())?;
        let p = buffer.ptr();
        self.call::<T>(CALL, Kind::Broadcast(root), p, p, buffer.len(), stream)
    }

    fn plan_reduce<'a, T: NcclType, R: AsDeviceSliceMut<T> + ?Sized>(
        &'a self,
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: Option<&'a mut R>,
        op: ReduceOp,
        root: usize,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "reduce";
        self.check_type::<T>(CALL, Some(op))?;
        self.check_rank(CALL, "root", root)?;
        let send = send.as_device_slice()?;
        self.check_memory(CALL, "send", send.ptr(), send.len())?;
        let mut recv_ptr = 0;
        if self.rank == root {
            let recv = recv
                .ok_or_else(|| {
                    Error::invalid(
                        CALL,
                        format!("rank {root} is the root: it needs a recv buffer"),
                    )
                })?
                .as_device_slice_mut()?;
            same_len(CALL, "send", send.len(), "recv", recv.len())?;
            self.check_memory(CALL, "recv", recv.ptr(), recv.len())?;
            recv_ptr = recv.ptr();
        }
        self.call::<T>(
            CALL,
            Kind::Reduce(op, root),
            send.ptr(),
            recv_ptr,
            send.len(),
            stream,
        )
    }

    fn plan_all_gather<'a, T: NcclType>(
        &'a self,
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "all_gather";
        self.check_type::<T>(CALL, None)?;
        let send = send.as_device_slice()?;
        let recv = recv.as_device_slice_mut()?;
        self.check_chunks(CALL, "recv", recv.len(), "send", send.len())?;
        self.check_memory(CALL, "send", send.ptr(), send.len())?;
        self.check_memory(CALL, "recv", recv.ptr(), recv.len())?;
        self.call::<T>(
            CALL,
            Kind::AllGather,
            send.ptr(),
            recv.ptr(),
            send.len(),
            stream,
        )
    }

    fn plan_all_gather_in_place<'a, T: NcclType>(
        &'a self,
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "all_gather_in_place";
        self.check_type::<T>(CALL, None)?;
        let buffer = buffer.as_device_slice_mut()?;
        let chunk = self.chunk(CALL, buffer.len())?;
        self.check_memory(CALL, "buffer", buffer.ptr(), buffer.len())?;
        let mine = buffer.ptr() + (self.rank * chunk * size_of::<T>()) as u64;
        self.call::<T>(CALL, Kind::AllGather, mine, buffer.ptr(), chunk, stream)
    }

    fn plan_reduce_scatter<'a, T: NcclType>(
        &'a self,
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "reduce_scatter";
        self.check_type::<T>(CALL, Some(op))?;
        let send = send.as_device_slice()?;
        let recv = recv.as_device_slice_mut()?;
        self.check_chunks(CALL, "send", send.len(), "recv", recv.len())?;
        self.check_memory(CALL, "send", send.ptr(), send.len())?;
        self.check_memory(CALL, "recv", recv.ptr(), recv.len())?;
        let kind = Kind::ReduceScatter(op);
        self.call::<T>(CALL, kind, send.ptr(), recv.ptr(), recv.len(), stream)
    }

    fn plan_reduce_scatter_in_place<'a, T: NcclType>(
        &'a self,
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "reduce_scatter_in_place";
        self.check_type::<T>(CALL, Some(op))?;
        let buffer = buffer.as_device_slice_mut()?;
        let chunk = self.chunk(CALL, buffer.len())?;
        self.check_memory(CALL, "buffer", buffer.ptr(), buffer.len())?;
        let mine = buffer.ptr() + (self.rank * chunk * size_of::<T>()) as u64;
        let kind = Kind::ReduceScatter(op);
        self.call::<T>(CALL, kind, buffer.ptr(), mine, chunk, stream)
    }

    fn plan_send<'a, T: NcclType>(
        &'a self,
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        peer: usize,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "send";
        self.check_type::<T>(CALL, None)?;
        self.check_rank(CALL, "peer", peer)?;
        let send = send.as_device_slice()?;
        self.check_memory(CALL, "send", send.ptr(), send.len())?;
        self.call::<T>(CALL, Kind::Send(peer), send.ptr(), 0, send.len(), stream)
    }

    fn plan_recv<'a, T: NcclType>(
        &'a self,
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        peer: usize,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        const CALL: &str = "recv";
        self.check_type::<T>(CALL, None)?;
        self.check_rank(CALL, "peer", peer)?;
        let recv = recv.as_device_slice_mut()?;
        self.check_memory(CALL, "recv", recv.ptr(), recv.len())?;
        self.call::<T>(CALL, Kind::Recv(peer), 0, recv.ptr(), recv.len(), stream)
    }

    /// The checked call, once the stream was checked too.
    fn call<'a, T: NcclType>(
        &'a self,
        name: &'static str,
        kind: Kind,
        send: u64,
        recv: u64,
        count: usize,
        stream: &'a Stream,
    ) -> Result<Call<'a>> {
        self.live(name)?;
        self.check_stream(name, stream)?;
        Ok(Call {
            comm: self,
            name,
            kind,
            send,
            recv,
            count,
            data_type: T::DATA_TYPE.raw(),
            stream: stream.raw().cast(),
            _borrows: PhantomData,
        })
    }

    fn check_type<T: NcclType>(
        &self,
        call: &'static str,
        reduction: Option<ReduceOp>,
    ) -> Result<()> {
        if T::DATA_TYPE.is_fp8() && reduction.is_some() && self.capability < (9, 0) {
            return Err(Error::Unsupported {
                what: "an NCCL reduction of FP8 elements",
                needed_major: 9,
                needed_minor: 0,
                major: self.capability.0,
                minor: self.capability.1,
            });
        }
        let _ = call;
        Ok(())
    }

    fn check_rank(&self, call: &'static str, what: &str, rank: usize) -> Result<()> {
        if rank >= self.size {
            return Err(Error::invalid(
                call,
                format!(
                    "{what} {rank} is not a rank of this communicator of {} ranks",
                    self.size
                ),
            ));
        }
        Ok(())
    }

    /// `whole` must be `size()` times `part`.
    fn check_chunks(
        &self,
        call: &'static str,
        whole_name: &str,
        whole: usize,
        part_name: &str,
        part: usize,
    ) -> Result<()> {
        if part.checked_mul(self.size) != Some(whole) {
            return Err(Error::invalid(
                call,
                format!(
                    "{whole_name} holds {whole} elements, not {} ranks × {part} ({part_name})",
                    self.size
                ),
            ));
        }
        Ok(())
    }

    /// The chunk of an in-place buffer of `len` elements split over the ranks.
    fn chunk(&self, call: &'static str, len: usize) -> Result<usize> {
        if !len.is_multiple_of(self.size) {
            return Err(Error::invalid(
                call,
                format!(
                    "the buffer's {len} elements do not split into {} equal chunks",
                    self.size
                ),
            ));
        }
        Ok(len / self.size)
    }

    /// `ptr` (of `len` elements) must be memory of this communicator's device, in its primary
    /// context (memory of another context of the device is not mapped where NCCL works) or
    /// in none (virtual-memory and pool allocations).
    fn check_memory(&self, call: &'static str, what: &str, ptr: u64, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        // The common case in one driver call (each costs of the order of a microsecond, which
        // a small collective feels): memory of the communicator's own context.
        let context = pointer_context(ptr)?;
        if context == Some(self.context.raw()) {
            return Ok(());
        }
        match pointer_device(ptr)? {
            Some(device) if device != self.device => Err(Error::invalid(
                call,
                format!(
                    "{what} is memory of device {device}, the communicator's device is {}",
                    self.device
                ),
            )),
            // A context of its own (memory of no context, such as a pool's, has none).
            Some(_) if context.is_some_and(|c| !c.is_null()) => Err(Error::invalid(
                call,
                format!(
                    "{what} is memory of another context of device {} than its primary \
                     context, where NCCL works",
                    self.device
                ),
            )),
            Some(_) => Ok(()),
            None => Err(Error::invalid(
                call,
                format!("{what} (at {ptr:#x}) is not CUDA device memory"),
            )),
        }
    }

    /// `stream` must be a stream of this communicator's device's primary context, where NCCL
    /// launches its kernels (the null stream is that context's default stream).
    fn check_stream(&self, call: &'static str, stream: &Stream) -> Result<()> {
        match stream_context(stream)? {
            Some(context) if context != self.context.raw() => Err(Error::invalid(
                call,
                format!(
                    "the stream is not a stream of device {}'s primary context, where NCCL works",
                    self.device
                ),
            )),
            _ => Ok(()),
        }
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        let Ok(api) = sys::api() else { return };
        if self.aborted.get().is_some() {
            return;
        }
        let _restore = CurrentContext::save();
        // Destroying flushes pending work with the peers, which waits forever for a dead one:
        // a communicator with an error is aborted instead.
        let healthy = matches!(async_state(api, self.raw), Ok(sys::SUCCESS));
        // SAFETY: the live handle, released once here.
        unsafe {
            if healthy {
                (api.comm_destroy)(self.raw);
            } else {
                (api.comm_abort)(self.raw);
            }
        }
    }
}

/// Finalizes and destroys `comms`, the communicators this thread drives (`ncclCommFinalize`
/// of all of them in one group, so that the ranks of one process finish together, then
/// `ncclCommDestroy`): the clean end. Non-blocking ones wait up to their timeout, and are
/// aborted on an error or past it; the first error is returned.
pub fn finalize_all(comms: Vec<Comm>) -> Result<()> {
    let api = sys::api()?;
    let live: Vec<&Comm> = comms.iter().filter(|c| c.aborted.get().is_none()).collect();
    let Some(first) = live.first() else {
        return Ok(());
    };
    let _restore = first.enter()?;
    // SAFETY: no arguments; paired with the `ncclGroupEnd` below.
    let start = unsafe { (api.group_start)() };
    api.check("ncclGroupStart", start, std::ptr::null_mut())?;
    let mut first_error = None;
    for comm in &live {
        // SAFETY: a live handle; destroyed when `comms` drops.
        let code = unsafe { (api.comm_finalize)(comm.raw) };
        if code != sys::SUCCESS && code != sys::IN_PROGRESS && first_error.is_none() {
            first_error = Some(api.status_error("ncclCommFinalize", code, comm.raw));
        }
    }
    // SAFETY: ends the group started above.
    let end = unsafe { (api.group_end)() };
    if let Some(error) = first_error {
        return Err(error);
    }
    if end != sys::IN_PROGRESS {
        api.check("ncclGroupEnd", end, std::ptr::null_mut())?;
    }
    let mut result = Ok(());
    for comm in live.iter().filter(|c| !c.blocking) {
        if let Err(e) = comm.settle(api, "ncclCommFinalize") {
            result = result.and(Err(e));
        }
    }
    result
}

/// `ncclCommGetAsyncError`'s state of `comm`.
fn async_state(api: &sys::Api, comm: ncclComm_t) -> Result<c_int> {
    let mut state = 0;
    // SAFETY: a live communicator and a valid place for the state.
    let code = unsafe { (api.comm_get_async_error)(comm, &mut state) };
    api.check("ncclCommGetAsyncError", code, comm)?;
    Ok(state)
}

/// Polls a non-blocking communicator until its last call finished: `Ok`, its error, or
/// `ncclInProgress` past `timeout`.
fn poll(api: &sys::Api, comm: ncclComm_t, timeout: Duration, call: &'static str) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_micros(10);
    loop {
        match async_state(api, comm)? {
            sys::SUCCESS => return Ok(()),
            sys::IN_PROGRESS => {}
            code => return Err(api.status_error(call, code, comm)),
        }
        if Instant::now() >= deadline {
            return Err(timed_out(call, timeout));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}

/// The error of a call still in progress at its deadline.
fn timed_out(call: &'static str, timeout: Duration) -> Error {
    Error::Status {
        library: sys::NAME,
        call,
        code: i64::from(sys::IN_PROGRESS),
        name: sys::status_name(sys::IN_PROGRESS),
        message: format!(
            "still in progress after {timeout:?} (a rank may have died or never joined): \
             the communicator was aborted"
        ),
    }
}

/// The 2.28 config of `config`: NCCL's `NCCL_CONFIG_INITIALIZER`, with the blocking mode.
fn config_for(config: &Config) -> ncclConfig_t {
    const UNDEF: c_int = c_int::MIN;
    ncclConfig_t {
        size: size_of::<ncclConfig_t>(),
        magic: 0xcafe_beef,
        version: sys::OLDEST,
        blocking: c_int::from(config.blocking),
        cgaClusterSize: UNDEF,
        minCTAs: UNDEF,
        maxCTAs: UNDEF,
        netName: std::ptr::null(),
        splitShare: UNDEF,
        trafficClass: UNDEF,
        commName: std::ptr::null(),
        collnetEnable: UNDEF,
        CTAPolicy: UNDEF,
        shrinkShare: UNDEF,
        nvlsCTAs: UNDEF,
        nChannelsPerNetPeer: UNDEF,
        nvlinkCentricSched: UNDEF,
    }
}

/// The driver entry points the checks use beyond chorus-driver's own (present since CUDA 9.2).
fn has_check_symbols() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        chorus_driver::loader::probe_library(
            "cuda",
            &chorus_driver::loader::driver_dirs(),
            &["cuPointerGetAttribute", "cuStreamGetCtx"],
            || {
                // SAFETY: only asks the system loader whether cudarc's names resolve.
                unsafe { cu::is_culib_present() }
            },
        )
        .present()
    })
}

/// The driver, with the two entry points the checks call (`LibraryNotFound` otherwise).
fn check_driver() -> Result<()> {
    chorus_driver::ensure_driver()?;
    if !has_check_symbols() {
        return Err(Error::LibraryNotFound {
            library: "CUDA driver",
            searched: "it lacks cuPointerGetAttribute or cuStreamGetCtx (too old for NCCL)".into(),
        });
    }
    Ok(())
}

/// The context that owns the device memory at `ptr` (null for memory of no context, such as
/// a pool's); `None` where the driver does not know the address.
fn pointer_context(ptr: u64) -> Result<Option<cu::CUcontext>> {
    check_driver()?;
    let mut context: cu::CUcontext = std::ptr::null_mut();
    // SAFETY: the driver has the entry point; `context` is a valid place for the `CUcontext`
    // this attribute writes.
    let result = unsafe {
        cu::cuPointerGetAttribute(
            (&raw mut context).cast::<c_void>(),
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_CONTEXT,
            ptr,
        )
    };
    Ok((result == cu::CUresult::CUDA_SUCCESS).then_some(context))
}

/// The ordinal of the device whose memory `ptr` is; `None` when it is not CUDA device memory.
fn pointer_device(ptr: u64) -> Result<Option<usize>> {
    check_driver()?;
    let mut ordinal: c_int = -1;
    // SAFETY: the driver has the entry point; `ordinal` is a valid place for an int, which is
    // what this attribute writes.
    let result = unsafe {
        cu::cuPointerGetAttribute(
            (&raw mut ordinal).cast::<c_void>(),
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            ptr,
        )
    };
    match result {
        cu::CUresult::CUDA_SUCCESS if ordinal >= 0 => Ok(Some(ordinal as usize)),
        cu::CUresult::CUDA_SUCCESS | cu::CUresult::CUDA_ERROR_INVALID_VALUE => Ok(None),
        other => {
            chorus_driver::check("cuPointerGetAttribute", other)?;
            Ok(None)
        }
    }
}

/// The context of `stream`; `None` for the null stream.
fn stream_context(stream: &Stream) -> Result<Option<cu::CUcontext>> {
    if stream.raw().is_null() {
        return Ok(None);
    }
    chorus_driver::ensure_driver()?;
    if !has_check_symbols() {
        return Ok(None);
    }
    let mut context = std::ptr::null_mut();
    // SAFETY: the driver has the entry point; the stream is live while borrowed.
    chorus_driver::check("cuStreamGetCtx", unsafe {
        cu::cuStreamGetCtx(stream.raw(), &mut context)
    })?;
    Ok(Some(context))
}

/// `a` and `b` must hold as many elements.
fn same_len(call: &'static str, a: &str, a_len: usize, b: &str, b_len: usize) -> Result<()> {
    if a_len != b_len {
        return Err(Error::invalid(
            call,
            format!("{a} holds {a_len} elements, {b} holds {b_len}"),
        ));
    }
    Ok(())
}

/// What a checked call does.
#[derive(Clone, Copy, Debug)]
enum Kind {
    AllReduce(ReduceOp),
    Broadcast(usize),
    Reduce(ReduceOp, usize),
    AllGather,
    ReduceScatter(ReduceOp),
    Send(usize),
    Recv(usize),
}

/// One checked NCCL call, borrowing its communicator, buffers and stream for `'a`.
struct Call<'a> {
    comm: &'a Comm,
    name: &'static str,
    kind: Kind,
    send: u64,
    recv: u64,
    count: usize,
    data_type: c_int,
    stream: sys::RawStream,
    _borrows: PhantomData<&'a mut ()>,
}

impl Call<'_> {
    /// Calls NCCL (inside or outside a group), returning its status.
    fn invoke(&self, api: &sys::Api) -> c_int {
        let (comm, s, r, n, t, st) = (
            self.comm.raw,
            self.send as *const c_void,
            self.recv as *mut c_void,
            self.count,
            self.data_type,
            self.stream,
        );
        // SAFETY: the buffers were checked to be device memory of the communicator's device
        // holding the elements the call reads and writes, of the element type `t` names; they,
        // the stream and the communicator are borrowed for as long as the call lives.
        unsafe {
            match self.kind {
                Kind::AllReduce(op) => (api.all_reduce)(s, r, n, t, op.raw(), comm, st),
                Kind::Broadcast(root) => (api.broadcast)(s, r, n, t, root as c_int, comm, st),
                Kind::Reduce(op, root) => {
                    (api.reduce)(s, r, n, t, op.raw(), root as c_int, comm, st)
                }
                Kind::AllGather => (api.all_gather)(s, r, n, t, comm, st),
                Kind::ReduceScatter(op) => (api.reduce_scatter)(s, r, n, t, op.raw(), comm, st),
                Kind::Send(peer) => (api.send)(s, n, t, peer as c_int, comm, st),
                Kind::Recv(peer) => (api.recv)(r, n, t, peer as c_int, comm, st),
            }
        }
    }

    /// Runs the call alone.
    fn run(self) -> Result<()> {
        let api = self.comm.live(self.name)?;
        let _restore = self.comm.enter()?;
        let code = self.invoke(api);
        if code == sys::IN_PROGRESS && !self.comm.blocking {
            return self.comm.settle(api, self.name);
        }
        api.check(self.name, code, self.comm.raw)
    }
}

impl Comm {
    /// Waits for a non-blocking call to be taken by NCCL; on its error or the timeout, aborts.
    fn settle(&self, api: &sys::Api, call: &'static str) -> Result<()> {
        poll(api, self.raw, self.timeout, call).inspect_err(|e| {
            let _ = self.abort_because(api, e.to_string());
        })
    }
}

/// Declares each operation once and makes both of its forms: `Comm::NAME`, which checks and
/// runs it at once, and `Group::NAME`, which checks it and adds it to the group (the checks are
/// the operation's `plan_…`, shared by both).
macro_rules! operations {
    ($(
        $(#[doc = $doc:expr])*
        fn $name:ident[$($gen:tt)*]($($arg:ident: $ty:ty),* $(,)?) => $plan:ident;
    )*) => {
        impl Comm {
            $(
                $(#[doc = $doc])*
                pub fn $name<'a, $($gen)*>(&'a self, $($arg: $ty),*) -> Result<()> {
                    self.$plan($($arg),*)?.run()
                }
            )*
        }

        impl<'a> Group<'a> {
            $(
                #[doc = concat!("Adds [`Comm::", stringify!($name), "`] on `comm`.")]
                pub fn $name<$($gen)*>(
                    &mut self,
                    comm: &'a Comm,
                    $($arg: $ty),*
                ) -> Result<&mut Group<'a>> {
                    self.add(comm.$plan($($arg),*))
                }
            )*
        }
    };
}

operations! {
    /// Reduces `send` of every rank into `recv` of every rank (`ncclAllReduce`); both hold the
    /// same number of elements.
    fn all_reduce[T: NcclType](
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) => plan_all_reduce;
    /// [`Comm::all_reduce`] in place: `buffer` holds this rank's input and receives the result.
    fn all_reduce_in_place[T: NcclType](
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) => plan_all_reduce_in_place;
    /// Copies `send` of rank `root` into `recv` of every rank (`ncclBroadcast`). `send` is read
    /// on the root only, where it is required and as long as `recv`; elsewhere it may be `None`.
    fn broadcast[T: NcclType, S: AsDeviceSlice<T> + ?Sized](
        send: Option<&'a S>,
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        root: usize,
        stream: &'a Stream,
    ) => plan_broadcast;
    /// [`Comm::broadcast`] in place: the root sends `buffer`, the others receive into theirs.
    fn broadcast_in_place[T: NcclType](
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        root: usize,
        stream: &'a Stream,
    ) => plan_broadcast_in_place;
    /// Reduces `send` of every rank into `recv` of rank `root` (`ncclReduce`). `recv` is
    /// written on the root only, where it is required and as long as `send`.
    fn reduce[T: NcclType, R: AsDeviceSliceMut<T> + ?Sized](
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: Option<&'a mut R>,
        op: ReduceOp,
        root: usize,
        stream: &'a Stream,
    ) => plan_reduce;
    /// Gathers `send` of every rank, in rank order, into `recv` of every rank
    /// (`ncclAllGather`): `recv` holds `size()` times `send`'s elements.
    fn all_gather[T: NcclType](
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        stream: &'a Stream,
    ) => plan_all_gather;
    /// [`Comm::all_gather`] in place: `buffer` holds `size()` equal chunks, this rank's at
    /// `rank()`, and receives every rank's.
    fn all_gather_in_place[T: NcclType](
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        stream: &'a Stream,
    ) => plan_all_gather_in_place;
    /// Reduces `send` of every rank and scatters the result: rank r's `recv` receives chunk r
    /// (`ncclReduceScatter`); `send` holds `size()` times `recv`'s elements.
    fn reduce_scatter[T: NcclType](
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) => plan_reduce_scatter;
    /// [`Comm::reduce_scatter`] in place: `buffer` holds `size()` chunks; this rank's chunk of
    /// it (at `rank()`) receives its part of the reduction.
    fn reduce_scatter_in_place[T: NcclType](
        buffer: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        op: ReduceOp,
        stream: &'a Stream,
    ) => plan_reduce_scatter_in_place;
    /// Sends `send` to rank `peer` (`ncclSend`), which receives it with [`Comm::recv`] of the
    /// same length. A send and its receive on one thread (to itself, or to a communicator of
    /// this process) must be in one [`Group`].
    fn send[T: NcclType](
        send: &'a (impl AsDeviceSlice<T> + ?Sized),
        peer: usize,
        stream: &'a Stream,
    ) => plan_send;
    /// Receives from rank `peer` into `recv` (`ncclRecv`).
    fn recv[T: NcclType](
        recv: &'a mut (impl AsDeviceSliceMut<T> + ?Sized),
        peer: usize,
        stream: &'a Stream,
    ) => plan_recv;
}

/// Calls NCCL receives together (`ncclGroupStart` … `ncclGroupEnd`), checked as they are added
/// and submitted by [`Group::submit`] (or by [`group`]). Buffers, streams and communicators are
/// borrowed until then. A group dropped without being submitted calls nothing.
///
/// Needed for a send and its receive on one thread, and for collectives over several
/// communicators of this process driven by one thread; it also lets NCCL fuse calls.
#[derive(Default)]
pub struct Group<'a> {
    calls: Vec<Call<'a>>,
}

/// Runs `body` with a new [`Group`] and submits it when `body` succeeds; when `body` fails,
/// nothing of the group reaches NCCL.
pub fn group<'a, R>(body: impl FnOnce(&mut Group<'a>) -> Result<R>) -> Result<R> {
    let mut group = Group::new();
    let result = body(&mut group)?;
    group.submit()?;
    Ok(result)
}

impl<'a> Group<'a> {
    /// An empty group.
    pub fn new() -> Group<'a> {
        Group { calls: Vec::new() }
    }

    /// The number of calls added.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// True when no call was added.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    fn add(&mut self, call: Result<Call<'a>>) -> Result<&mut Group<'a>> {
        self.calls.push(call?);
        Ok(self)
    }

    /// Hands every call to NCCL between `ncclGroupStart` and `ncclGroupEnd`, then, for the
    /// non-blocking communicators among them, waits until NCCL took the group (aborting those
    /// on an error or the timeout). The first error is returned; the group is ended either way.
    pub fn submit(self) -> Result<()> {
        if self.calls.is_empty() {
            return Ok(());
        }
        let api = sys::api()?;
        for call in &self.calls {
            call.comm.live(call.name)?;
        }
        let _restore = self.calls[0].comm.enter()?;
        // SAFETY: no arguments; paired with the `ncclGroupEnd` below on every path.
        let start = unsafe { (api.group_start)() };
        api.check("ncclGroupStart", start, std::ptr::null_mut())?;
        let mut first_error = None;
        for call in &self.calls {
            let code = call.invoke(api);
            if code != sys::SUCCESS && code != sys::IN_PROGRESS && first_error.is_none() {
                first_error = Some(api.status_error(call.name, code, call.comm.raw));
            }
        }
        // SAFETY: ends the group started above.
        let end = unsafe { (api.group_end)() };
        if let Some(error) = first_error {
            return Err(error);
        }
        if end == sys::IN_PROGRESS {
            let mut seen: Vec<ncclComm_t> = Vec::new();
            for call in &self.calls {
                if !call.comm.blocking && !seen.contains(&call.comm.raw) {
                    seen.push(call.comm.raw);
                    call.comm.settle(api, "ncclGroupEnd")?;
                }
            }
            return Ok(());
        }
        api.check("ncclGroupEnd", end, std::ptr::null_mut())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_types_and_ops_have_nccl_h_values() {
        assert_eq!(f32::DATA_TYPE.raw(), 7);
        assert_eq!(bf16::DATA_TYPE.raw(), 9);
        assert_eq!(Fp8E5M2::DATA_TYPE.raw(), 11);
        assert!(Fp8E4M3::DATA_TYPE.is_fp8() && !u8::DATA_TYPE.is_fp8());
        assert_eq!(ReduceOp::Avg.raw(), 4);
    }

    #[test]
    fn the_config_is_nccl_config_initializer_with_the_mode() {
        let c = config_for(&Config {
            blocking: false,
            timeout: Duration::from_secs(1),
        });
        assert_eq!(c.magic, 0xcafe_beef);
        assert_eq!(c.version, 22800);
        assert_eq!(c.size, size_of::<ncclConfig_t>());
        assert_eq!((c.blocking, c.minCTAs), (0, c_int::MIN));
        assert!(c.netName.is_null());
    }

    #[test]
    fn without_nccl_every_entry_point_is_library_not_found() {
        if is_available() {
            eprintln!("NCCL is here: the GPU tests cover it");
            return;
        }
        let not_found = |e: Error| {
            matches!(
                e,
                Error::LibraryNotFound {
                    library: "NCCL",
                    ..
                }
            )
        };
        assert!(not_found(ensure().unwrap_err()));
        assert!(not_found(version().unwrap_err()));
        assert!(not_found(UniqueId::new().unwrap_err()));
        assert!(not_found(Comm::init_all(&[0]).unwrap_err()));
        let id = UniqueId::from_bytes(&[0; 128]).unwrap();
        assert!(not_found(
            Comm::init_rank(&id, 1, 0, 0, &Config::default()).unwrap_err()
        ));
        let e = ensure().unwrap_err().to_string();
        assert!(e.contains("libnccl.so.2"), "{e}");
    }
}
