// Hand-written baseline: out = inᵀ for a height×width row-major matrix, through a 32×33 shared
// tile (one column of padding so the column reads hit 32 different banks). Block 32×8, each thread
// moves 4 elements. Chorus's counterpart: examples/kernels/transpose.lisp.
#define TILE 32
#define ROWS 8
extern "C" __global__ void __launch_bounds__(256)
transpose(const float* __restrict__ in, float* __restrict__ out, int width, int height)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}
