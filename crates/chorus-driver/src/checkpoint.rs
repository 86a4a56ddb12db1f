//! Checkpoint and restore of a process's CUDA state (`cuCheckpointProcessLock`,
//! `cuCheckpointProcessCheckpoint`, `cuCheckpointProcessRestore`,
//! `cuCheckpointProcessUnlock`, `cuCheckpointProcessGetState`; CUDA 12.8+ drivers, Linux).
//!
//! Another process (a checkpointing tool such as CRIU's CUDA plugin, or a supervisor) drives a
//! CUDA process `pid` through its states: [locked](lock_process) (its CUDA calls block),
//! [checkpointed](checkpoint_process) (device memory copied to host memory, the GPU released),
//! [restored](restore_process) (back on a GPU, still locked), [unlocked](unlock_process)
//! (running again). In between, the process's host memory can be saved with the CPU-side
//! tool; the GPU is free for others.
//!
//! cudarc's bindings do not have these entry points: they are looked up in the driver, and
//! a driver without them answers [`Error::Unsupported`].

use crate::entry::symbol;
use crate::error::{Error, Result};
use cudarc::driver::sys::CUresult;

const FEATURE: &str = "checkpoint and restore";
const ENTRY_POINTS: &[&str] = &[
    "cuCheckpointProcessGetState",
    "cuCheckpointProcessLock",
    "cuCheckpointProcessCheckpoint",
    "cuCheckpointProcessRestore",
    "cuCheckpointProcessUnlock",
    "cuCheckpointProcessGetRestoreThreadId",
];

/// Where a CUDA process is in checkpointing (`CUprocessState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProcessState {
    /// Running normally.
    Running,
    /// Locked: its CUDA calls block.
    Locked,
    /// Checkpointed: its device memory is in host memory and its GPU resources are released.
    Checkpointed,
    /// A checkpoint or restore failed beyond repair.
    Failed,
}

impl ProcessState {
    fn from_raw(raw: i32) -> Result<ProcessState> {
        Ok(match raw {
            0 => ProcessState::Running,
            1 => ProcessState::Locked,
            2 => ProcessState::Checkpointed,
            3 => ProcessState::Failed,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "the driver reported an unknown process state {other}"
                )));
            }
        })
    }
}

/// `CUcheckpointLockArgs`.
#[repr(C)]
struct LockArgs {
    timeout_ms: u32,
    reserved0: u32,
    reserved1: [u64; 7],
}

/// `CUcheckpointCheckpointArgs`, `CUcheckpointUnlockArgs`: reserved, zero.
#[repr(C)]
struct ReservedArgs {
    reserved: [u64; 8],
}

/// `CUcheckpointRestoreArgs` (no GPU remapping: restored onto the GPUs it was on).
#[repr(C)]
struct RestoreArgs {
    gpu_pairs: *mut std::ffi::c_void,
    gpu_pairs_count: u32,
    reserved: [u8; 52 - size_of::<*mut std::ffi::c_void>()],
    reserved1: u64,
}

type GetState = unsafe extern "C" fn(i32, *mut i32) -> CUresult;
type Lock = unsafe extern "C" fn(i32, *mut LockArgs) -> CUresult;
type Reserved = unsafe extern "C" fn(i32, *mut ReservedArgs) -> CUresult;
type Restore = unsafe extern "C" fn(i32, *mut RestoreArgs) -> CUresult;
type RestoreThread = unsafe extern "C" fn(i32, *mut i32) -> CUresult;

fn check_pid(pid: u32) -> Result<i32> {
    i32::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| Error::InvalidArgument(format!("{pid} is not a process id")))
}

/// The checkpoint state of CUDA process `pid` (`cuCheckpointProcessGetState`).
pub fn process_state(pid: u32) -> Result<ProcessState> {
    let pid = check_pid(pid)?;
    // SAFETY: the type is the entry point's C signature.
    let f = unsafe { symbol::<GetState>(FEATURE, ENTRY_POINTS, "cuCheckpointProcessGetState") }?;
    let mut state = 0;
    // SAFETY: the function writes one enum value.
    crate::call::check("cuCheckpointProcessGetState", unsafe { f(pid, &mut state) })?;
    ProcessState::from_raw(state)
}

