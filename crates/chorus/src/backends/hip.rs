//! HIP as a backend (AMD GPUs through chorus-hip): each device by ordinal, programs validated
//! for the device's target (`Target::hip(gcnArchName)`), compiled by hipRTC and launched through
//! `hipModuleLaunchKernel`. Selected by `CHORUS_BACKEND=hip`, or by default where ROCm loads,
//! a device exists and no CUDA device does.

use crate::error::{Error, Result, Unavailable};
use crate::hal::{
    ArgRef, BackendImpl, BadVariable, CheckedArgs, CompiledImpl, DeviceImpl, LaunchShape,
    MemoryImpl, StreamImpl,
};
use crate::kind::{Backend, Device};
use chorus_lang::ir::{Global, Module};
use chorus_lang::target::Target;
use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

pub(crate) struct Hip;

impl BackendImpl for Hip {
    fn backend(&self) -> Backend {
        Backend::Hip
    }

    fn probe(&self) -> std::result::Result<usize, Unavailable> {
        match chorus_hip::device_count() {
            Err(chorus_hip::Error::HipNotFound { reason, tried }) => Err(Unavailable::NoDriver {
                reason: format!("{reason} (tried: {tried})"),
            }),
            Err(e) => Err(Unavailable::Hip(Arc::new(e))),
            Ok(0) => Err(Unavailable::NoDevices),
            Ok(count) => Ok(count),
        }
    }

    fn default_index(&self) -> std::result::Result<usize, BadVariable> {
        Ok(0)
    }

    fn describe(&self, index: usize) -> Result<(String, String)> {
        let device = chorus_hip::Device::new(index).map_err(device_error(index))?;
        let p = device.properties();
        Ok((
            p.name.clone(),
            format!(
                "{}, {}-lane waves, {:.1} GiB",
                p.gcn_arch_name,
                p.warp_size,
                p.total_memory as f64 / f64::from(1u32 << 30)
            ),
        ))
    }

    fn open(&self, index: usize) -> std::result::Result<Box<dyn DeviceImpl>, Unavailable> {
        let device = chorus_hip::Device::new(index).map_err(|e| Unavailable::Hip(Arc::new(e)))?;
        Ok(Box::new(HipDevice {
            device: Arc::new(device),
        }))
    }
}

fn device_error(index: usize) -> impl Fn(chorus_hip::Error) -> Error {
    move |source| Error::Hip {
        device: Some(Device::handle(Backend::Hip, index)),
        source,
    }
}

struct HipDevice {
    device: Arc<chorus_hip::Device>,
}

impl HipDevice {
    fn error(&self) -> impl Fn(chorus_hip::Error) -> Error {
        device_error(self.device.ordinal())
    }
}

impl DeviceImpl for HipDevice {
    fn target(&self) -> &Target {
        self.device.target()
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn MemoryImpl>> {
        let memory = chorus_hip::DeviceMemory::alloc(&self.device, bytes).map_err(self.error())?;
        Ok(Box::new(HipMemory {
            memory,
            device: self.device.ordinal(),
        }))
    }

    fn compile(&self, module: &Arc<Module>, _name: &str) -> Result<Box<dyn CompiledImpl>> {
        let program =
            chorus_hip::Program::from_ir(module.clone(), &self.device).map_err(self.error())?;
        Ok(Box::new(HipCompiled {
            program,
            module: module.clone(),
            device: self.device.clone(),
        }))
    }

    fn stream(&self) -> Result<Box<dyn StreamImpl>> {
        Ok(Box::new(HipStream {
            stream: chorus_hip::Stream::new(&self.device).map_err(self.error())?,
            device: self.device.clone(),
        }))
    }

    fn synchronize(&self) -> Result<()> {
        self.device.synchronize().map_err(self.error())
    }

    fn reset(&self) -> Result<()> {
        // This backend keeps no per-context fault state to clear (it has not run on AMD
        // hardware, where a fault's effect on the process is ROCm's): waiting for the device
        // reports a pending fault, and nothing else is recreated.
        self.device.synchronize().map_err(self.error())
    }
}

#[derive(Debug)]
struct HipMemory {
    memory: chorus_hip::DeviceMemory,
    device: usize,
}

impl MemoryImpl for HipMemory {
    fn upload(&mut self, src: &[u8]) -> Result<()> {
        self.memory
            .copy_from_host(src)
            .map_err(device_error(self.device))
    }

