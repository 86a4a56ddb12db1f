#include <cuda_fp16.h>
#include <cuda_fp8.h>

static __device__ __forceinline__ float4 chorus_scalar_mul_float4(float s, float4 b)
{
  return make_float4((s * b.x), (s * b.y), (s * b.z), (s * b.w));
}

static __device__ __forceinline__ float4 chorus_float4_div_scalar(float4 a, float s)
{
  return make_float4((a.x / s), (a.y / s), (a.z / s), (a.w / s));
}

static __device__ __forceinline__ float4 chorus_float4_neg(float4 a)
{
  return make_float4(-(a.x), -(a.y), -(a.z), -(a.w));
}

static __device__ __forceinline__ float chorus_float4_dot(float4 a, float4 b)
{
  return ((((a.x * b.x) + (a.y * b.y)) + (a.z * b.z)) + (a.w * b.w));
}

static __device__ __forceinline__ int chorus_lane_id()
{
  return (int)((threadIdx.x + (blockDim.x * (threadIdx.y + (blockDim.y * threadIdx.z)))) & 31u);
}

extern "C" __global__ void casts(float* a, __half* h, unsigned int* u, float4* v, double* d);

__global__ void casts(float* a, __half* h, unsigned int* u, float4* v, double* d)
{
  {
    float x = a[0];
    int i = 3;
    float4 q = chorus_scalar_mul_float4(2.0f, v[0]);
    float4 w = chorus_float4_div_scalar(v[1], 2.0f);
    a[1] = (x + 1.0f);
    a[2] = (float)(i);
    a[3] = 1e-10f;
    d[0] = (d[1] + x);
    h[0] = __float2half(x);
    h[1] = __float2half(2.0f);
    u[0] = (unsigned int)(-1);
    u[1] = __shfl_sync((unsigned int)(-1), u[2], 0);
    a[4] = chorus_float4_dot(q, w);
    a[5] = __half2float(h[2]);
    a[6] = (((x < 1.0f) && (i > 2)) ? sqrtf(x) : powf(x, 2.0f));
    v[2] = chorus_float4_neg(q);
    a[7] = (float)(__nv_fp8_e4m3(x));
    a[8] = __sinf(x);
    a[9] = (int)(floorf(x));
    a[10] = fmodf(x, 2.0f);
    a[11] = (float)(chorus_lane_id());
    a[12] = (float)(warpSize);
  }
}
