struct pair {
  int x;
  int y;
};

extern "C" __device__ int counter = 0;
extern "C" __constant__ float scale = 2.5f;
extern "C" __device__ __constant__ float3 origin = { 1.0f, 2.0f, 3.0f };

extern "C" __device__ pair swap_pair(pair p);
extern "C" __global__ void swap_all(pair* ps, float* out, int n);

__device__ pair swap_pair(pair p)
{
  return pair{ p.y, p.x };
}

__global__ void swap_all(pair* ps, float* out, int n)
{
  {
    int i = threadIdx.x;
    if (i < n) {
      ps[i] = swap_pair(ps[i]);
      out[i] = (scale * origin.x);
      atomicAdd(&(counter), 1);
    }
  }
}
