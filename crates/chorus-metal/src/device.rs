//! The Metal runtime (Apple targets only): the system's GPU and a command queue, buffers,
//! programs (libraries from MSL source, cached), compute pipelines and dispatch.
//!
//! Buffers are shared-storage (`MTLResourceStorageModeShared`): on Apple silicon the CPU and
//! GPU share memory, so reading and writing a buffer from the host is a `memcpy` with no
//! transfer, safe once the command buffers that use it have completed (every dispatch here
//! waits for completion). [`Device::alloc_private`] makes a GPU-only buffer that host copies
//! reach through a shared staging buffer and a blit.

use crate::cache;
use crate::error::{Error, Result};
use crate::msl::{KernelBinding, MslProgram, print_msl};
use chorus_lang::ir::Module;
use chorus_lang::target::Target;
use objc2::rc::Retained;
use objc2::runtime::ProtocolObject;
use objc2_foundation::{NSArray, NSError, NSString, NSURL};
use objc2_metal::{
    MTLBinaryArchive, MTLBinaryArchiveDescriptor, MTLBlitCommandEncoder, MTLBuffer,
    MTLCommandBuffer, MTLCommandBufferStatus, MTLCommandEncoder, MTLCommandQueue,
    MTLCompileOptions, MTLComputeCommandEncoder, MTLComputePipelineDescriptor,
    MTLComputePipelineState, MTLCreateSystemDefaultDevice, MTLDevice, MTLGPUFamily,
    MTLLanguageVersion, MTLLibrary, MTLMathMode, MTLPipelineOption, MTLResourceOptions, MTLSize,
};
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// What [`list_devices`] reports of a Metal device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The GPU's name (`Apple M2 Pro`).
    pub name: String,
    /// Its Apple GPU family (7, 8, 9 …), `None` before Apple7.
    pub family: Option<u32>,
    /// Whether CPU and GPU share memory.
    pub unified_memory: bool,
    /// The memory the GPU should use at most, in bytes.
    pub recommended_working_set: u64,
}

/// The Metal devices of this machine: every GPU on macOS, the system default elsewhere.
pub fn list_devices() -> Vec<DeviceInfo> {
    #[cfg(target_os = "macos")]
    let devices: Vec<Retained<ProtocolObject<dyn MTLDevice>>> =
        objc2_metal::MTLCopyAllDevices().to_vec();
    #[cfg(not(target_os = "macos"))]
    let devices: Vec<Retained<ProtocolObject<dyn MTLDevice>>> =
        MTLCreateSystemDefaultDevice().into_iter().collect();
    devices.iter().map(|d| info(d)).collect()
}

fn info(device: &ProtocolObject<dyn MTLDevice>) -> DeviceInfo {
    DeviceInfo {
        name: device.name().to_string(),
        family: family(device),
        unified_memory: device.hasUnifiedMemory(),
        recommended_working_set: device.recommendedMaxWorkingSetSize(),
    }
}

/// The newest Apple GPU family the device supports, from Apple7.
fn family(device: &ProtocolObject<dyn MTLDevice>) -> Option<u32> {
    [
        (10, MTLGPUFamily::Apple10),
        (9, MTLGPUFamily::Apple9),
        (8, MTLGPUFamily::Apple8),
        (7, MTLGPUFamily::Apple7),
    ]
    .into_iter()
    .find(|(_, f)| device.supportsFamily(*f))
    .map(|(n, _)| n)
}

fn message(error: &NSError) -> String {
    error.localizedDescription().to_string()
}

/// A Metal device with its command queue and program cache.
pub struct Device {
    device: Retained<ProtocolObject<dyn MTLDevice>>,
    queue: Retained<ProtocolObject<dyn MTLCommandQueue>>,
    target: Target,
    name: String,
    /// Compiled programs by cache key (the MSL text, language version and device).
    programs: Mutex<HashMap<String, Arc<Program>>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name)
            .field("target", &self.target.arch)
            .finish()
    }
}

impl Device {
    /// The system default device (`MTLCreateSystemDefaultDevice`) and a command queue.
    pub fn system_default() -> Result<Device> {
        let device = MTLCreateSystemDefaultDevice()
            .ok_or_else(|| Error::NoDevice("MTLCreateSystemDefaultDevice returned none".into()))?;
        Device::new(device)
    }

