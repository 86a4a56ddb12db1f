// HIP on CUDA: the HIP names Chorus's HIP dialect (chorus-lang's cfamily/hip.rs) prints, mapped
// onto CUDA, so that nvcc and NVRTC compile the same HIP source that hipcc and hipRTC compile
// for AMD GPUs (HIP's own design: on NVIDIA, HIP is a thin layer over CUDA). It covers exactly
// that vocabulary, not HIP: everything else the dialect prints is spelled the same in CUDA
// (`__global__`, `__shared__`, `threadIdx`, `warpSize`, `atomicAdd`, the math library, `__half`).
//
// HIP's warp operations act on the wave's active lanes, so the CUDA forms take
// `__activemask()` as their mask. The second value of HIP's `__launch_bounds__` is a minimum of
// waves per SIMD, not CUDA's minimum of blocks per multiprocessor, so only the first is kept.
// Wavefront-scope fences and the wave barrier become a block fence and `__syncwarp`.
#ifndef CHORUS_HIP_ON_CUDA_RUNTIME_H
#define CHORUS_HIP_ON_CUDA_RUNTIME_H

// CUDA's own headers first: their deprecated mask-free `__shfl`, `__ballot`, `__all` and `__any`
// must be declared before the macros below rename those names.
#include <cuda_fp16.h>

#define __HIP_PLATFORM_NVIDIA__ 1

template <typename T>
static __device__ __forceinline__ T chorus_hip_shfl(T v, int lane, int width = warpSize)
{
  return __shfl_sync(__activemask(), v, lane, width);
}
template <typename T>
static __device__ __forceinline__ T chorus_hip_shfl_up(T v, unsigned int delta, int width = warpSize)
{
  return __shfl_up_sync(__activemask(), v, delta, width);
}
template <typename T>
static __device__ __forceinline__ T chorus_hip_shfl_down(T v, unsigned int delta, int width = warpSize)
{
  return __shfl_down_sync(__activemask(), v, delta, width);
}
template <typename T>
static __device__ __forceinline__ T chorus_hip_shfl_xor(T v, int lane_mask, int width = warpSize)
{
  return __shfl_xor_sync(__activemask(), v, lane_mask, width);
}
// HIP's ballot is 64 bits wide on every target.
static __device__ __forceinline__ unsigned long long chorus_hip_ballot(int predicate)
{
  return __ballot_sync(__activemask(), predicate);
}
static __device__ __forceinline__ int chorus_hip_all(int predicate)
{
  return __all_sync(__activemask(), predicate);
}
static __device__ __forceinline__ int chorus_hip_any(int predicate)
{
  return __any_sync(__activemask(), predicate);
}

#define __shfl(...) chorus_hip_shfl(__VA_ARGS__)
#define __shfl_up(...) chorus_hip_shfl_up(__VA_ARGS__)
#define __shfl_down(...) chorus_hip_shfl_down(__VA_ARGS__)
#define __shfl_xor(...) chorus_hip_shfl_xor(__VA_ARGS__)
#define __ballot(p) chorus_hip_ballot(p)
#define __all(p) chorus_hip_all(p)
#define __any(p) chorus_hip_any(p)
#define __builtin_amdgcn_fence(order, scope) __threadfence_block()
// clang's HIP atomics, relaxed at device scope, are CUDA's atomicMin and atomicMax.
#define __hip_atomic_fetch_min(pointer, value, order, scope) atomicMin(pointer, value)
#define __hip_atomic_fetch_max(pointer, value, order, scope) atomicMax(pointer, value)
#define __builtin_amdgcn_wave_barrier() __syncwarp(__activemask())

#undef __launch_bounds__
#define CHORUS_HIP_FIRST(first, ...) first
#define __launch_bounds__(...) __annotate__(launch_bounds(CHORUS_HIP_FIRST(__VA_ARGS__, 0)))

#endif
