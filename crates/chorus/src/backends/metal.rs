//! Metal as a backend (Apple targets only): the Mac's GPUs as devices, memory blocks as
//! shared-storage buffers, programs validated for the device's Apple family and printed as MSL,
//! launches as compute dispatches that complete before they return.

use crate::error::{Error, Result, Unavailable};
use crate::hal::{
    ArgRef, BackendImpl, BadVariable, CheckedArgs, CompiledImpl, DeviceImpl, LaunchShape,
    MemoryImpl, StreamImpl,
};
use crate::kind::Backend;
use chorus_lang::ir::{FunctionKind, Global, Module};
use chorus_lang::target::Target;
use chorus_metal::{Argument, Buffer, Device, Program};
use std::any::Any;
use std::sync::{Arc, Mutex, PoisonError};

/// The Metal backend.
pub(crate) struct Metal;

impl BackendImpl for Metal {
    fn backend(&self) -> Backend {
        Backend::Metal
    }

    fn probe(&self) -> std::result::Result<usize, Unavailable> {
        match chorus_metal::list_devices().len() {
            0 => Err(Unavailable::NoDevices),
            count => Ok(count),
        }
    }

    fn default_index(&self) -> std::result::Result<usize, BadVariable> {
        // Device 0 is the system default device where there are several.
        Ok(0)
    }

    fn describe(&self, index: usize) -> Result<(String, String)> {
        let devices = chorus_metal::list_devices();
        let info = devices.get(index).ok_or_else(|| {
            metal(chorus_metal::Error::NoDevice(format!(
                "no Metal device {index}"
            )))
        })?;
        let family = info
            .family
            .map_or_else(|| "before Apple7".to_string(), |f| format!("Apple{f}"));
        let memory = if info.unified_memory {
            "unified memory"
        } else {
            "discrete memory"
        };
        Ok((
            info.name.clone(),
            format!(
                "{family}, {memory}, {} MiB working set",
                info.recommended_working_set >> 20
            ),
        ))
    }

    fn open(&self, index: usize) -> std::result::Result<Box<dyn DeviceImpl>, Unavailable> {
        let device = if index == 0 {
            Device::system_default()
        } else {
            Device::open(index)
        };
        match device {
            Ok(device) => Ok(Box::new(MetalDevice(Arc::new(device)))),
            Err(e) => Err(Unavailable::NoDriver {
                reason: e.to_string(),
            }),
        }
    }
}

fn metal(source: chorus_metal::Error) -> Error {
    Error::Metal {
        source: Box::new(source),
    }
}

/// A Metal device.
struct MetalDevice(Arc<Device>);

impl DeviceImpl for MetalDevice {
    fn target(&self) -> &Target {
        self.0.target()
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn MemoryImpl>> {
        Ok(Box::new(MetalMemory {
            buffer: self.0.alloc(bytes).map_err(metal)?,
            device: self.0.clone(),
        }))
    }

    fn compile(&self, module: &Arc<Module>, _name: &str) -> Result<Box<dyn CompiledImpl>> {
        let program = self.0.program(module).map_err(metal)?;
        // Each compiled program has globals of its own, as a CUDA module has, even where the
        // device's cache gives two of them one library.
        let msl = program.msl();
        let constant_globals = Mutex::new(msl.constant_globals.initial().to_vec());
        let device_globals = if msl.device_globals.is_empty() {
            None
        } else {
            // Shared storage, so that the host reads and writes it in place.
            let buffer = self.0.alloc(msl.device_globals.size()).map_err(metal)?;
            self.0
                .upload(&buffer, 0, msl.device_globals.initial())
                .map_err(metal)?;
            Some(buffer)
        };
        Ok(Box::new(MetalCompiled {
            device: self.0.clone(),
            program,
            module: module.clone(),
            constant_globals,
            device_globals,
        }))
    }

    fn stream(&self) -> Result<Box<dyn StreamImpl>> {
        Ok(Box::new(MetalStream))
    }

    fn synchronize(&self) -> Result<()> {
        // Dispatches and copies complete before they return.
        Ok(())
    }

    fn reset(&self) -> Result<()> {
        // A failed command buffer is an error of its dispatch and poisons nothing: Metal has no
        // sticky errors, so there is no state to recreate.
        Ok(())
    }
}

/// A shared-storage buffer.
struct MetalMemory {
    buffer: Buffer,
    device: Arc<Device>,
}

impl std::fmt::Debug for MetalMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.buffer.fmt(f)
    }
}

impl MemoryImpl for MetalMemory {
    fn upload(&mut self, src: &[u8]) -> Result<()> {
        self.device.upload(&self.buffer, 0, src).map_err(metal)
    }

    fn download(&self, dst: &mut [u8]) -> Result<()> {
        self.device.download(&self.buffer, 0, dst).map_err(metal)
    }

