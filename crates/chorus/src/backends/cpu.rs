//! The CPU executor as a backend: the host as one device (or as `CHORUS_CPU_DEVICES` separate
//! ones, each with its own programs and globals, so that code for several devices can be run
//! and tested without GPUs), memory as `chorus_cpu` buffers, launches that finish before they
//! return.

use super::cpu_texture;
use crate::TextureDesc;
use crate::error::{Error, Result, Unavailable};
use crate::hal::{
    ArgRef, ArrayImpl, BackendImpl, BadVariable, CheckedArgs, CompiledImpl, DeviceImpl,
    ImageSource, LaunchShape, MemoryImpl, StreamImpl, TextureImpl,
};
use crate::image::{ChannelFormat, ImageShape};
use crate::kind::Backend;
use crate::occupancy::Occupancy;
use chorus_lang::ir::{Global, Module};
use chorus_lang::target::{Capability, Target};
use std::any::Any;
use std::sync::Arc;

/// The CPU backend.
pub(crate) struct Cpu;

impl BackendImpl for Cpu {
    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    fn probe(&self) -> std::result::Result<usize, Unavailable> {
        match std::env::var("CHORUS_CPU_DEVICES") {
            Ok(text) if !text.trim().is_empty() => match text.trim().parse() {
                Ok(count) if count > 0 => Ok(count),
                _ => Err(Unavailable::BadVariable {
                    variable: "CHORUS_CPU_DEVICES",
                    value: text,
                }),
            },
            _ => Ok(1),
        }
    }

    fn default_index(&self) -> std::result::Result<usize, BadVariable> {
        Ok(0)
    }

    fn describe(&self, _index: usize) -> Result<(String, String)> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        // The model name where the OS tells it (Linux); otherwise the architecture.
        let name = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, name)| name.trim().to_string())
            })
            .unwrap_or_else(|| format!("{} host CPU", std::env::consts::ARCH));
        Ok((name, format!("{cores} cores")))
    }

    fn open(&self, _index: usize) -> std::result::Result<Box<dyn DeviceImpl>, Unavailable> {
        Ok(Box::new(CpuDevice {
            target: cpu_target()?,
        }))
    }
}

/// The CPU executor's target: [`Target::cpu`], or with `CHORUS_CPU_WARP=64` the same with AMD
/// CDNA's 64-lane waves and 64-bit masks (`warp-size` 64; a mask operand must be the full
/// `(uint -1)`, and masks as results are refused, as on gfx90a) and without the warp-level
/// tensor cores, whose fragment layouts are those of 32 lanes (a kernel that uses them is
/// refused at its span when it is loaded, not stopped at its first `ldmatrix`).
fn cpu_target() -> std::result::Result<Target, Unavailable> {
    let mut target = Target::cpu();
    match std::env::var("CHORUS_CPU_WARP") {
        Ok(text) if text.trim() == "64" => {
            target.arch = "cpu-wave64".into();
            target.warp_width = 64;
            target.lane_mask_bits = 64;
            target.capabilities = target
                .capabilities
                .without(Capability::TensorCores)
                .without(Capability::Fp8TensorCores);
            Ok(target)
        }
        Ok(text) if !text.trim().is_empty() && text.trim() != "32" => {
            Err(Unavailable::BadVariable {
                variable: "CHORUS_CPU_WARP",
                value: text,
            })
        }
        _ => Ok(target),
    }
}

/// The host as a device.
struct CpuDevice {
    /// The CPU executor as a target.
    target: Target,
}

