//! One life of a CUDA device's primary context ([`Generation`]), shared by the CUDA backend's
//! files: what a fault names (the programs' kernel names, the last launch), whether a reset
//! retired the context, and entering it for a call.

use super::cuda_context::enter;
use crate::error::{Error, Result};
use crate::kind::Device;
use chorus_lang::ir::Module;
use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
/// The kernel names of each live compiled program of a device, by the program's id: what a
/// fault message names, looked up only when a fault surfaces (launches record ids, so that
/// they take no lock and allocate nothing).
#[derive(Default)]
pub(super) struct ProgramNames {
    pub(super) next: AtomicU32,
    pub(super) names: Mutex<HashMap<u32, Arc<[String]>>>,
}

impl ProgramNames {
    pub(super) fn register(&self, module: &Module) -> u32 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let names = module
            .functions
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        self.lock().insert(id, names);
        id
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Arc<[String]>>> {
        // A poisoned lock only means a thread panicked while inserting or removing a name.
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The kernel launched last on a device or a stream, and where it was launched from.
pub(super) struct LastLaunch {
    /// The program's id (in [`ProgramNames`]) in the high half, the kernel's index in the low;
    /// `u64::MAX` before the first launch.
    pub(super) kernel: AtomicU64,
    pub(super) site: AtomicPtr<Location<'static>>,
}

impl Default for LastLaunch {
    fn default() -> Self {
        LastLaunch {
            kernel: AtomicU64::new(u64::MAX),
            site: AtomicPtr::new(std::ptr::null_mut()),
        }
    }
}

impl LastLaunch {
    pub(super) fn record(&self, program: u32, kernel: usize, site: &'static Location<'static>) {
        self.kernel
            .store(u64::from(program) << 32 | kernel as u64, Ordering::Relaxed);
        self.site
            .store(std::ptr::from_ref(site).cast_mut(), Ordering::Relaxed);
    }

    /// The kernel's name and launch site, if one was launched.
    pub(super) fn describe(&self, programs: &ProgramNames) -> Option<(String, String)> {
        let kernel = self.kernel.load(Ordering::Relaxed);
        if kernel == u64::MAX {
            return None;
        }
        let (program, index) = ((kernel >> 32) as u32, (kernel & 0xffff_ffff) as usize);
        let name = programs
            .lock()
            .get(&program)
            .and_then(|names| names.get(index).cloned())
            .unwrap_or_else(|| "(of a program since dropped)".to_string());
        let site = self.site.load(Ordering::Relaxed);
        // SAFETY: the pointer is null or was made from a `&'static Location` in `record`.
        let site = unsafe { site.as_ref() }.map_or_else(|| "?".to_string(), ToString::to_string);
        Some((name, site))
    }
}

/// One life of a device's primary context: from the device's start, or a reset, to the next
/// reset. Objects made on the device hold the generation they were made in.
pub(super) struct Generation {
    pub(super) context: Arc<chorus_cuda::Context>,
    pub(super) device: Device,
    pub(super) programs: Arc<ProgramNames>,
    /// What made the context unusable, once a kernel's fault surfaced (CUDA's sticky errors).
    pub(super) fault: OnceLock<String>,
    /// Set when a reset could not make a new context: the driver kept the fault for the whole
    /// process (CUDA documents illegal-address faults so), and nothing on this device works again.
    pub(super) unrecoverable: OnceLock<String>,
    /// Set by a reset: the context's objects are gone, and their handles must not reach the
    /// driver again (a new allocation may have the same address).
    pub(super) retired: AtomicBool,
    /// The kernel launched last on the device, on any stream.
    pub(super) last: LastLaunch,
}

impl Generation {
    pub(super) fn new(
        context: chorus_cuda::Context,
        device: Device,
        programs: Arc<ProgramNames>,
    ) -> Self {
        Generation {
            context: Arc::new(context),
            device,
            programs,
            fault: OnceLock::new(),
            unrecoverable: OnceLock::new(),
            retired: AtomicBool::new(false),
            last: LastLaunch::default(),
        }
    }

    pub(super) fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Makes the context current for a call about `what`, unless the device was reset since
    /// (`what` went with it) or a fault left the context unusable.
    pub(super) fn enter(&self, what: &'static str) -> Result<()> {
        if let Some(fault) = self.unrecoverable.get() {
            return Err(Error::ProcessPoisoned {
                device: self.device,
                fault: fault.clone(),
            });
        }
        if self.is_retired() {
            return Err(Error::DeviceWasReset {
                device: self.device,
                what,
            });
        }
        if let Some(fault) = self.fault.get() {
            return Err(Error::ContextPoisoned {
                device: self.device,
                fault: fault.clone(),
            });
        }
        enter(&self.context)
    }

    /// The facade's error for `source`, a CUDA error of a call on this device. A sticky error
    /// is a kernel's fault: it names the kernel launched last on `stream` (where the call was
    /// about a stream and it launched one), else on the device, and marks the context unusable.
    pub(super) fn fail(
        &self,
        source: impl Into<chorus_cuda::Error>,
        stream: Option<&LastLaunch>,
    ) -> Error {
        let source = source.into();
        if !source.is_sticky() {
            return Error::Cuda {
                device: Some(self.device),
                source,
            };
        }
        let code_name = match &source {
            chorus_cuda::Error::Driver { name, .. } => name.as_str(),
            _ => "a sticky error",
        };
        let (kernel, launched_at) = stream
            .and_then(|s| s.describe(&self.programs))
            .or_else(|| self.last.describe(&self.programs))
            .unwrap_or_else(|| {
                (
                    "(none launched through Chorus)".to_string(),
                    "?".to_string(),
                )
            });
        let _ = self.fault.set(format!(
            "kernel `{kernel}` (launched at {launched_at}) faulted: {code_name}"
        ));
        Error::KernelFault {
            device: self.device,
            kernel,
            launched_at,
            source: Box::new(source),
        }
    }
}

impl std::fmt::Debug for LastLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LastLaunch").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation")
            .field("device", &self.device)
            .field("fault", &self.fault.get())
            .field("retired", &self.is_retired())
            .finish_non_exhaustive()
    }
}
