//! Launching kernels: grid and block sizes, arguments checked against the kernel's signature,
//! and cluster launches (`cuLaunchKernelEx`, sm_90).

use crate::call::cu;
use crate::error::{Error, Result};
use crate::module::{Function, Signature};
use chorus_driver::MemoryBlock;
use chorus_driver::sys::{self, CUdeviceptr};
use chorus_driver::{Stream, TensorMap, current_stream};
use chorus_lang::host::KernelValue;
use chorus_lang::types::Type;
use std::ffi::c_void;

/// Three extents (grid, block or cluster sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x extent.
    pub x: u32,
    /// y extent.
    pub y: u32,
    /// z extent.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x · y · z` (in 64 bits, so it cannot overflow).
    pub fn volume(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }

    /// The extents as an array (`[x, y, z]`).
    pub fn to_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3::new(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3::new(x, y, z)
    }
}
impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Dim3 {
        Dim3::new(x, y, z)
    }
}

/// How to launch: grid and block sizes, dynamic shared memory, stream, and cluster size.
///
/// `LaunchConfig::grid(4).block(256)` is one 1-D launch of 4 × 256 threads on the current
/// stream ([`crate::with_stream`]).
#[derive(Clone, Copy, Debug)]
pub struct LaunchConfig<'s> {
    /// Blocks in the grid (the seed's `:grid-dim`).
    pub grid: Dim3,
    /// Threads in a block (`:block-dim`).
    pub block: Dim3,
    /// Dynamic shared memory in bytes (`:shared-mem`).
    pub shared_mem: u32,
    /// The stream (`:stream`); `None` means the thread's current stream.
    pub stream: Option<&'s Stream>,
    /// Blocks per cluster (sm_90 and newer); launches through `cuLaunchKernelEx`.
    pub cluster: Option<Dim3>,
}

impl Default for LaunchConfig<'_> {
    fn default() -> Self {
        LaunchConfig {
            grid: Dim3::new(1, 1, 1),
            block: Dim3::new(1, 1, 1),
            shared_mem: 0,
            stream: None,
            cluster: None,
        }
    }
}

impl<'s> LaunchConfig<'s> {
    /// A launch of `grid` blocks of one thread.
    pub fn grid(grid: impl Into<Dim3>) -> LaunchConfig<'s> {
        LaunchConfig {
            grid: grid.into(),
            ..LaunchConfig::default()
        }
    }

    /// Sets the block size.
    pub fn block(mut self, block: impl Into<Dim3>) -> LaunchConfig<'s> {
        self.block = block.into();
        self
    }

    /// Sets the dynamic shared memory in bytes.
    pub fn shared_mem(mut self, bytes: u32) -> LaunchConfig<'s> {
        self.shared_mem = bytes;
        self
    }

    /// Launches on `stream` instead of the current stream.
    pub fn stream(mut self, stream: &'s Stream) -> LaunchConfig<'s> {
        self.stream = Some(stream);
        self
    }

    /// Groups blocks into clusters of `cluster` (sm_90+); the grid must be a multiple of it.
    pub fn cluster(mut self, cluster: impl Into<Dim3>) -> LaunchConfig<'s> {
        self.cluster = Some(cluster.into());
        self
    }

    fn validate(&self) -> Result<()> {
        for (what, d) in [("grid", self.grid), ("block", self.block)] {
            if d.volume() == 0 {
                return Err(Error::InvalidArgument(format!(
                    "{what} size ({}, {}, {}) has a zero extent",
                    d.x, d.y, d.z
                )));
            }
        }
        if let Some(c) = self.cluster {
            let divides = c.volume() != 0
                && self.grid.x.is_multiple_of(c.x)
                && self.grid.y.is_multiple_of(c.y)
                && self.grid.z.is_multiple_of(c.z);
            if !divides {
                return Err(Error::InvalidArgument(format!(
                    "cluster size ({}, {}, {}) must divide the grid ({}, {}, {})",
                    c.x, c.y, c.z, self.grid.x, self.grid.y, self.grid.z
                )));
            }
        }
        Ok(())
    }
}

