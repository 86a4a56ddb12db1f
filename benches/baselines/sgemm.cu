// Hand-written baseline: C = A·B in FP32 on the CUDA cores, A given transposed (Aᵀ is K×M row-major,
// so both operand tiles load as float4 rows), B K×N and C M×N row-major. Block tile 128×128, k-step 8,
// 256 threads each owning an 8×8 register tile: rows {ty*4+i, 64+ty*4+i} and columns {tx*4+j,
// 64+tx*4+j}, so the float4 reads of the shared tiles are conflict-free. The next k-step's global
// loads are issued into registers before the current step's arithmetic (register prefetch).
// Chorus's counterpart: examples/kernels/sgemm.lisp. M, N multiples of 128; K a multiple of 8.
extern "C" __global__ void __launch_bounds__(256, 2)
sgemm_tn(const float4* __restrict__ at, const float4* __restrict__ b, float4* __restrict__ c,
         int m, int n, int k)
{
    __shared__ float4 as[8][32];
    __shared__ float4 bs[8][32];
    int tid = threadIdx.x;
    int tx = tid % 16, ty = tid / 16;
    int lk = tid / 32, lc = tid % 32;
    int m4 = m / 4, n4 = n / 4;
    const float4* ap = at + lk * m4 + blockIdx.y * 32 + lc;
    const float4* bp = b + lk * n4 + blockIdx.x * 32 + lc;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
    float4 pa = ap[0], pb = bp[0];
    as[lk][lc] = pa;
    bs[lk][lc] = pb;
    __syncthreads();
    for (int k0 = 0; k0 < k; k0 += 8) {
        bool more = k0 + 8 < k;
        if (more) {
            pa = ap[(k0 + 8) * m4];
            pb = bp[(k0 + 8) * n4];
        }
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            float4 a0 = as[kk][ty], a1 = as[kk][ty + 16];
            float4 b0 = bs[kk][tx], b1 = bs[kk][tx + 16];
            float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] += av[i] * bv[j];
        }
        __syncthreads();
        if (more) {
            as[lk][lc] = pa;
            bs[lk][lc] = pb;
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        int row = blockIdx.y * 128 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        float4* cp = c + row * n4 + blockIdx.x * 32 + tx;
        cp[0] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        cp[16] = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
