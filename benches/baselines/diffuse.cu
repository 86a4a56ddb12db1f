// Hand-written baselines: one step of the 2-D heat equation (5-point stencil, Neumann edges: an
// edge neighbour takes the centre value), as cl-cuda's diffuse0 (global memory) and diffuse1
// (a 16×16 shared tile with a one-cell halo). fn = (c0·(fe + fw) + c1·(fn + fs)) + c2·fc.
// Chorus's counterparts: examples/kernels/diffuse0.lisp, diffuse1.lisp.
extern "C" __global__ void __launch_bounds__(256)
diffuse0(const float* __restrict__ f, float* __restrict__ fn, int nx, int ny, float c0, float c1, float c2)
{
    int jx = blockDim.x * blockIdx.x + threadIdx.x;
    int jy = blockDim.y * blockIdx.y + threadIdx.y;
    int j = nx * jy + jx;
    float fcc = f[j];
    float fcw = jx == 0 ? fcc : f[j - 1];
    float fce = jx == nx - 1 ? fcc : f[j + 1];
    float fcs = jy == 0 ? fcc : f[j - nx];
    float fcn = jy == ny - 1 ? fcc : f[j + nx];
    fn[j] = c0 * (fce + fcw) + c1 * (fcn + fcs) + c2 * fcc;
}

extern "C" __global__ void __launch_bounds__(256)
diffuse1(const float* __restrict__ f, float* __restrict__ fn, int nx, int ny, float c0, float c1, float c2)
{
    __shared__ float fs[18][18];
    int jx = threadIdx.x + 1, jy = threadIdx.y + 1;
    int j = nx * (blockDim.y * blockIdx.y + threadIdx.y) + blockDim.x * blockIdx.x + threadIdx.x;
    float fcc = f[j];
    fs[jy][jx] = fcc;
    if (threadIdx.x == 0) fs[jy][0] = blockIdx.x == 0 ? fcc : f[j - 1];
    if (threadIdx.x == blockDim.x - 1) fs[jy][jx + 1] = blockIdx.x == gridDim.x - 1 ? fcc : f[j + 1];
    if (threadIdx.y == 0) fs[0][jx] = blockIdx.y == 0 ? fcc : f[j - nx];
    if (threadIdx.y == blockDim.y - 1) fs[jy + 1][jx] = blockIdx.y == gridDim.y - 1 ? fcc : f[j + nx];
    __syncthreads();
    fn[j] = c0 * (fs[jy][jx + 1] + fs[jy][jx - 1]) + c1 * (fs[jy + 1][jx] + fs[jy - 1][jx]) + c2 * fs[jy][jx];
}