    fn download(&self, dst: &mut [u8]) -> Result<()> {
        self.memory
            .copy_to_host(dst)
            .map_err(device_error(self.device))
    }

    fn address(&self) -> Option<u64> {
        Some(self.memory.as_ptr() as u64)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Debug)]
struct HipStream {
    stream: chorus_hip::Stream,
    device: Arc<chorus_hip::Device>,
}

impl StreamImpl for HipStream {
    fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(device_error(self.device.ordinal()))
    }

    /// An event made and recorded on `other` with its device current (HIP, as CUDA, records
    /// an event only on a stream of the event's device), then waited for here.
    fn wait_for(&self, other: &dyn StreamImpl) -> Result<()> {
        let Some(other) = other.as_any().downcast_ref::<HipStream>() else {
            return other.synchronize();
        };
        let on_other = device_error(other.device.ordinal());
        other.device.make_current().map_err(&on_other)?;
        let event = chorus_hip::Event::new().map_err(&on_other)?;
        event.record(Some(&other.stream)).map_err(&on_other)?;
        self.stream
            .wait_event(&event)
            .map_err(device_error(self.device.ordinal()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct HipCompiled {
    program: chorus_hip::Program,
    module: Arc<Module>,
    device: Arc<chorus_hip::Device>,
}

impl CompiledImpl for HipCompiled {
    fn launch(
        &self,
        kernel: usize,
        args: CheckedArgs<'_, '_>,
        launch: &LaunchShape<'_>,
    ) -> Result<()> {
        let on = device_error(self.device.ordinal());
        self.device.make_current().map_err(&on)?;
        let function = self
            .program
            .function(&self.module.functions[kernel].name)
            .map_err(&on)?;
        let stream = match launch.stream {
            Some(stream) => Some(
                &stream
                    .as_any()
                    .downcast_ref::<HipStream>()
                    .ok_or(Error::ForeignObject {
                        backend: Backend::Hip,
                        what: "stream",
                    })?
                    .stream,
            ),
            None => None,
        };
        // Each argument's bytes: a value's own, or a pointer's address.
        let mut values: Vec<Vec<u8>> = Vec::with_capacity(args.get().len());
        for arg in args.get() {
            values.push(match arg {
                ArgRef::Value { bytes, .. } => bytes.to_vec(),
                ArgRef::Memory { memory, .. } => memory
                    .memory
                    .address()
                    .ok_or(Error::ForeignObject {
                        backend: Backend::Hip,
                        what: "memory argument",
                    })?
                    .to_ne_bytes()
                    .to_vec(),
                ArgRef::Address { address, .. } => address.to_ne_bytes().to_vec(),
                ArgRef::Texture { .. } => {
                    return Err(Error::Texture {
                        reason: "the HIP backend has no texture or surface objects".to_string(),
                    });
                }
            });
        }
        let mut pointers: Vec<*mut c_void> =
            values.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
        let config = chorus_hip::LaunchConfig {
            grid: [launch.grid.x, launch.grid.y, launch.grid.z],
            block: [launch.block.x, launch.block.y, launch.block.z],
            shared_mem: launch.shared_mem,
        };
        // SAFETY: `CheckedArgs` were checked against this kernel's parameters (count, value
        // types and sizes, pointer element types, memory on this device); `values` outlives
        // the call.
        unsafe { chorus_hip::launch(function, &config, &mut pointers, stream) }.map_err(&on)
    }

    fn read_global(&self, global: &Global, dst: &mut [u8]) -> Result<()> {
        self.program
            .read_global(&global.name, dst)
            .map_err(device_error(self.device.ordinal()))
    }

    fn write_global(&self, global: &Global, src: &[u8]) -> Result<()> {
        self.program
            .write_global(&global.name, src)
            .map_err(device_error(self.device.ordinal()))
    }
}
