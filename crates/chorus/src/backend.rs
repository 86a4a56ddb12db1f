//! Which backend runs kernels: selection, the `CHORUS_BACKEND` override, scoped overrides, and
//! the list of devices.

use crate::dispatch;
use crate::error::{Error, Result};
use std::cell::Cell;
use std::fmt;
use std::sync::OnceLock;

/// A backend: a kind of device kernels run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// NVIDIA GPUs through the CUDA driver API ([`crate::cuda`]).
    Cuda,
    /// The CPU executor ([`crate::cpu`]): every kernel, on any machine, with CUDA's semantics.
    Cpu,
    /// Apple silicon through Metal. Not implemented in this tree: always reported unavailable.
    Metal,
    /// AMD GPUs through HIP. Not implemented in this tree: always reported unavailable.
    Hip,
}

impl Backend {
    /// Every backend, in the order automatic selection prefers them.
    pub const ALL: [Backend; 4] = [Backend::Cuda, Backend::Metal, Backend::Hip, Backend::Cpu];

    /// The name `CHORUS_BACKEND` takes (`cuda`, `cpu`, `metal`, `hip`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::Cpu => "cpu",
            Backend::Metal => "metal",
            Backend::Hip => "hip",
        }
    }

    /// The backend a name denotes (case-insensitive).
    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name.trim()))
    }

    /// `Ok` when kernels can run on this backend here; otherwise why not (no driver, no device,
    /// not implemented). Probed once per process.
    pub fn availability(self) -> Result<()> {
        dispatch::availability(self)
    }

    /// True when kernels can run on this backend here.
    pub fn is_available(self) -> bool {
        self.availability().is_ok()
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Cuda => "CUDA",
            Backend::Cpu => "CPU",
            Backend::Metal => "Metal",
            Backend::Hip => "HIP",
        })
    }
}

/// The process-wide choice: a backend, and the error to report on its first use when the choice
/// came from a `CHORUS_BACKEND` value that names no backend.
struct Selection {
    backend: Backend,
    problem: Option<String>,
}

fn selection() -> &'static Selection {
    static SELECTION: OnceLock<Selection> = OnceLock::new();
    SELECTION.get_or_init(|| {
        let detected = || {
            Backend::ALL
                .into_iter()
                .find(|b| b.is_available())
                .unwrap_or(Backend::Cpu)
        };
        match std::env::var("CHORUS_BACKEND") {
            Ok(name) if !name.trim().is_empty() => match Backend::from_name(&name) {
                Some(backend) => Selection {
                    backend,
                    problem: None,
                },
                None => Selection {
                    backend: detected(),
                    problem: Some(format!(
                        "CHORUS_BACKEND={name} names no backend (use cuda, cpu, metal or hip)"
                    )),
                },
            },
            _ => Selection {
                backend: detected(),
                problem: None,
            },
        }
    })
}

thread_local! {
    /// The innermost [`with_backend`] on this thread.
    static SCOPED: Cell<Option<Backend>> = const { Cell::new(None) };
}

/// The current backend: the innermost [`with_backend`] on this thread, else the process's
/// selection: `CHORUS_BACKEND` (`cuda`, `cpu`, `metal`, `hip`) when set, otherwise CUDA where the
/// driver loads and a device exists, otherwise the CPU.
///
/// A backend named by `CHORUS_BACKEND` is used even when it is not available here: the first
/// allocation or launch then fails with [`Error::BackendUnavailable`] saying why, rather than
/// silently running elsewhere; a value that names no backend fails them with
/// [`Error::BadSelection`]. [`check_backend`] reports either early.
pub fn backend() -> Backend {
    SCOPED
        .with(Cell::get)
        .unwrap_or_else(|| selection().backend)
}

/// The current backend ([`backend`]) if kernels can run on it, else why not.
pub fn check_backend() -> Result<Backend> {
    if SCOPED.with(Cell::get).is_none()
        && let Some(problem) = &selection().problem
    {
        return Err(Error::BadSelection(problem.clone()));
    }
    let backend = backend();
    backend.availability()?;
    Ok(backend)
}

/// Runs `f` with `backend` as the current backend of this thread (cl-cuda's binding of
/// `*backend*`): allocations and launches inside use it. Memory blocks remember the backend they
/// were allocated on, and a launch refuses blocks of another backend.
pub fn with_backend<R>(backend: Backend, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Backend>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(backend))));
    f()
}

/// The device the current backend runs kernels on: for CUDA the device `CHORUS_DEVICE` names
/// (an ordinal, default 0), for the CPU the host.
pub fn current_device() -> Result<Device> {
    dispatch::current_device(check_backend()?)
}

/// Waits until every kernel launched and every copy queued on the current backend has
/// finished (cl-cuda's `synchronize-context`). CPU launches finish before they return.
pub fn synchronize() -> Result<()> {
    dispatch::synchronize(check_backend()?)
}

/// One device of one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// The backend it belongs to.
    pub backend: Backend,
    /// Its ordinal within the backend.
    pub index: usize,
    /// Its name (`NVIDIA H200`, the CPU's model name).
    pub name: String,
    /// A one-line description (compute capability and memory, or core count).
    pub detail: String,
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} device {}: {} ({})",
            self.backend, self.index, self.name, self.detail
        )
    }
}

/// Every device of every available backend: CUDA devices where the driver loads, and the CPU as
/// one device with its core count. Backends that are not available contribute nothing.
pub fn list_devices() -> Vec<Device> {
    Backend::ALL
        .into_iter()
        .flat_map(dispatch::devices)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for backend in Backend::ALL {
            assert_eq!(Backend::from_name(backend.name()), Some(backend));
        }
        assert_eq!(Backend::from_name(" CPU "), Some(Backend::Cpu));
        assert_eq!(Backend::from_name("opencl"), None);
    }

    #[test]
    fn scoped_backend_nests_and_restores() {
        let outer = backend();
        with_backend(Backend::Metal, || {
            assert_eq!(backend(), Backend::Metal);
            with_backend(Backend::Cpu, || assert_eq!(backend(), Backend::Cpu));
            assert_eq!(backend(), Backend::Metal);
            assert!(matches!(
                check_backend(),
                Err(Error::BackendUnavailable {
                    backend: Backend::Metal,
                    ..
                })
            ));
        });
        assert_eq!(backend(), outer);
    }

    #[test]
    fn the_cpu_is_always_listed() {
        let devices = list_devices();
        let cpu = devices
            .iter()
            .find(|d| d.backend == Backend::Cpu)
            .expect("the CPU is a device");
        assert!(cpu.detail.contains("cores"), "{cpu}");
        assert!(
            !devices
                .iter()
                .any(|d| matches!(d.backend, Backend::Metal | Backend::Hip))
        );
    }
}
