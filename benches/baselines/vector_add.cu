// Hand-written baseline: vector add over float4 (16-byte loads and stores), one float4 per thread.
// Chorus's counterpart: benches/kernels/vector-add4.lisp.
extern "C" __global__ void __launch_bounds__(256)
vec_add4(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i];
        float4 y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
