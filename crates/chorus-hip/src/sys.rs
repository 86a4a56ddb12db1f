//! Hand-written declarations of the few HIP runtime and hipRTC functions this crate calls (HIP's
//! C API, `hip_runtime_api.h` and `hiprtc.h`, stable from ROCm 5 to 7), resolved from the
//! libraries [`crate::loader`] loads.

#![allow(non_camel_case_types)]

use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void};

/// `hipError_t`.
pub type hipError_t = c_int;
/// `hiprtcResult`.
pub type hiprtcResult = c_int;
/// `hipStream_t`.
pub type hipStream_t = *mut c_void;
/// `hipEvent_t`.
pub type hipEvent_t = *mut c_void;
/// `hipModule_t`.
pub type hipModule_t = *mut c_void;
/// `hipFunction_t`.
pub type hipFunction_t = *mut c_void;
/// `hiprtcProgram`.
pub type hiprtcProgram = *mut c_void;
/// `hipDeviceptr_t`.
pub type hipDeviceptr_t = *mut c_void;

/// `hipSuccess`.
pub const HIP_SUCCESS: hipError_t = 0;
/// `hipErrorNoDevice`.
pub const HIP_ERROR_NO_DEVICE: hipError_t = 100;
/// `HIPRTC_SUCCESS`.
pub const HIPRTC_SUCCESS: hiprtcResult = 0;
/// `hipMemcpyHostToDevice`.
pub const MEMCPY_HOST_TO_DEVICE: c_int = 1;
/// `hipMemcpyDeviceToHost`.
pub const MEMCPY_DEVICE_TO_HOST: c_int = 2;
/// `hipMemcpyDeviceToDevice`.
pub const MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
/// `hipDeviceAttributeMaxThreadsPerBlock`.
pub const ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 56;
/// `hipDeviceAttributeMaxSharedMemoryPerBlock`.
pub const ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: c_int = 74;
/// `hipDeviceAttributeMultiprocessorCount`.
pub const ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 63;
/// `hipDeviceAttributeWarpSize`.
pub const ATTRIBUTE_WARP_SIZE: c_int = 87;

/// Bytes reserved for a `hipDeviceProp_t` (792 in ROCm 5's layout, [`DEVICE_PROP_BYTES_R0600`]
/// in ROCm 6's): more than either, zeroed before the call.
pub const DEVICE_PROP_BYTES: usize = 8192;
/// The offset of `gcnArchName` in ROCm 5's `hipDeviceProp_t` (R0000), which
/// `hipGetDeviceProperties` fills before ROCm 6 (from Debian's ROCm 5.2 headers: `offsetof` is
/// 396; [`layouts`] recomputes it).
pub const GCN_ARCH_NAME_OFFSET_R0000: usize = 396;
/// The offset of `warpSize` in ROCm 5's `hipDeviceProp_t`.
pub const WARP_SIZE_OFFSET_R0000: usize = 276;
/// The offset of `gcnArchName` in ROCm 6's `hipDeviceProp_tR0600`, which
/// `hipGetDevicePropertiesR0600` fills (ROCm 6.0 and newer; [`layouts`] recomputes it).
pub const GCN_ARCH_NAME_OFFSET_R0600: usize = 1160;
/// The offset of `warpSize` in `hipDeviceProp_tR0600`.
pub const WARP_SIZE_OFFSET_R0600: usize = 308;
/// `sizeof(hipDeviceProp_tR0600)`.
pub const DEVICE_PROP_BYTES_R0600: usize = 1472;

