extern "C" __device__ float square(float x);
extern "C" __device__ void store_square(float* out, int i, float x);
extern "C" __global__ void __launch_bounds__(256) squares(float* out, float* __restrict__ xs, int n);

__device__ float square(float x)
{
  return (x * x);
}

__device__ void store_square(float* out, int i, float x)
{
  out[i] = square(x);
}

__global__ void __launch_bounds__(256) squares(float* out, float* __restrict__ xs, int n)
{
  {
    int i = ((blockIdx.x * blockDim.x) + threadIdx.x);
    if (i < n) {
      store_square(out, i, xs[i]);
    }
  }
}