    /// The device at `index` of [`list_devices`].
    pub fn open(index: usize) -> Result<Device> {
        #[cfg(target_os = "macos")]
        let device = objc2_metal::MTLCopyAllDevices()
            .to_vec()
            .into_iter()
            .nth(index);
        #[cfg(not(target_os = "macos"))]
        let device = MTLCreateSystemDefaultDevice().filter(|_| index == 0);
        Device::new(device.ok_or_else(|| Error::NoDevice(format!("no Metal device {index}")))?)
    }

    fn new(device: Retained<ProtocolObject<dyn MTLDevice>>) -> Result<Device> {
        let name = device.name().to_string();
        let target = family(&device)
            .map(|f| f.min(9))
            .and_then(Target::metal)
            .ok_or_else(|| Error::UnsupportedDevice { name: name.clone() })?;
        let queue = device
            .newCommandQueue()
            .ok_or_else(|| Error::NoDevice(format!("{name} gave no command queue")))?;
        Ok(Device {
            device,
            queue,
            target,
            name,
            programs: Mutex::new(HashMap::new()),
        })
    }

    /// The device's target (its Apple family's capabilities and limits).
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A shared-storage buffer of `bytes` bytes, zeroed.
    pub fn alloc(&self, bytes: usize) -> Result<Buffer> {
        let raw = self
            .device
            .newBufferWithLength_options(bytes.max(1), MTLResourceOptions::StorageModeShared)
            .ok_or(Error::Allocation { bytes })?;
        Ok(Buffer {
            raw,
            len: bytes,
            private: false,
        })
    }

    /// A private (GPU-only) buffer of `bytes` bytes: faster for the GPU on discrete GPUs, read
    /// and written from the host through blits ([`Device::upload`], [`Device::download`]).
    pub fn alloc_private(&self, bytes: usize) -> Result<Buffer> {
        let raw = self
            .device
            .newBufferWithLength_options(bytes.max(1), MTLResourceOptions::StorageModePrivate)
            .ok_or(Error::Allocation { bytes })?;
        let buffer = Buffer {
            raw,
            len: bytes,
            private: true,
        };
        // Zeroed, as shared buffers are.
        self.upload(&buffer, 0, &vec![0u8; bytes])?;
        Ok(buffer)
    }

    /// Copies `src` into `buffer` at `offset`.
    pub fn upload(&self, buffer: &Buffer, offset: usize, src: &[u8]) -> Result<()> {
        buffer.check(offset, src.len())?;
        if !buffer.private {
            // SAFETY: shared storage is host-visible memory of `buffer.len` bytes, the range is
            // inside it (checked), and no command buffer uses it now (dispatches complete before
            // they return).
            unsafe {
                buffer
                    .host_ptr()
                    .add(offset)
                    .copy_from_nonoverlapping(src.as_ptr(), src.len())
            };
            return Ok(());
        }
        let staging = self.alloc(src.len())?;
        self.upload(&staging, 0, src)?;
        self.blit(&staging, 0, buffer, offset, src.len())
    }

    /// Copies `dst.len()` bytes of `buffer` at `offset` into `dst`.
    pub fn download(&self, buffer: &Buffer, offset: usize, dst: &mut [u8]) -> Result<()> {
        buffer.check(offset, dst.len())?;
        if !buffer.private {
            // SAFETY: as in `upload`, reading instead of writing.
            unsafe {
                dst.as_mut_ptr()
                    .copy_from_nonoverlapping(buffer.host_ptr().add(offset), dst.len())
            };
            return Ok(());
        }
        let staging = self.alloc(dst.len())?;
        self.blit(buffer, offset, &staging, 0, dst.len())?;
        self.download(&staging, 0, dst)
    }

    /// A blit of `len` bytes between two buffers, waited for.
    fn blit(
        &self,
        src: &Buffer,
        src_offset: usize,
        dst: &Buffer,
        dst_offset: usize,
        len: usize,
    ) -> Result<()> {
        src.check(src_offset, len)?;
        dst.check(dst_offset, len)?;
        let commands = self.command_buffer()?;
        let blit = commands
            .blitCommandEncoder()
            .ok_or_else(|| Error::Execution("no blit command encoder".into()))?;
        // SAFETY: both ranges lie inside their buffers (checked above).
        unsafe {
            blit.copyFromBuffer_sourceOffset_toBuffer_destinationOffset_size(
                &src.raw, src_offset, &dst.raw, dst_offset, len,
            )
        };
        blit.endEncoding();
        complete(&commands)
    }