/// The two layouts of `hipDeviceProp_t` as field lists (name, size, alignment), in declaration
/// order, from HIP's `hip_runtime_api.h`: ROCm 5's (R0000, up to `gcnArchName`) and ROCm 6's
/// `hipDeviceProp_tR0600` (whole). The offsets above are checked against them by the tests.
pub mod layouts {
    /// A field: name, size in bytes, alignment.
    pub type Field = (&'static str, usize, usize);

    const INT: (usize, usize) = (4, 4);
    const SIZE_T: (usize, usize) = (8, 8);

    /// `int` fields named `names`.
    fn ints(names: &[&'static str]) -> Vec<Field> {
        names.iter().map(|n| (*n, INT.0, INT.1)).collect()
    }

    /// ROCm 5's `hipDeviceProp_t` up to and including `gcnArchName`.
    pub fn r0000() -> Vec<Field> {
        let mut f: Vec<Field> = vec![
            ("name", 256, 1),
            ("totalGlobalMem", SIZE_T.0, SIZE_T.1),
            ("sharedMemPerBlock", SIZE_T.0, SIZE_T.1),
        ];
        f.extend(ints(&["regsPerBlock", "warpSize", "maxThreadsPerBlock"]));
        f.push(("maxThreadsDim", 12, 4));
        f.push(("maxGridSize", 12, 4));
        f.extend(ints(&["clockRate", "memoryClockRate", "memoryBusWidth"]));
        f.push(("totalConstMem", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&[
            "major",
            "minor",
            "multiProcessorCount",
            "l2CacheSize",
            "maxThreadsPerMultiProcessor",
            "computeMode",
            "clockInstructionRate",
            // hipDeviceArch_t: 17 one-bit fields in one `unsigned`.
            "arch",
            "concurrentKernels",
            "pciDomainID",
            "pciBusID",
            "pciDeviceID",
        ]));
        f.push(("maxSharedMemoryPerMultiProcessor", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&["isMultiGpuBoard", "canMapHostMemory", "gcnArch"]));
        f.push(("gcnArchName", 256, 1));
        f
    }

    /// ROCm 6's `hipDeviceProp_tR0600`, every field.
    pub fn r0600() -> Vec<Field> {
        let mut f: Vec<Field> = vec![("name", 256, 1), ("uuid", 16, 1), ("luid", 8, 1)];
        f.extend(ints(&["luidDeviceNodeMask"]));
        f.push(("totalGlobalMem", SIZE_T.0, SIZE_T.1));
        f.push(("sharedMemPerBlock", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&["regsPerBlock", "warpSize"]));
        f.push(("memPitch", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&["maxThreadsPerBlock"]));
        f.push(("maxThreadsDim", 12, 4));
        f.push(("maxGridSize", 12, 4));
        f.extend(ints(&["clockRate"]));
        f.push(("totalConstMem", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&["major", "minor"]));
        f.push(("textureAlignment", SIZE_T.0, SIZE_T.1));
        f.push(("texturePitchAlignment", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&[
            "deviceOverlap",
            "multiProcessorCount",
            "kernelExecTimeoutEnabled",
            "integrated",
            "canMapHostMemory",
            "computeMode",
            "maxTexture1D",
            "maxTexture1DMipmap",
            "maxTexture1DLinear",
        ]));
        // The texture and surface limits: int arrays of these lengths, then one size_t.
        for (name, n) in [
            ("maxTexture2D", 2),
            ("maxTexture2DMipmap", 2),
            ("maxTexture2DLinear", 3),
            ("maxTexture2DGather", 2),
            ("maxTexture3D", 3),
            ("maxTexture3DAlt", 3),
            ("maxTextureCubemap", 1),
            ("maxTexture1DLayered", 2),
            ("maxTexture2DLayered", 3),
            ("maxTextureCubemapLayered", 2),
            ("maxSurface1D", 1),
            ("maxSurface2D", 2),
            ("maxSurface3D", 3),
            ("maxSurface1DLayered", 2),
            ("maxSurface2DLayered", 3),
            ("maxSurfaceCubemap", 1),
            ("maxSurfaceCubemapLayered", 2),
        ] {
            f.push((name, 4 * n, 4));
        }
        f.push(("surfaceAlignment", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&[
            "concurrentKernels",
            "ECCEnabled",
            "pciBusID",
            "pciDeviceID",
            "pciDomainID",
            "tccDriver",
            "asyncEngineCount",
            "unifiedAddressing",
            "memoryClockRate",
            "memoryBusWidth",
            "l2CacheSize",
            "persistingL2CacheMaxSize",
            "maxThreadsPerMultiProcessor",
            "streamPrioritiesSupported",
            "globalL1CacheSupported",
            "localL1CacheSupported",
        ]));
        f.push(("sharedMemPerMultiprocessor", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&[
            "regsPerMultiprocessor",
            "managedMemory",
            "isMultiGpuBoard",
            "multiGpuBoardGroupID",
            "hostNativeAtomicSupported",
            "singleToDoublePrecisionPerfRatio",
            "pageableMemoryAccess",
            "concurrentManagedAccess",
            "computePreemptionSupported",
            "canUseHostPointerForRegisteredMem",
            "cooperativeLaunch",
            "cooperativeMultiDeviceLaunch",
        ]));
        f.push(("sharedMemPerBlockOptin", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&[
            "pageableMemoryAccessUsesHostPageTables",
            "directManagedMemAccessFromHost",
            "maxBlocksPerMultiProcessor",
            "accessPolicyMaxWindowSize",
        ]));
        f.push(("reservedSharedMemPerBlock", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&[
            "hostRegisterSupported",
            "sparseHipArraySupported",
            "hostRegisterReadOnlySupported",
            "timelineSemaphoreInteropSupported",
            "memoryPoolsSupported",
            "gpuDirectRDMASupported",
            "gpuDirectRDMAFlushWritesOptions",
            "gpuDirectRDMAWritesOrdering",
            "memoryPoolSupportedHandleTypes",
            "deferredMappingHipArraySupported",
            "ipcEventSupported",
            "clusterLaunch",
            "unifiedFunctionPointers",
        ]));
        f.push(("reserved", 4 * 63, 4));
        f.push(("hipReserved", 4 * 32, 4));
        f.push(("gcnArchName", 256, 1));
        f.push(("maxSharedMemoryPerMultiProcessor", SIZE_T.0, SIZE_T.1));
        f.extend(ints(&["clockInstructionRate", "arch"]));
        f.push(("hdpMemFlushCntl", 8, 8));
        f.push(("hdpRegFlushCntl", 8, 8));
        f.extend(ints(&[
            "cooperativeMultiDeviceUnmatchedFunc",
            "cooperativeMultiDeviceUnmatchedGridDim",
            "cooperativeMultiDeviceUnmatchedBlockDim",
            "cooperativeMultiDeviceUnmatchedSharedMem",
            "isLargeBar",
            "asicRevision",
        ]));
        f
    }

    /// C's layout of `fields`: each field's offset, and the structure's size.
    pub fn offsets(fields: &[Field]) -> (Vec<(&'static str, usize)>, usize) {
        let (mut at, mut align) = (0usize, 1usize);
        let mut out = Vec::with_capacity(fields.len());
        for &(name, size, a) in fields {
            at = at.next_multiple_of(a);
            out.push((name, at));
            at += size;
            align = align.max(a);
        }
        (out, at.next_multiple_of(align))
    }

    /// The offset of field `name` in `fields`.
    pub fn offset_of(fields: &[Field], name: &str) -> Option<usize> {
        offsets(fields)
            .0
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, o)| o)
    }
}

macro_rules! api {
    ($(#[$doc:meta])* $api:ident { $($name:ident : fn($($arg:ty),*) -> $ret:ty,)* }) => {
        $(#[$doc])*
        #[allow(non_snake_case)]
        pub struct $api {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: unsafe extern "C" fn($($arg),*) -> $ret,
            )*
        }

        impl $api {
            /// Resolves every function from `lib`; an error names the first one missing.
            ///
            /// # Safety
            ///
            /// `lib` must be the library whose C API the declarations above describe.
            pub unsafe fn resolve(lib: &Library) -> Result<$api, String> {
                Ok($api {
                    $(
                        // SAFETY: the caller vouches for the library; the type is the C
                        // declaration's.
                        $name: unsafe {
                            *lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                                concat!(stringify!($name), "\0").as_bytes(),
                            )
                            .map_err(|e| format!("{}: {e}", stringify!($name)))?
                        },
                    )*
                })
            }
        }
    };
}

api! {
    /// The HIP runtime functions this crate calls.
    HipApi {
        hipInit: fn(c_uint) -> hipError_t,
        hipGetErrorString: fn(hipError_t) -> *const c_char,
        hipRuntimeGetVersion: fn(*mut c_int) -> hipError_t,
        hipGetDeviceCount: fn(*mut c_int) -> hipError_t,
        hipSetDevice: fn(c_int) -> hipError_t,
        hipDeviceGetName: fn(*mut c_char, c_int, c_int) -> hipError_t,
        hipDeviceTotalMem: fn(*mut usize, c_int) -> hipError_t,
        hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int) -> hipError_t,
        hipGetDeviceProperties: fn(*mut c_void, c_int) -> hipError_t,
        hipDeviceSynchronize: fn() -> hipError_t,
        hipMalloc: fn(*mut *mut c_void, usize) -> hipError_t,
        hipFree: fn(*mut c_void) -> hipError_t,
        hipMemcpy: fn(*mut c_void, *const c_void, usize, c_int) -> hipError_t,
        hipMemcpyAsync: fn(*mut c_void, *const c_void, usize, c_int, hipStream_t) -> hipError_t,
        hipMemset: fn(*mut c_void, c_int, usize) -> hipError_t,
        hipStreamCreate: fn(*mut hipStream_t) -> hipError_t,
        hipStreamDestroy: fn(hipStream_t) -> hipError_t,
        hipStreamSynchronize: fn(hipStream_t) -> hipError_t,
        hipStreamWaitEvent: fn(hipStream_t, hipEvent_t, c_uint) -> hipError_t,
        hipEventCreate: fn(*mut hipEvent_t) -> hipError_t,
        hipEventDestroy: fn(hipEvent_t) -> hipError_t,
        hipEventRecord: fn(hipEvent_t, hipStream_t) -> hipError_t,
        hipEventSynchronize: fn(hipEvent_t) -> hipError_t,
        hipEventElapsedTime: fn(*mut f32, hipEvent_t, hipEvent_t) -> hipError_t,
        hipModuleLoadData: fn(*mut hipModule_t, *const c_void) -> hipError_t,
        hipModuleUnload: fn(hipModule_t) -> hipError_t,
        hipModuleGetFunction: fn(*mut hipFunction_t, hipModule_t, *const c_char) -> hipError_t,
        hipModuleGetGlobal: fn(*mut hipDeviceptr_t, *mut usize, hipModule_t, *const c_char) -> hipError_t,
        hipModuleLaunchKernel: fn(
            hipFunction_t, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
            hipStream_t, *mut *mut c_void, *mut *mut c_void
        ) -> hipError_t,
    }
}

