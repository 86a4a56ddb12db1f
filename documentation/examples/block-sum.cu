static __device__ __forceinline__ int chorus_lane_id()
{
  return (int)((threadIdx.x + (blockDim.x * (threadIdx.y + (blockDim.y * threadIdx.z)))) & 31u);
}

extern "C" __global__ void block_sum(float* xs, float* partial, int n);

__global__ void block_sum(float* xs, float* partial, int n)
{
  {
    __shared__ __align__(16) float warp_sums[32];
    {
      int i = ((blockIdx.x * blockDim.x) + threadIdx.x);
      {
        float v = ((i < n) ? xs[i] : 0.0f);
        for (int offset = 16; !(offset == 0); offset = (offset >> 1)) {
          v = (v + __shfl_down_sync((unsigned int)(-1), v, offset));
        }
        if (chorus_lane_id() == 0) {
          warp_sums[((int)(threadIdx.x) / 32)] = v;
        }
        __syncthreads();
        if ((int)(threadIdx.x) == 0) {
          {
            float total = 0.0f;
            for (int w = 0; !(w >= ((int)(blockDim.x) / 32)); w = (w + 1)) {
              total = (total + warp_sums[w]);
            }
            partial[blockIdx.x] = total;
          }
        }
      }
    }
  }
}
