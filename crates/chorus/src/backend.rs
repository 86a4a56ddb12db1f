//! Which device runs kernels: the process's selection (`CHORUS_BACKEND`, `CHORUS_DEVICE`),
//! scoped overrides, and the list of devices.

use crate::dispatch;
use crate::error::{Error, Result};
use crate::kind::{Backend, Device};
use std::cell::Cell;
use std::sync::OnceLock;

/// The process-wide choice: a backend, and the value of `CHORUS_BACKEND` to report on first use
/// when it names no backend.
struct Selection {
    backend: Backend,
    bad_value: Option<String>,
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
                    bad_value: None,
                },
                None => Selection {
                    backend: detected(),
                    bad_value: Some(name),
                },
            },
            _ => Selection {
                backend: detected(),
                bad_value: None,
            },
        }
    })
}

/// What the innermost [`with_backend`] or [`with_device`] of a thread chose.
#[derive(Clone, Copy)]
enum Scope {
    /// A backend, on its default device.
    Backend(Backend),
    /// One device.
    Device(Device),
}

thread_local! {
    static SCOPED: Cell<Option<Scope>> = const { Cell::new(None) };
}

/// The current backend: that of the innermost [`with_backend`] or [`with_device`] on this
/// thread, else the process's selection: `CHORUS_BACKEND` (`cuda`, `cpu`, `metal`, `hip`) when
/// set, otherwise CUDA where the driver loads and a device exists, otherwise the CPU.
///
/// A backend named by `CHORUS_BACKEND` is used even when it is not available here: the first
/// allocation or launch then fails with [`Error::BackendUnavailable`] saying why, rather than
/// silently running elsewhere; a value that names no backend fails them with
/// [`Error::BadSelection`]. [`check_backend`] reports either early.
pub fn backend() -> Backend {
    match SCOPED.with(Cell::get) {
        Some(Scope::Backend(backend)) => backend,
        Some(Scope::Device(device)) => device.backend(),
        None => selection().backend,
    }
}

/// The current backend ([`backend`]) if kernels can run on it, else why not.
pub fn check_backend() -> Result<Backend> {
    Ok(current_device()?.backend())
}

/// The device kernels run on when nothing else says: the innermost [`with_device`] on this
/// thread; else the default device of the current backend ([`backend`]): for CUDA the device
/// `CHORUS_DEVICE` names (an ordinal, default 0), for the CPU the host. The same as
/// [`Device::default`].
pub fn current_device() -> Result<Device> {
    let backend = match SCOPED.with(Cell::get) {
        Some(Scope::Device(device)) => {
            dispatch::device(device)?;
            return Ok(device);
        }
        Some(Scope::Backend(backend)) => backend,
        None => {
            let selection = selection();
            if let Some(value) = &selection.bad_value {
                return Err(Error::BadSelection {
                    variable: "CHORUS_BACKEND",
                    value: value.clone(),
                    expected: "backend (use cuda, cpu, metal or hip)",
                });
            }
            selection.backend
        }
    };
    let device = dispatch::default_device(backend)?;
    // Starts the device on first use, so that an unavailable one is reported here.
    dispatch::device(device)?;
    Ok(device)
}

impl Device {
    /// The device Chorus uses when nothing names one ([`current_device`]): today's selection
    /// through `CHORUS_BACKEND` and `CHORUS_DEVICE`, or the innermost [`with_backend`] or
    /// [`with_device`]. An error when that device cannot run kernels.
    // Not `Default::default`: the selection can fail, and says why.
    #[allow(clippy::should_implement_trait)]
    pub fn default() -> Result<Device> {
        current_device()
    }

    /// What the device compiles for ([`chorus_lang::target::Target`]): its warp width, limits
    /// and capabilities, so a program can ask before it loads a kernel that needs, say, the
    /// warp-level tensor cores. Starts the device, as any use of it does.
    ///
    /// ```
    /// use chorus::lang::target::Capability;
    ///
    /// let device = chorus::with_backend(chorus::Backend::Cpu, chorus::current_device).unwrap();
    /// let target = device.target().unwrap();
    /// assert_eq!(target.warp_width, 32);
    /// assert!(target.has(Capability::TensorCores));
    /// ```
    pub fn target(self) -> Result<chorus_lang::target::Target> {
        Ok(dispatch::device(self)?.target().clone())
    }
}

/// Runs `f` with `backend` as the current backend of this thread (cl-cuda's binding of
/// `*backend*`): allocations and launches inside use its default device. Memory blocks remember
/// the device they were allocated on, and a launch refuses blocks of another device.
pub fn with_backend<R>(backend: Backend, f: impl FnOnce() -> R) -> R {
    scoped(Scope::Backend(backend), f)
}

/// Runs `f` with `device` as the current device of this thread: allocations, streams and
/// launches inside use it.
pub fn with_device<R>(device: Device, f: impl FnOnce() -> R) -> R {
    scoped(Scope::Device(device), f)
}

fn scoped<R>(scope: Scope, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Scope>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(scope))));
    f()
}

/// Waits until every kernel launched and every copy queued on the current device has finished
/// (cl-cuda's `synchronize-context`). CPU launches finish before they return.
pub fn synchronize() -> Result<()> {
    current_device()?.synchronize()
}

/// Every device of every available backend: CUDA devices where the driver loads, and the CPU
/// (one device, or `CHORUS_CPU_DEVICES` of them). Backends that are not available contribute
/// nothing.
pub fn devices() -> Vec<Device> {
    dispatch::all_devices()
}

/// The same as [`devices`] (cl-cuda's `list-devices`).
pub fn list_devices() -> Vec<Device> {
    devices()
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
    fn scoped_device_nests_and_restores() {
        let cpu = Device::new(Backend::Cpu, 0).unwrap();
        with_backend(Backend::Metal, || {
            with_device(cpu, || {
                assert_eq!(backend(), Backend::Cpu);
                assert_eq!(current_device().unwrap(), cpu);
                assert_eq!(Device::default().unwrap(), cpu);
            });
            assert_eq!(backend(), Backend::Metal);
        });
    }

    #[test]
    fn the_cpu_is_always_listed() {
        let devices = devices();
        let cpu = devices
            .iter()
            .find(|d| d.backend() == Backend::Cpu)
            .expect("the CPU is a device");
        assert!(cpu.detail().unwrap().contains("cores"), "{cpu}");
        assert!(
            !devices
                .iter()
                .any(|d| matches!(d.backend(), Backend::Metal))
        );
    }
}
