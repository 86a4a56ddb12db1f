//! The names everything else builds on: backends, and devices as `(backend, ordinal)` handles.
//! Nothing here talks to a backend; what needs one (availability, a device's name) lives in
//! `dispatch.rs`.

use std::fmt;

/// A backend: a kind of device kernels run on.
///
/// Every backend Chorus knows has a name here, built or not: a backend this build does not
/// contain (Metal today) is simply unavailable, and [`Backend::availability`] says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// NVIDIA GPUs through the CUDA driver API ([`crate::cuda`]).
    Cuda,
    /// The CPU executor ([`crate::cpu`]): every kernel, on any machine, with CUDA's semantics.
    Cpu,
    /// Apple silicon through Metal (built on Apple targets).
    Metal,
    /// AMD GPUs through HIP (chorus-hip), where ROCm loads and a device exists.
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

    /// The index of this backend in per-backend tables.
    pub(crate) const fn slot(self) -> usize {
        self as usize
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

/// One device of one backend: a small copyable handle (the backend and the device's ordinal in
/// it). Memory blocks, streams, compiled programs and launches belong to one device.
///
/// Get one from [`crate::devices`], [`crate::current_device`] or [`Device::new`];
/// [`Device::default`] is the device Chorus picks when nothing says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    backend: Backend,
    // 32 bits keep the handle (and the errors that carry it) small.
    index: u32,
}

impl Device {
    /// The handle of device `index` of `backend`, unchecked: what uses it reports a device that
    /// does not exist.
    pub(crate) const fn handle(backend: Backend, index: usize) -> Device {
        // No backend has 2³² devices: an ordinal past that is one that does not exist.
        let index = if index > u32::MAX as usize {
            u32::MAX
        } else {
            index as u32
        };
        Device { backend, index }
    }

    /// The backend it belongs to.
    pub fn backend(self) -> Backend {
        self.backend
    }

    /// Its ordinal within the backend (the CUDA device ordinal; 0 for the CPU).
    pub fn index(self) -> usize {
        self.index as usize
    }
}

/// How [`crate::MemoryBlock::copy_device_from`] moved the data between two device copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyRoute {
    /// Within one device (`cuMemcpyDtoD` on CUDA).
    SameDevice,
    /// Directly between two devices that can reach each other's memory (CUDA peer access,
    /// `cuDeviceCanAccessPeer`; `cuMemcpyPeer`).
    Peer,
    /// Through host memory: devices that cannot reach each other, devices of different
    /// backends, and the CPU executor's devices.
    Host,
}
