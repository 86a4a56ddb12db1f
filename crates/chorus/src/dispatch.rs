//! The registry of backends and devices: which backends this build contains, whether each can
//! run kernels here, and each device's state, started on first use and kept for the process.

#[cfg(target_vendor = "apple")]
use crate::backends::metal;
use crate::backends::{cpu, cuda, hip};
use crate::error::{Error, Result, Unavailable};
use crate::hal::{BackendImpl, BadVariable, DeviceImpl};
use crate::kind::{Backend, Device};
use std::fmt;
use std::sync::OnceLock;

/// The backends this build contains; every other [`Backend`] is unavailable as not built.
const BUILT: &[&dyn BackendImpl] = &[
    &cuda::Cuda,
    &hip::Hip,
    #[cfg(target_vendor = "apple")]
    &metal::Metal,
    &cpu::Cpu,
];

/// A probed backend: its devices (each started on first use) and its default device.
struct BackendState {
    backend: &'static dyn BackendImpl,
    default_index: std::result::Result<usize, BadVariable>,
    devices: Box<[OnceLock<Started>]>,
}

/// A device once it was started, or why it could not be.
type Started = std::result::Result<Box<dyn DeviceImpl>, Unavailable>;

/// The state of `backend`, probed on first use; why it cannot run kernels, where it cannot.
fn state(backend: Backend) -> Result<&'static BackendState> {
    static STATES: [OnceLock<std::result::Result<BackendState, Unavailable>>; Backend::ALL.len()] =
        [const { OnceLock::new() }; Backend::ALL.len()];
    STATES[backend.slot()]
        .get_or_init(|| {
            let built = BUILT
                .iter()
                .copied()
                .find(|b| b.backend() == backend)
                .ok_or(Unavailable::NotBuilt)?;
            let count = built.probe()?;
            Ok(BackendState {
                backend: built,
                default_index: built.default_index(),
                devices: (0..count).map(|_| OnceLock::new()).collect(),
            })
        })
        .as_ref()
        .map_err(|reason| match reason {
            Unavailable::NoDriver { reason } => Error::SdkNotFound {
                reason: reason.clone(),
            },
            reason => Error::BackendUnavailable {
                backend,
                reason: reason.clone(),
            },
        })
}

/// The number of devices of `backend`.
pub(crate) fn device_count(backend: Backend) -> Result<usize> {
    Ok(state(backend)?.devices.len())
}

/// The device of `backend` used when nothing names one.
pub(crate) fn default_device(backend: Backend) -> Result<Device> {
    let index = state(backend)?.default_index.clone()?;
    Ok(Device::handle(backend, index))
}

/// The started state of `device`.
pub(crate) fn device(device: Device) -> Result<&'static dyn DeviceImpl> {
    let state = state(device.backend())?;
    let count = state.devices.len();
    let slot = state
        .devices
        .get(device.index())
        .ok_or(Error::DeviceUnavailable {
            device,
            reason: Unavailable::NoSuchDevice {
                index: device.index(),
                count,
            },
        })?;
    match slot.get_or_init(|| state.backend.open(device.index())) {
        Ok(started) => Ok(&**started),
        Err(reason) => Err(Error::DeviceUnavailable {
            device,
            reason: reason.clone(),
        }),
    }
}

/// Every device of every available backend, in the order automatic selection prefers their
/// backends.
pub(crate) fn all_devices() -> Vec<Device> {
    Backend::ALL
        .into_iter()
        .flat_map(|backend| {
            let count = device_count(backend).unwrap_or(0);
            (0..count).map(move |index| Device::handle(backend, index))
        })
        .collect()
}

impl Backend {
    /// `Ok` when kernels can run on this backend here: it is built, its driver loads, it has
    /// devices and its default device starts. Otherwise why not
    /// ([`Error::BackendUnavailable`] with an [`Unavailable`] reason, [`Error::SdkNotFound`],
    /// [`Error::DeviceUnavailable`] or [`Error::BadSelection`] for `CHORUS_DEVICE`). Probed once
    /// per process.
    pub fn availability(self) -> Result<()> {
        device(default_device(self)?).map(drop)
    }

    /// True when kernels can run on this backend here.
    pub fn is_available(self) -> bool {
        self.availability().is_ok()
    }

    /// Its devices (none where it is not available).
    pub fn devices(self) -> Vec<Device> {
        let count = device_count(self).unwrap_or(0);
        (0..count)
            .map(|index| Device::handle(self, index))
            .collect()
    }
}

impl Device {
    /// Device `index` of `backend`, if it exists.
    pub fn new(backend: Backend, index: usize) -> Result<Device> {
        let count = device_count(backend)?;
        if index < count {
            Ok(Device::handle(backend, index))
        } else {
            Err(Error::DeviceUnavailable {
                device: Device::handle(backend, index),
                reason: Unavailable::NoSuchDevice { index, count },
            })
        }
    }

    /// Its name (`NVIDIA H200`, the CPU's model name).
    pub fn name(self) -> Result<String> {
        Ok(self.describe()?.0)
    }

    /// A one-line description (compute capability and memory, or core count).
    pub fn detail(self) -> Result<String> {
        Ok(self.describe()?.1)
    }

    fn describe(self) -> Result<(String, String)> {
        let device = Device::new(self.backend(), self.index())?;
        state(device.backend())?.backend.describe(device.index())
    }

    /// `Ok` when kernels can run on the device (it exists and starts).
    pub fn availability(self) -> Result<()> {
        device(self).map(drop)
    }

    /// Waits until every kernel launched and every copy queued on the device has finished.
    pub fn synchronize(self) -> Result<()> {
        device(self)?.synchronize()
    }

    /// Recreates the device's context after a kernel fault left it unusable
    /// ([`Error::KernelFault`], then [`Error::ContextPoisoned`] for every call on the device):
    /// on CUDA, `cuDevicePrimaryCtxReset`. Everything made on the device before is gone:
    /// memory blocks and streams answer [`Error::DeviceWasReset`], and programs compile and
    /// load again at their next launch. Call it when no other thread uses the device. On the
    /// CPU backend, where a fault is an error of its launch alone, it does nothing.
    pub fn reset(self) -> Result<()> {
        device(self)?.reset()
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} device {}", self.backend(), self.index())?;
        match self.describe() {
            Ok((name, detail)) => write!(f, ": {name} ({detail})"),
            Err(_) => write!(f, " (not available)"),
        }
    }
}
