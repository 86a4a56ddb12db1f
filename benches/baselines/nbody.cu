// Hand-written baseline: one all-pairs n-body step (the CUDA SDK / GPU Gems 3 algorithm that
// cl-cuda's nbody example ports). Positions are float4 with the mass in w; each block stages 256
// bodies at a time in shared memory; 20 flops per interaction by the usual count; the body itself
// is included (it contributes nothing: dx = 0). Then v = (v + a·dt)·damping, x += v·dt, written to
// the other position buffer. Chorus's counterpart: examples/kernels/nbody.lisp. n a multiple of 256.
extern "C" __global__ void __launch_bounds__(256)
nbody_step(const float4* __restrict__ pos, float4* __restrict__ vel, float4* __restrict__ pos_out,
           int n, float dt, float damping, float softening2)
{
    __shared__ float4 tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 p = pos[i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int t = 0; t < n; t += 256) {
        tile[threadIdx.x] = pos[t + threadIdx.x];
        __syncthreads();
#pragma unroll 8
        for (int j = 0; j < 256; j++) {
            float4 q = tile[j];
            float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            float d2 = dx * dx + dy * dy + dz * dz + softening2;
            float inv = rsqrtf(d2);
            float s = q.w * (inv * inv * inv);
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        __syncthreads();
    }
    float4 v = vel[i];
    v.x = (v.x + ax * dt) * damping;
    v.y = (v.y + ay * dt) * damping;
    v.z = (v.z + az * dt) * damping;
    vel[i] = v;
    pos_out[i] = make_float4(p.x + v.x * dt, p.y + v.y * dt, p.z + v.z * dt, p.w);
}
