extern "C" __global__ void scale_float(float* xs, float k, int n);
extern "C" __global__ void scale_double(double* xs, double k, int n);
extern "C" __global__ void scale_int(int* xs, int k, int n);
extern "C" __global__ void sum4(float* xs, float* out);

__global__ void scale_float(float* xs, float k, int n)
{
  {
    int i = ((blockIdx.x * blockDim.x) + threadIdx.x);
    if (i < n) {
      xs[i] = (k * xs[i]);
    }
  }
}

__global__ void scale_double(double* xs, double k, int n)
{
  {
    int i = ((blockIdx.x * blockDim.x) + threadIdx.x);
    if (i < n) {
      xs[i] = (k * xs[i]);
    }
  }
}

__global__ void scale_int(int* xs, int k, int n)
{
  {
    int i = ((blockIdx.x * blockDim.x) + threadIdx.x);
    if (i < n) {
      xs[i] = (k * xs[i]);
    }
  }
}

__global__ void sum4(float* xs, float* out)
{
  out[0] = (((xs[0] + xs[1]) + xs[2]) + xs[3]);
}