    fn command_buffer(&self) -> Result<Retained<ProtocolObject<dyn MTLCommandBuffer>>> {
        self.queue
            .commandBuffer()
            .ok_or_else(|| Error::Execution("the command queue gave no command buffer".into()))
    }

    /// A program from a checked module: validated for this device's target, printed as MSL
    /// and compiled (once per process for the same text; see [`Device::program_from_msl`]).
    pub fn program(&self, module: &Module) -> Result<Arc<Program>> {
        let msl = print_msl(module, &self.target)?;
        self.compile(msl)
    }

    /// A program from MSL text written by hand: the escape hatch, like raw CUDA C (the seed's
    /// `compile-source`). Its kernels are found by their MSL names and bound as MSL declares
    /// them; launches of it are not checked against a signature.
    pub fn program_from_msl(&self, source: &str) -> Result<Arc<Program>> {
        self.compile(MslProgram {
            source: source.to_string(),
            names: Default::default(),
            kernels: Vec::new(),
            constant_globals: Default::default(),
            device_globals: Default::default(),
        })
    }

    fn compile(&self, msl: MslProgram) -> Result<Arc<Program>> {
        let (major, minor) = chorus_lang::cfamily::msl::LANGUAGE_VERSION;
        let version = format!("{major}.{minor}");
        let key = cache::key(&[
            msl.source.as_bytes(),
            version.as_bytes(),
            self.name.as_bytes(),
            self.target.arch.as_bytes(),
        ]);
        let mut programs = self.programs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = programs.get(&key) {
            return Ok(found.clone());
        }
        let options = MTLCompileOptions::new();
        options.setLanguageVersion(MTLLanguageVersion::Version3_2);
        // CUDA's default: IEEE results for division and square roots.
        options.setMathMode(MTLMathMode::Safe);
        let library = self
            .device
            .newLibraryWithSource_options_error(&NSString::from_str(&msl.source), Some(&options))
            .map_err(|e| Error::Compile { log: message(&e) })?;
        let archive = self.archive(&key);
        let program = Arc::new(Program {
            library,
            msl,
            key: key.clone(),
            archive,
            pipelines: Mutex::new(HashMap::new()),
            device: self.device.clone(),
        });
        programs.insert(key, program.clone());
        Ok(program)
    }

    /// The program's binary archive on disk (a new one when none is there or it cannot be
    /// read); `None` without a disk cache.
    fn archive(&self, key: &str) -> Option<Archive> {
        let path = cache::directory()?.join(format!("{key}.metallib-archive"));
        let url = NSURL::fileURLWithPath(&NSString::from_str(&path.to_string_lossy()));
        let descriptor = MTLBinaryArchiveDescriptor::new();
        if path.is_file() {
            descriptor.setUrl(Some(&url));
        }
        let archive = self
            .device
            .newBinaryArchiveWithDescriptor_error(&descriptor)
            .or_else(|e| {
                tracing::debug!(target: "chorus_metal", "disk cache entry unreadable: {}", message(&e));
                descriptor.setUrl(None);
                self.device.newBinaryArchiveWithDescriptor_error(&descriptor)
            })
            .ok()?;
        Some(Archive { archive, url })
    }

