// Hand-written baseline: inclusive prefix sum of ints, reduce-then-scan in three launches.
// Each of `blocks` blocks owns a contiguous chunk of tiles_per_block tiles of 1024 ints (256 threads
// × one int4). scan_reduce sums each chunk; scan_sums turns the chunk sums into exclusive offsets
// (one block of 1024 threads); scan_apply rescans each chunk tile by tile with warp shuffles,
// carrying the running offset. Chorus's counterpart: examples/kernels/scan.lisp.
#define FULL 0xffffffffu

extern "C" __global__ void __launch_bounds__(256)
scan_reduce(const int4* __restrict__ x, int* __restrict__ sums, int tiles_per_block)
{
    __shared__ int ws[8];
    int base = blockIdx.x * tiles_per_block * 256 + threadIdx.x;
    int s = 0;
    for (int t = 0; t < tiles_per_block; t++) {
        int4 v = x[base + t * 256];
        s += (v.x + v.y) + (v.z + v.w);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(FULL, s, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) ws[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < 8 ? ws[lane] : 0;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(FULL, s, o);
        if (lane == 0) sums[blockIdx.x] = s;
    }
}

extern "C" __global__ void __launch_bounds__(1024)
scan_sums(int* __restrict__ sums, int count)
{
    __shared__ int ws[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int v = threadIdx.x < count ? sums[threadIdx.x] : 0;
    int s = v;
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(FULL, s, o);
        if (lane >= o) s += u;
    }
    if (lane == 31) ws[warp] = s;
    __syncthreads();
    if (warp == 0) {
        int w = ws[lane];
        for (int o = 1; o < 32; o <<= 1) {
            int u = __shfl_up_sync(FULL, w, o);
            if (lane >= o) w += u;
        }
        ws[lane] = w;
    }
    __syncthreads();
    if (threadIdx.x < count) sums[threadIdx.x] = (warp > 0 ? ws[warp - 1] : 0) + s - v;
}

extern "C" __global__ void __launch_bounds__(256)
scan_apply(const int4* __restrict__ x, int4* __restrict__ y, const int* __restrict__ offsets, int tiles_per_block)
{
    __shared__ int ws[8];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int running = offsets[blockIdx.x];
    int base = blockIdx.x * tiles_per_block * 256 + threadIdx.x;
    for (int t = 0; t < tiles_per_block; t++) {
        int4 v = x[base + t * 256];
        v.y += v.x;
        v.z += v.y;
        v.w += v.z;
        int s = v.w;
        for (int o = 1; o < 32; o <<= 1) {
            int u = __shfl_up_sync(FULL, s, o);
            if (lane >= o) s += u;
        }
        if (lane == 31) ws[warp] = s;
        __syncthreads();
        if (warp == 0) {
            int w = lane < 8 ? ws[lane] : 0;
            for (int o = 1; o < 8; o <<= 1) {
                int u = __shfl_up_sync(FULL, w, o);
                if (lane >= o) w += u;
            }
            if (lane < 8) ws[lane] = w;
        }
        __syncthreads();
        int excl = running + (warp > 0 ? ws[warp - 1] : 0) + (s - v.w);
        y[base + t * 256] = make_int4(v.x + excl, v.y + excl, v.z + excl, v.w + excl);
        running += ws[7];
        __syncthreads();
    }
}