/// What a [`KernelArg`] says its type is.
#[derive(Clone, Debug, PartialEq)]
enum ArgType {
    /// A value of this kernel type.
    Typed(Type),
    /// A pointer to this kernel type (kept apart so that passing a block allocates nothing).
    PointerTo(Type),
    /// A raw device address: accepted for any pointer parameter.
    AnyPointer,
}

/// The bytes a [`KernelArg`] passes.
#[derive(Clone, Debug)]
enum ArgData<'a> {
    Bytes(&'a [u8]),
    Pointer(CUdeviceptr),
}

/// One kernel argument: a device pointer or the bytes of a value, with the type they claim,
/// checked against the kernel's parameter types at launch when the kernel's signature is known.
#[derive(Clone, Debug)]
pub struct KernelArg<'a> {
    ty: ArgType,
    data: ArgData<'a>,
}

impl<'a> KernelArg<'a> {
    /// A value passed by value (`int`, `float3`, a `defkernel-struct` whose Rust type implements
    /// [`KernelValue`]).
    pub fn value<T: KernelValue>(value: &'a T) -> KernelArg<'a> {
        KernelArg {
            ty: ArgType::Typed(T::kernel_type()),
            data: ArgData::Bytes(bytemuck::bytes_of(value)),
        }
    }

    /// A memory block, passed as its device pointer (`T*`). The argument borrows the block, so
    /// the block cannot be dropped while the argument exists.
    pub fn block<T: KernelValue>(block: &'a MemoryBlock<T>) -> KernelArg<'a> {
        KernelArg {
            ty: ArgType::PointerTo(T::kernel_type()),
            data: ArgData::Pointer(block.device_ptr()),
        }
    }

    /// A device pointer of a known element type.
    ///
    /// # Safety
    ///
    /// `ptr` is an integer taken for a device address: the kernel will read and write
    /// `pointee` values through it, so it must point to device memory of the launch's context
    /// holding as many of them as the kernel touches, alive until the kernel has finished (a
    /// [`MemoryBlock`] is the safe way: [`KernelArg::block`]).
    pub unsafe fn typed_pointer(ptr: CUdeviceptr, pointee: Type) -> KernelArg<'a> {
        KernelArg {
            ty: ArgType::Typed(pointee.pointer_to()),
            data: ArgData::Pointer(ptr),
        }
    }

    /// A raw device address, accepted for any pointer parameter (the seed's raw device-ptr
    /// argument).
    ///
    /// # Safety
    ///
    /// As for [`KernelArg::typed_pointer`], for whatever type the kernel's parameter points to.
    pub unsafe fn device_ptr(ptr: CUdeviceptr) -> KernelArg<'a> {
        KernelArg {
            ty: ArgType::AnyPointer,
            data: ArgData::Pointer(ptr),
        }
    }