    /// Runs kernel `kernel` of `program` over `grid` threadgroups of `block` threads, with
    /// `args` bound to buffer indices 0, 1, … and `dynamic_threadgroup_bytes` of dynamic
    /// threadgroup memory, and waits for it. A kernel that uses globals takes their structures
    /// as more arguments after its own: the constant globals' bytes at
    /// [`KernelBinding::constant_globals`], the program's device globals' buffer at
    /// [`KernelBinding::device_globals`]. Errors of the command buffer are returned.
    pub fn dispatch(
        &self,
        program: &Program,
        kernel: &str,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_threadgroup_bytes: usize,
        args: &[Argument<'_>],
    ) -> Result<()> {
        let pipeline = program.pipeline(kernel)?;
        let fail = |message: String| Error::Dispatch {
            kernel: kernel.to_string(),
            message,
        };
        let threads = block.iter().map(|&b| b as usize).product::<usize>();
        if threads > pipeline.maxTotalThreadsPerThreadgroup() {
            return Err(fail(format!(
                "{threads} threads per threadgroup; its pipeline allows {}",
                pipeline.maxTotalThreadsPerThreadgroup()
            )));
        }
        let memory = dynamic_threadgroup_bytes + pipeline.staticThreadgroupMemoryLength();
        if memory > self.device.maxThreadgroupMemoryLength() {
            return Err(fail(format!(
                "{memory} bytes of threadgroup memory; the device has {}",
                self.device.maxThreadgroupMemoryLength()
            )));
        }
        if grid.contains(&0) || block.contains(&0) {
            return Ok(());
        }
        let commands = self.command_buffer()?;
        let encoder = commands
            .computeCommandEncoder()
            .ok_or_else(|| fail("no compute command encoder".into()))?;
        encoder.setComputePipelineState(&pipeline);
        // Values over `setBytes`'s 4 KiB (a large structure, many globals) go in buffers of
        // their own, kept until the dispatch completes.
        let mut staged = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            match arg {
                // SAFETY: the buffer outlives the dispatch, which is waited for below.
                Argument::Buffer(buffer) => unsafe {
                    encoder.setBuffer_offset_atIndex(Some(&buffer.raw), 0, index)
                },
                Argument::Bytes(bytes) if bytes.len() > SET_BYTES_LIMIT => {
                    let buffer = self.alloc(bytes.len())?;
                    self.upload(&buffer, 0, bytes)?;
                    // SAFETY: as for a buffer argument: `staged` keeps it past the wait.
                    unsafe { encoder.setBuffer_offset_atIndex(Some(&buffer.raw), 0, index) };
                    staged.push(buffer);
                }
                Argument::Bytes(bytes) => {
                    let pointer = NonNull::new(bytes.as_ptr() as *mut c_void)
                        .unwrap_or(NonNull::<u64>::dangling().cast());
                    // SAFETY: Metal copies `bytes.len()` bytes from the pointer now.
                    unsafe { encoder.setBytes_length_atIndex(pointer, bytes.len().max(1), index) };
                }
            }
        }
        if dynamic_threadgroup_bytes > 0 {
            // Metal wants threadgroup memory lengths in multiples of 16 bytes.
            let length = dynamic_threadgroup_bytes.div_ceil(16) * 16;
            // SAFETY: index 0 is the MSL dialect's `[[threadgroup(0)]]` parameter; the length
            // was checked against the device's limit above.
            unsafe { encoder.setThreadgroupMemoryLength_atIndex(length, 0) };
        }
        let size = |d: [u32; 3]| MTLSize {
            width: d[0] as usize,
            height: d[1] as usize,
            depth: d[2] as usize,
        };
        encoder.dispatchThreadgroups_threadsPerThreadgroup(size(grid), size(block));
        encoder.endEncoding();
        let done = complete(&commands);
        drop(staged);
        done
    }
}

/// The most bytes `setBytes:length:atIndex:` takes (Apple: "for data smaller than 4 KB").
const SET_BYTES_LIMIT: usize = 4096;

/// Commits `commands`, waits for them, and turns a failure into an error.
fn complete(commands: &ProtocolObject<dyn MTLCommandBuffer>) -> Result<()> {
    commands.commit();
    commands.waitUntilCompleted();
    if commands.status() == MTLCommandBufferStatus::Error {
        let why = commands
            .error()
            .map_or_else(|| "unknown error".to_string(), |e| message(&e));
        return Err(Error::Execution(why));
    }
    Ok(())
}

/// A Metal buffer.
pub struct Buffer {
    raw: Retained<ProtocolObject<dyn MTLBuffer>>,
    len: usize,
    private: bool,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("len", &self.len)
            .field("private", &self.private)
            .finish()
    }
}

// SAFETY: MTLBuffer objects may be used from any thread (Metal's resources are thread-safe; only
// command encoders are not, and none is kept here). Host access goes through `Device`, which
// copies only while no command buffer runs.
unsafe impl Send for Buffer {}
// SAFETY: as for `Send`: shared references only read the length or copy under the same rule.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a buffer of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it is a private (GPU-only) buffer.
    pub fn is_private(&self) -> bool {
        self.private
    }

    /// The GPU address (`gpuAddress`), for argument buffers.
    pub fn gpu_address(&self) -> u64 {
        self.raw.gpuAddress()
    }

    fn host_ptr(&self) -> *mut u8 {
        self.raw.contents().as_ptr().cast()
    }

    fn check(&self, offset: usize, len: usize) -> Result<()> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::OutOfBounds {
                offset,
                len,
                size: self.len,
            });
        }
        Ok(())
    }
}