/// Locks CUDA process `pid`: its CUDA calls block from now on (it must be running). Waits up
/// to `timeout_ms` milliseconds for its work in flight (0: no limit).
pub fn lock_process(pid: u32, timeout_ms: u32) -> Result<()> {
    let pid = check_pid(pid)?;
    // SAFETY: the type is the entry point's C signature.
    let f = unsafe { symbol::<Lock>(FEATURE, ENTRY_POINTS, "cuCheckpointProcessLock") }?;
    let mut args = LockArgs {
        timeout_ms,
        reserved0: 0,
        reserved1: [0; 7],
    };
    // SAFETY: the arguments are the documented struct, reserved fields zero.
    crate::call::check("cuCheckpointProcessLock", unsafe { f(pid, &mut args) })
}

/// Checkpoints locked process `pid`: its device memory goes to host memory and its GPU
/// resources are released.
pub fn checkpoint_process(pid: u32) -> Result<()> {
    let pid = check_pid(pid)?;
    // SAFETY: the type is the entry point's C signature.
    let f = unsafe { symbol::<Reserved>(FEATURE, ENTRY_POINTS, "cuCheckpointProcessCheckpoint") }?;
    let mut args = ReservedArgs { reserved: [0; 8] };
    // SAFETY: as in `lock_process`.
    crate::call::check("cuCheckpointProcessCheckpoint", unsafe {
        f(pid, &mut args)
    })
}

/// Restores checkpointed process `pid` onto the GPUs it was on; it is locked afterwards.
pub fn restore_process(pid: u32) -> Result<()> {
    let pid = check_pid(pid)?;
    // SAFETY: the type is the entry point's C signature.
    let f = unsafe { symbol::<Restore>(FEATURE, ENTRY_POINTS, "cuCheckpointProcessRestore") }?;
    let mut args = RestoreArgs {
        gpu_pairs: std::ptr::null_mut(),
        gpu_pairs_count: 0,
        reserved: [0; 52 - size_of::<*mut std::ffi::c_void>()],
        reserved1: 0,
    };
    // SAFETY: as in `lock_process`; no GPU pairs.
    crate::call::check("cuCheckpointProcessRestore", unsafe { f(pid, &mut args) })
}

/// Unlocks locked process `pid`: its CUDA calls proceed.
pub fn unlock_process(pid: u32) -> Result<()> {
    let pid = check_pid(pid)?;
    // SAFETY: the type is the entry point's C signature.
    let f = unsafe { symbol::<Reserved>(FEATURE, ENTRY_POINTS, "cuCheckpointProcessUnlock") }?;
    let mut args = ReservedArgs { reserved: [0; 8] };
    // SAFETY: as in `lock_process`.
    crate::call::check("cuCheckpointProcessUnlock", unsafe { f(pid, &mut args) })
}

/// The id of the thread of process `pid` that restores it
/// (`cuCheckpointProcessGetRestoreThreadId`), which a CPU checkpointing tool must leave
/// running.
pub fn restore_thread_id(pid: u32) -> Result<u32> {
    let pid = check_pid(pid)?;
    // SAFETY: the type is the entry point's C signature.
    let f = unsafe {
        symbol::<RestoreThread>(
            FEATURE,
            ENTRY_POINTS,
            "cuCheckpointProcessGetRestoreThreadId",
        )
    }?;
    let mut tid = 0;
    // SAFETY: the function writes one int.
    crate::call::check("cuCheckpointProcessGetRestoreThreadId", unsafe {
        f(pid, &mut tid)
    })?;
    Ok(tid.max(0) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_structs_have_the_c_layout() {
        assert_eq!(size_of::<LockArgs>(), 64);
        assert_eq!(size_of::<ReservedArgs>(), 64);
        assert_eq!(size_of::<RestoreArgs>(), 64);
    }

    #[test]
    fn states_and_pids_are_checked() {
        assert_eq!(
            ProcessState::from_raw(2).unwrap(),
            ProcessState::Checkpointed
        );
        assert!(ProcessState::from_raw(7).is_err());
        assert!(check_pid(0).is_err());
        assert!(check_pid(u32::MAX).is_err());
        assert_eq!(check_pid(42).unwrap(), 42);
        let e = lock_process(0, 0).unwrap_err().to_string();
        assert!(e.contains("not a process id"), "{e}");
    }

    #[test]
    fn without_a_driver_checkpointing_is_sdk_not_found() {
        if !crate::sdk_not_found() {
            return;
        }
        assert!(matches!(
            process_state(std::process::id()),
            Err(Error::SdkNotFound { .. })
        ));
    }
}