    fn address(&self) -> Option<u64> {
        None
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Metal dispatches complete before they return: a stream is only a token of order.
#[derive(Debug)]
struct MetalStream;

impl StreamImpl for MetalStream {
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

/// A program on a Metal device, with its globals ([`chorus_metal::GlobalsLayout`]): the bytes
/// of the constant globals' structure, the host's to read and write, bound at each dispatch of
/// a kernel that reads them; and the buffer of the device globals' structure, made from the
/// initializers when the program is loaded, bound at each dispatch of a kernel that uses them,
/// which kernels and host read and write.
///
/// Order: every dispatch completes before its launch returns, so a host read of a device
/// global sees what every launch that returned before it wrote, and a host write is seen by
/// every launch after it, as CUDA's `cudaMemcpyFromSymbol` / `cudaMemcpyToSymbol` are ordered
/// after the work of the stream they use. A launch from another thread that is running at the
/// same time is not waited for: its writes may or may not be seen.
struct MetalCompiled {
    device: Arc<Device>,
    program: Arc<Program>,
    module: Arc<Module>,
    constant_globals: Mutex<Vec<u8>>,
    device_globals: Option<Buffer>,
}

impl MetalCompiled {
    fn constant_globals(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.constant_globals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The device globals' buffer, when `global` is in it.
    fn device_buffer(&self, global: &Global) -> Option<&Buffer> {
        self.device_globals
            .as_ref()
            .filter(|_| self.program.msl().device_globals.contains(&global.name))
    }
}

impl CompiledImpl for MetalCompiled {
    fn launch(
        &self,
        kernel: usize,
        args: CheckedArgs<'_, '_>,
        launch: &LaunchShape<'_>,
    ) -> Result<()> {
        let function = &self.module.functions[kernel];
        debug_assert_eq!(function.kind, FunctionKind::Kernel);
        let name = function.name.to_string();
        // Values arrive in the host's layout (C's): those MSL lays out otherwise (a `float3`,
        // a structure holding one) are laid out again here, kept alive for the dispatch.
        let structs = &self.module.structs;
        let converted: Vec<Option<Vec<u8>>> = args
            .get()
            .iter()
            .map(|arg| match arg {
                ArgRef::Value { ty, bytes } if !chorus_metal::layout::same_layout(ty, structs) => {
                    chorus_metal::layout::to_msl(ty, bytes, structs)
                        .map(Some)
                        .ok_or_else(|| {
                            metal(chorus_metal::Error::Dispatch {
                                kernel: name.clone(),
                                message: format!("a `{ty}` value has no MSL layout"),
                            })
                        })
                }
                _ => Ok(None),
            })
            .collect::<Result<_>>()?;
        let mut bound = Vec::with_capacity(args.get().len());
        for (arg, converted) in args.get().iter().zip(&converted) {
            bound.push(match arg {
                ArgRef::Value { bytes, .. } => match converted {
                    Some(msl) => Argument::Bytes(msl),
                    None => Argument::Bytes(bytes),
                },
                // A memory block on a Metal device keeps its device copy in MSL's layout
                // (the facade converts at each sync), so the buffer is used as it is.
                ArgRef::Memory { memory, .. } => {
                    let buffer = memory.memory.as_any().downcast_ref::<MetalMemory>().ok_or(
                        Error::ForeignObject {
                            backend: Backend::Metal,
                            what: "memory argument",
                        },
                    )?;
                    Argument::Buffer(&buffer.buffer)
                }
                // Metal's target lacks the textures capability: validation refuses such kernels.
                ArgRef::Texture { .. } => {
                    return Err(Error::Texture {
                        reason: "the Metal backend has no texture or surface objects".to_string(),
                    });
                }
                // The check refuses addresses off CUDA.
                ArgRef::Address { .. } => {
                    return Err(Error::ForeignObject {
                        backend: Backend::Metal,
                        what: "device address argument",
                    });
                }
            });
        }
        // The constant globals as they are now (`setBytes` copies them when the dispatch is
        // encoded): a write from the host after this launch is seen by the next one. Then the
        // device globals' buffer, which the kernel writes in place.
        let binding = self.program.binding(&name);
        let constant = binding.and_then(|b| b.constant_globals);
        let device = binding.and_then(|b| b.device_globals);
        let constant_bytes = constant.map(|_| self.constant_globals().clone());
        let extra = [
            (constant, constant_bytes.as_deref().map(Argument::Bytes)),
            (device, self.device_globals.as_ref().map(Argument::Buffer)),
        ];
        for (index, argument) in extra {
            let Some(index) = index else { continue };
            match argument {
                Some(argument) if index == bound.len() => bound.push(argument),
                // The facade checked the arguments against the kernel's parameters, and
                // `compile` made the buffer of a program with device globals.
                _ => {
                    return Err(metal(chorus_metal::Error::Dispatch {
                        kernel: name,
                        message: format!(
                            "{} arguments; a globals' structure is at buffer {index}",
                            bound.len()
                        ),
                    }));
                }
            }
        }
        self.device
            .dispatch(
                &self.program,
                &name,
                launch.grid.to_array(),
                launch.block.to_array(),
                launch.shared_mem as usize,
                &bound,
            )
            .map_err(metal)
    }

    fn read_global(&self, global: &Global, dst: &mut [u8]) -> Result<()> {
        let msl = self.program.msl();
        let Some(buffer) = self.device_buffer(global) else {
            return msl
                .constant_globals
                .read(&self.constant_globals(), &global.name, dst)
                .map_err(metal);
        };
        // Only the global's own bytes, in place: dispatches have completed (see the order
        // above), so the buffer holds what they left.
        let layout = &msl.device_globals;
        let range = layout.field_range(&global.name).map_err(metal)?;
        let mut field = vec![0u8; range.len()];
        self.device
            .download(buffer, range.start, &mut field)
            .map_err(metal)?;
        layout.decode(&global.name, &field, dst).map_err(metal)
    }

    fn write_global(&self, global: &Global, src: &[u8]) -> Result<()> {
        let msl = self.program.msl();
        let Some(buffer) = self.device_buffer(global) else {
            return msl
                .constant_globals
                .write(&mut self.constant_globals(), &global.name, src)
                .map_err(metal);
        };
        // Only the global's own bytes, so that the other globals keep what kernels left.
        let layout = &msl.device_globals;
        let field = layout.encode(&global.name, src).map_err(metal)?;
        let range = layout.field_range(&global.name).map_err(metal)?;
        self.device
            .upload(buffer, range.start, &field)
            .map_err(metal)
    }
}