    /// A tensor map, for a `tensor-map` parameter (passed by value, `__grid_constant__`): what
    /// the kernel's `tma-*` built-ins read. The map names global memory by address, so it must
    /// outlive the kernels that use it as the memory it describes must; the map itself is
    /// copied into the launch.
    pub fn tensor_map(map: &'a TensorMap) -> KernelArg<'a> {
        KernelArg {
            ty: ArgType::Typed(Type::TensorMap),
            data: ArgData::Bytes(map.as_bytes()),
        }
    }

    /// Bytes claimed to be a value of `ty` (their length is checked against its layout at a
    /// checked launch).
    ///
    /// # Safety
    ///
    /// The bytes must be a valid value of `ty` as the kernel reads it: where `ty` is or holds a
    /// pointer, the bytes are an address made from an integer, with the contract of
    /// [`KernelArg::typed_pointer`]. Scalars and structures of scalars have no invalid bytes:
    /// for them [`KernelArg::value`] is the safe way.
    pub unsafe fn raw(ty: Type, bytes: &'a [u8]) -> KernelArg<'a> {
        KernelArg {
            ty: ArgType::Typed(ty),
            data: ArgData::Bytes(bytes),
        }
    }

    /// The type it claims, as the kernel language spells it (`float*`, or `pointer`).
    pub fn type_name(&self) -> String {
        match &self.ty {
            ArgType::Typed(t) => t.to_string(),
            ArgType::PointerTo(t) => format!("{t}*"),
            ArgType::AnyPointer => "a device pointer".to_owned(),
        }
    }

    fn size(&self) -> usize {
        match self.data {
            ArgData::Bytes(b) => b.len(),
            ArgData::Pointer(_) => size_of::<CUdeviceptr>(),
        }
    }

    /// The address the driver reads the argument from.
    fn address(&self) -> *mut c_void {
        match &self.data {
            ArgData::Bytes(b) => b.as_ptr() as *mut c_void,
            ArgData::Pointer(p) => p as *const CUdeviceptr as *mut c_void,
        }
    }
}

/// Checks `args` against a kernel's parameters: count, types, and byte sizes.
pub fn check_arguments(signature: &Signature, args: &[KernelArg]) -> Result<()> {
    let f = signature.function();
    if f.params.len() != args.len() {
        return Err(Error::ArgumentCount {
            kernel: f.name.to_string(),
            expected: f.params.len(),
            got: args.len(),
        });
    }
    for (i, (param, arg)) in f.params.iter().zip(args).enumerate() {
        let expected = &f[param.local].ty;
        let matches = match &arg.ty {
            ArgType::AnyPointer => expected.pointee().is_some(),
            ArgType::Typed(t) => t == expected,
            ArgType::PointerTo(t) => expected.pointee() == Some(t),
        };
        let size_ok = signature
            .module
            .layout(expected)
            .is_some_and(|(size, _)| size == arg.size());
        if !matches || !size_ok {
            let mut got = arg.type_name();
            if matches {
                got.push_str(&format!(" of {} bytes", arg.size()));
            }
            return Err(Error::ArgumentType {
                kernel: f.name.to_string(),
                index: i + 1,
                expected: expected.to_string(),
                got,
            });
        }
    }
    Ok(())
}

/// Launches `function` with `args` (asynchronously, as CUDA does), after checking them against
/// the kernel's signature. Only functions of a [`Program`] built from kernel text or IR carry
/// one; a kernel of raw CUDA C has none, and launching it here is an
/// [`Error::InvalidArgument`]: its arguments cannot be checked, so it is launched with the
/// `unsafe` [`launch_unchecked`].
///
/// [`Program`]: crate::Program
pub fn launch(function: &Function, config: &LaunchConfig, args: &[KernelArg]) -> Result<()> {
    let Some(signature) = function.signature() else {
        return Err(Error::InvalidArgument(
            "the kernel has no signature to check its arguments against (raw CUDA C): \
             launch it with the unsafe launch_unchecked"
                .into(),
        ));
    };
    check_arguments(signature, args)?;
    // SAFETY: the arguments match the kernel's signature (checked above), and the signature
    // is the kernel's: only a Program attaches one, from the IR its module was printed from.
    unsafe { launch_unchecked(function, config, args) }
}

/// [`launch`] without checking `args` against the kernel's signature: for kernels of raw CUDA C,
/// which have none, and for callers that have checked them already (the `chorus` facade checks
/// every launch against the same kernel parameters). The launch configuration is still
/// validated.
///
/// # Safety
///
/// `args` must match the kernel's parameters in number, order, type and size, as
/// [`check_arguments`] would verify: the driver copies each argument's bytes into the kernel's
/// parameter buffer by the parameter's size, so a missing or smaller argument makes it read
/// past the argument, and a wrong pointer makes the kernel read or write memory it must not.
pub unsafe fn launch_unchecked(
    function: &Function,
    config: &LaunchConfig,
    args: &[KernelArg],
) -> Result<()> {
    config.validate()?;
    // The driver reads each argument through a pointer to it; 16 cover nearly every kernel
    // without a heap allocation.
    let mut inline = [std::ptr::null_mut::<c_void>(); 16];
    let mut heap = Vec::new();
    let params: &mut [*mut c_void] = if args.len() <= inline.len() {
        for (slot, arg) in inline.iter_mut().zip(args) {
            *slot = arg.address();
        }
        &mut inline[..args.len()]
    } else {
        heap.extend(args.iter().map(KernelArg::address));
        &mut heap
    };
    let stream = config.stream.map_or_else(current_stream, Stream::raw);
    let (g, b) = (config.grid, config.block);
    match config.cluster {
        None => cu!(cuLaunchKernel(
            function.raw(),
            g.x,
            g.y,
            g.z,
            b.x,
            b.y,
            b.z,
            config.shared_mem,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut()
        )),
        Some(cluster) => with_cluster_config(config, cluster, stream, |launch| {
            cu!(cuLaunchKernelEx(
                launch,
                function.raw(),
                params.as_mut_ptr(),
                std::ptr::null_mut()
            ))
        }),
    }
}

// The occupancy of cluster launches, here beside the launch whose driver form it shares.
impl Function {
    /// Clusters of `config`'s shape (its `cluster`, block and dynamic shared memory; the grid
    /// must be a whole number of clusters) that the device runs at once
    /// (`cuOccupancyMaxActiveClusters`): where a persistent kernel in clusters sizes its grid.
    /// A kernel above 48 KiB of dynamic shared memory must have been allowed it first
    /// ([`Function::set_max_dynamic_shared_memory`]).
    pub fn max_active_clusters(&self, config: &LaunchConfig<'_>) -> Result<u32> {
        config.validate()?;
        let cluster = config.cluster.ok_or_else(|| {
            Error::InvalidArgument("max_active_clusters needs a launch with a cluster".into())
        })?;
        let mut clusters = 0;
        with_cluster_config(config, cluster, std::ptr::null_mut(), |launch| {
            cu!(cuOccupancyMaxActiveClusters(
                &mut clusters,
                self.raw(),
                launch
            ))
        })?;
        Ok(clusters.max(0) as u32)
    }
}

/// Calls `f` with the driver's form of `config` in clusters of `cluster` blocks on `stream`
/// (`cuLaunchKernelEx` and `cuOccupancyMaxActiveClusters` take it; the cluster attribute it
/// points to lives for the call).
fn with_cluster_config<R>(
    config: &LaunchConfig<'_>,
    cluster: Dim3,
    stream: sys::CUstream,
    f: impl FnOnce(&sys::CUlaunchConfig) -> R,
) -> R {
    let (g, b) = (config.grid, config.block);
    let mut attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value: sys::CUlaunchAttributeValue {
            clusterDim: sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
                x: cluster.x,
                y: cluster.y,
                z: cluster.z,
            },
        },
    };
    let launch = sys::CUlaunchConfig {
        gridDimX: g.x,
        gridDimY: g.y,
        gridDimZ: g.z,
        blockDimX: b.x,
        blockDimY: b.y,
        blockDimZ: b.z,
        sharedMemBytes: config.shared_mem,
        hStream: stream,
        attrs: &mut attr,
        numAttrs: 1,
    };
    f(&launch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_validation() {
        assert!(LaunchConfig::grid(4).block(256).validate().is_ok());
        let e = LaunchConfig::grid(0)
            .block(256)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("grid size (0, 1, 1)"), "{e}");
        assert!(LaunchConfig::grid(4).cluster(2).validate().is_ok());
        let e = LaunchConfig::grid(3)
            .cluster(2)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("must divide"), "{e}");
        assert_eq!(Dim3::from((2, 3)), Dim3::new(2, 3, 1));
        assert_eq!(Dim3::from([2, 3, 4]).volume(), 24);
    }

    #[test]
    fn arguments_report_their_types() {
        let n = 3i32;
        assert_eq!(KernelArg::value(&n).type_name(), "int");
        // SAFETY: never launched; only the claimed types are read.
        let (typed, any) = unsafe {
            (
                KernelArg::typed_pointer(0, Type::FLOAT),
                KernelArg::device_ptr(0),
            )
        };
        assert_eq!(typed.type_name(), "float*");
        assert_eq!(any.type_name(), "a device pointer");
        assert_eq!(KernelArg::value(&1.5f64).size(), 8);
    }
}