api! {
    /// The hipRTC functions this crate calls.
    HiprtcApi {
        hiprtcGetErrorString: fn(hiprtcResult) -> *const c_char,
        hiprtcVersion: fn(*mut c_int, *mut c_int) -> hiprtcResult,
        hiprtcCreateProgram: fn(
            *mut hiprtcProgram, *const c_char, *const c_char, c_int,
            *const *const c_char, *const *const c_char
        ) -> hiprtcResult,
        hiprtcCompileProgram: fn(hiprtcProgram, c_int, *const *const c_char) -> hiprtcResult,
        hiprtcGetProgramLogSize: fn(hiprtcProgram, *mut usize) -> hiprtcResult,
        hiprtcGetProgramLog: fn(hiprtcProgram, *mut c_char) -> hiprtcResult,
        hiprtcGetCodeSize: fn(hiprtcProgram, *mut usize) -> hiprtcResult,
        hiprtcGetCode: fn(hiprtcProgram, *mut c_char) -> hiprtcResult,
        hiprtcDestroyProgram: fn(*mut hiprtcProgram) -> hiprtcResult,
    }
}

#[cfg(test)]
mod tests {
    use super::layouts::{offset_of, offsets, r0000, r0600};
    use super::*;

    #[test]
    fn rocm5_offsets_follow_its_layout() {
        let f = r0000();
        assert_eq!(
            offset_of(&f, "gcnArchName"),
            Some(GCN_ARCH_NAME_OFFSET_R0000)
        );
        assert_eq!(offset_of(&f, "totalGlobalMem"), Some(256));
        assert_eq!(offset_of(&f, "warpSize"), Some(WARP_SIZE_OFFSET_R0000));
    }

    #[test]
    fn rocm6_offsets_follow_the_r0600_layout() {
        let f = r0600();
        assert_eq!(
            offset_of(&f, "gcnArchName"),
            Some(GCN_ARCH_NAME_OFFSET_R0600)
        );
        assert_eq!(offset_of(&f, "warpSize"), Some(WARP_SIZE_OFFSET_R0600));
        assert_eq!(offset_of(&f, "totalGlobalMem"), Some(288));
        assert_eq!(offset_of(&f, "multiProcessorCount"), Some(388));
        assert_eq!(offsets(&f).1, DEVICE_PROP_BYTES_R0600);
        const { assert!(DEVICE_PROP_BYTES > DEVICE_PROP_BYTES_R0600) };
    }
}
