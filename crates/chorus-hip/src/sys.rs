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

/// Bytes reserved for a `hipDeviceProp_t` (792 in ROCm 5's layout, 1472 in ROCm 6's R0600):
/// more than either, zeroed before the call.
pub const DEVICE_PROP_BYTES: usize = 8192;
/// The offset of `gcnArchName` in ROCm 5's `hipDeviceProp_t` (R0000), which
/// `hipGetDeviceProperties` fills (from Debian's ROCm 5.2 headers: `offsetof` is 396).
pub const GCN_ARCH_NAME_OFFSET_R0000: usize = 396;

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
