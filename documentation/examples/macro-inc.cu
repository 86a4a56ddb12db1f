extern "C" __global__ void count_up(int* a, int n);

__global__ void count_up(int* a, int n)
{
  {
    int i = ((blockIdx.x * blockDim.x) + threadIdx.x);
    if (i < n) {
      a[i] = (a[i] + 1);
      a[i] = (a[i] + 10);
    }
  }
}