impl DeviceImpl for CpuDevice {
    fn target(&self) -> &Target {
        &self.target
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn MemoryImpl>> {
        Ok(Box::new(CpuMemory(Arc::new(
            chorus_cpu::DeviceBuffer::alloc(bytes)?,
        ))))
    }

    fn compile(&self, module: &Arc<Module>, _name: &str) -> Result<Box<dyn CompiledImpl>> {
        Ok(Box::new(CpuCompiled(chorus_cpu::CpuModule::for_target(
            module.clone(),
            &self.target,
        )?)))
    }

    fn stream(&self) -> Result<Box<dyn StreamImpl>> {
        Ok(Box::new(CpuStream))
    }

    fn synchronize(&self) -> Result<()> {
        // Launches finish before they return.
        Ok(())
    }

    fn reset(&self) -> Result<()> {
        // A fault of the executor is an error of its launch and leaves nothing behind.
        Ok(())
    }

    fn alloc_array(
        &self,
        format: ChannelFormat,
        extent: [usize; 3],
        _surface: bool,
    ) -> Result<Box<dyn ArrayImpl>> {
        cpu_texture::alloc_array(format, extent)
    }

    fn texture(
        &self,
        source: ImageSource<'_>,
        shape: ImageShape,
        format: ChannelFormat,
        desc: &TextureDesc,
    ) -> Result<Box<dyn TextureImpl>> {
        match source {
            ImageSource::Array(array) => cpu_texture::texture_over_array(array, shape, desc),
            ImageSource::Memory(memory) => {
                let memory =
                    memory
                        .as_any()
                        .downcast_ref::<CpuMemory>()
                        .ok_or(Error::ForeignObject {
                            backend: Backend::Cpu,
                            what: "memory",
                        })?;
                cpu_texture::texture_over_memory(memory.0.clone(), shape, format, desc)
            }
        }
    }

    fn surface(
        &self,
        array: &dyn ArrayImpl,
        _format: ChannelFormat,
        _extent: [usize; 3],
    ) -> Result<Box<dyn TextureImpl>> {
        cpu_texture::surface(array)
    }
}

/// A buffer, shared with the textures that read it.
#[derive(Debug)]
struct CpuMemory(Arc<chorus_cpu::DeviceBuffer>);

impl MemoryImpl for CpuMemory {
    fn upload(&mut self, src: &[u8]) -> Result<()> {
        Ok(self.0.write(0, src)?)
    }

    fn download(&self, dst: &mut [u8]) -> Result<()> {
        Ok(self.0.read(0, dst)?)
    }

    fn address(&self) -> Option<u64> {
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// CPU launches complete before they return: a stream is only a token of order.
#[derive(Debug)]
struct CpuStream;

impl StreamImpl for CpuStream {
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// Every launch has finished before it returned: nothing to wait for.
    fn wait_for(&self, _other: &dyn StreamImpl) -> Result<()> {
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

struct CpuCompiled(chorus_cpu::CpuModule);

impl CompiledImpl for CpuCompiled {
    /// One block at a time on each worker thread, whatever its shape (the facade refuses
    /// clusters of more than one block before a query or a launch gets here).
    fn occupancy(&self, _kernel: usize, launch: &LaunchShape<'_>) -> Result<Option<Occupancy>> {
        let workers = u32::try_from(self.0.workers()).unwrap_or(u32::MAX);
        Ok(Some(Occupancy {
            blocks_per_multiprocessor: 1,
            multiprocessors: workers,
            clusters: launch.cluster.map(|_| workers),
        }))
    }

    fn launch(
        &self,
        kernel: usize,
        args: CheckedArgs<'_, '_>,
        launch: &LaunchShape<'_>,
    ) -> Result<()> {
        // Checked once, by the facade (`check_args`): the executor does not compare types
        // again, and a wrong argument there could only give a launch error or a
        // bounds-checked fault (see `launch_prechecked`).
        let args = args
            .get()
            .iter()
            .map(|arg| match arg {
                ArgRef::Value { bytes, .. } => Ok(chorus_cpu::PrecheckedArg::Bytes(bytes)),
                ArgRef::Memory { memory, .. } => memory
                    .memory
                    .as_any()
                    .downcast_ref::<CpuMemory>()
                    .map(|buffer| chorus_cpu::PrecheckedArg::Buffer(&buffer.0, 0))
                    .ok_or(Error::ForeignObject {
                        backend: Backend::Cpu,
                        what: "memory argument",
                    }),
                // The check refuses addresses off CUDA.
                ArgRef::Address { .. } => Err(Error::ForeignObject {
                    backend: Backend::Cpu,
                    what: "device address argument",
                }),
                ArgRef::Texture { object, .. } => cpu_texture::prechecked(*object),
            })
            .collect::<Result<Vec<_>>>()?;
        let config = chorus_cpu::LaunchConfig {
            grid: launch.grid.to_array(),
            block: launch.block.to_array(),
            shared_mem: launch.shared_mem as usize,
        };
        Ok(self.0.launch_prechecked(kernel, &config, &args)?)
    }

    fn read_global(&self, global: &Global, dst: &mut [u8]) -> Result<()> {
        let bytes = self.0.global_bytes(&global.name)?;
        if bytes.len() != dst.len() {
            return Err(chorus_cpu::Error::GlobalAccess {
                name: global.name.to_string(),
                message: format!("it has {} bytes, {} were asked for", bytes.len(), dst.len()),
            }
            .into());
        }
        dst.copy_from_slice(&bytes);
        Ok(())
    }

    fn write_global(&self, global: &Global, src: &[u8]) -> Result<()> {
        Ok(self.0.set_global_bytes(&global.name, src)?)
    }
}