/// A kernel argument: a buffer, or bytes passed by value (`setBytes` up to 4 KiB, a buffer
/// made for the dispatch beyond), laid out as MSL lays out the parameter's type
/// ([`crate::layout::to_msl`]); the constant globals' structure is passed as bytes, the device
/// globals' as a buffer ([`crate::GlobalsLayout`]).
#[derive(Clone, Copy, Debug)]
pub enum Argument<'a> {
    /// A buffer (a pointer parameter).
    Buffer(&'a Buffer),
    /// Bytes (a value parameter).
    Bytes(&'a [u8]),
}

/// A binary archive and where it is saved.
struct Archive {
    archive: Retained<ProtocolObject<dyn MTLBinaryArchive>>,
    url: Retained<NSURL>,
}

/// A compiled MSL library and its kernels' pipelines, made on first use.
pub struct Program {
    library: Retained<ProtocolObject<dyn MTLLibrary>>,
    msl: MslProgram,
    key: String,
    archive: Option<Archive>,
    pipelines: Mutex<HashMap<String, Retained<ProtocolObject<dyn MTLComputePipelineState>>>>,
    device: Retained<ProtocolObject<dyn MTLDevice>>,
}

// SAFETY: MTLLibrary, MTLComputePipelineState and MTLBinaryArchive objects are immutable once
// made and thread-safe in Metal; the pipeline map and archive updates are behind a mutex.
unsafe impl Send for Program {}
// SAFETY: as for `Send`.
unsafe impl Sync for Program {}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("key", &self.key).finish()
    }
}

impl Program {
    /// The printed MSL and its kernels' bindings (empty for MSL written by hand).
    pub fn msl(&self) -> &MslProgram {
        &self.msl
    }

    /// The binding of kernel `name` (a kernel-language name), for programs from kernel text.
    pub fn binding(&self, name: &str) -> Option<&KernelBinding> {
        self.msl.kernel(name)
    }

    /// The compute pipeline of `kernel`: a kernel-language name, or for MSL written by hand
    /// the MSL function name. Made once, with the program's binary archive (on disk).
    fn pipeline(
        &self,
        kernel: &str,
    ) -> Result<Retained<ProtocolObject<dyn MTLComputePipelineState>>> {
        let function_name = self
            .msl
            .kernel(kernel)
            .map_or(kernel, |k| k.function.as_str())
            .to_string();
        let mut pipelines = self
            .pipelines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = pipelines.get(&function_name) {
            return Ok(found.clone());
        }
        let function = self
            .library
            .newFunctionWithName(&NSString::from_str(&function_name))
            .ok_or_else(|| Error::NoSuchKernel(kernel.to_string()))?;
        let descriptor = MTLComputePipelineDescriptor::new();
        descriptor.setComputeFunction(Some(&function));
        if let Some(archive) = &self.archive {
            let archives = NSArray::from_retained_slice(std::slice::from_ref(&archive.archive));
            descriptor.setBinaryArchives(Some(&archives));
        }
        let pipeline = self
            .device
            .newComputePipelineStateWithDescriptor_options_reflection_error(
                &descriptor,
                MTLPipelineOption::None,
                None,
            )
            .map_err(|e| Error::Pipeline {
                kernel: kernel.to_string(),
                message: message(&e),
            })?;
        if let Some(archive) = &self.archive {
            // A cache that cannot be written is only slower next time.
            let saved = archive
                .archive
                .addComputePipelineFunctionsWithDescriptor_error(&descriptor)
                .and_then(|()| archive.archive.serializeToURL_error(&archive.url));
            if let Err(e) = saved {
                tracing::debug!(target: "chorus_metal", "disk cache not written: {}", message(&e));
            }
        }
        pipelines.insert(function_name, pipeline.clone());
        Ok(pipeline)
    }
}

/// The system default device, opened once per process.
pub fn default_device() -> Result<&'static Device> {
    static DEVICE: OnceLock<std::result::Result<Device, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| Device::system_default().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::NoDevice(e.clone()))
}
