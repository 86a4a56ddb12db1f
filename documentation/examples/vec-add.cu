extern "C" __global__ void vec_add_kernel(float* a, float* b, float* c, int n);

__global__ void vec_add_kernel(float* a, float* b, float* c, int n)
{
  {
    int i = ((blockDim.x * blockIdx.x) + threadIdx.x);
    if (i < n) {
      c[i] = (a[i] + b[i]);
    }
  }
}
