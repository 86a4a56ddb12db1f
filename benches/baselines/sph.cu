// Hand-written baseline: one step of cl-cuda's smoothed-particle hydrodynamics (nine launches):
// clear the neighbour grid's counts, bin particles into cells (atomic counts), density (poly6),
// pressure, force (spiky pressure gradient + viscosity Laplacian), acceleration, boundary
// penalty walls and acceleration limit, velocity, position. Parameters as in cl-cuda's sph
// example; the grid geometry is in __constant__ memory. A cell holds at most `capacity`
// particles: insertions past that are dropped (cl-cuda overran into the next cell).
// Chorus's counterpart: examples/kernels/sph.lisp.
#define H 0.005f
#define DT 0.0004f
#define PI_F 3.1415927f
#define VISC 0.2f
#define LIMIT 200.0f
#define PMASS (0.00020543f / 8.0f)
#define RADIUS 0.002f
#define EPSILON 0.00001f
#define EXTDAMP 512.0f
#define SIMSCALE 0.004f
#define INTSTIFF 3.0f
#define EXTSTIFF 20000.0f
#define RESTDENSITY 600.0f

__constant__ float4 box_min = {-10.0f, 0.0f, -10.0f, 0.0f};
__constant__ float4 box_max = {30.0f, 50.0f, 30.0f, 0.0f};
__constant__ float4 origin = {-12.5f, -2.4999998f, -12.5f, 0.0f};
__constant__ float delta = 1.2499999f;
__constant__ int capacity = 400;
__constant__ int size_x = 37;
__constant__ int size_y = 45;
__constant__ int size_z = 37;

__device__ __forceinline__ float norm4(float4 x) { return sqrtf(x.x * x.x + x.y * x.y + x.z * x.z + x.w * x.w); }
__device__ __forceinline__ float4 operator+(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }
__device__ __forceinline__ float4 operator-(float4 a, float4 b) { return make_float4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w); }
__device__ __forceinline__ float4 operator*(float4 a, float k) { return make_float4(a.x * k, a.y * k, a.z * k, a.w * k); }
__device__ __forceinline__ float4 operator*(float k, float4 a) { return a * k; }
__device__ __forceinline__ float4 operator/(float4 a, float k) { return make_float4(a.x / k, a.y / k, a.z / k, a.w / k); }

__device__ __forceinline__ int count_offset(int i, int j, int k) { return size_x * size_y * k + size_x * j + i; }
__device__ __forceinline__ int cell_of(float x, float x0) { return (int)floorf((x - x0) / delta); }

extern "C" __global__ void clear_neighbor_count(int* __restrict__ count)
{
    count[count_offset(threadIdx.x, blockIdx.x, blockIdx.y)] = 0;
}

extern "C" __global__ void update_neighbor_map(int* __restrict__ count, int* __restrict__ map,
                                               const float4* __restrict__ pos, int n)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n) return;
    float4 x = pos[p];
    int co = count_offset(cell_of(x.x, origin.x), cell_of(x.y, origin.y), cell_of(x.z, origin.z));
    int l = atomicAdd(&count[co], 1);
    if (l < capacity) map[co * capacity + l] = p;
}

// Calls body(j) for every particle j in the 27 cells around x.
template <class F>
__device__ __forceinline__ void do_neighbors(const int* __restrict__ count, const int* __restrict__ map, float4 x, F body)
{
    int i0 = cell_of(x.x, origin.x), j0 = cell_of(x.y, origin.y), k0 = cell_of(x.z, origin.z);
    for (int i = i0 - 1; i <= i0 + 1; i++)
        for (int j = j0 - 1; j <= j0 + 1; j++)
            for (int k = k0 - 1; k <= k0 + 1; k++) {
                int co = count_offset(i, j, k);
                int m = min(count[co], capacity);
                for (int l = 0; l < m; l++) body(map[co * capacity + l]);
            }
}

extern "C" __global__ void update_density(float* __restrict__ rho, const float4* __restrict__ pos,
                                          const int* __restrict__ count, const int* __restrict__ map, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 xi = pos[i];
    float tmp = 0.0f;
    do_neighbors(count, map, xi, [&](int j) {
        float4 dr = (xi - pos[j]) * SIMSCALE;
        float r = norm4(dr);
        if (r <= H) {
            float q = H * H - r * r;
            tmp += PMASS * ((315.0f / (64.0f * PI_F * (H * H * H * H * H * H * H * H * H))) * (q * q * q));
        }
    });
    rho[i] = tmp;
}

extern "C" __global__ void update_pressure(float* __restrict__ prs, const float* __restrict__ rho, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) prs[i] = (rho[i] - RESTDENSITY) * INTSTIFF;
}

extern "C" __global__ void update_force(float4* __restrict__ force, const float4* __restrict__ pos,
                                        const float4* __restrict__ vel, const float* __restrict__ rho,
                                        const float* __restrict__ prs, const int* __restrict__ count,
                                        const int* __restrict__ map, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 xi = pos[i];
    float4 tmp = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    do_neighbors(count, map, xi, [&](int j) {
        if (i != j) {
            float4 dr = (xi - pos[j]) * SIMSCALE;
            float r = norm4(dr);
            if (r <= H) {
                float h6 = H * H * H * H * H * H;
                float4 grad = ((-45.0f / (PI_F * h6)) * ((H - r) * (H - r))) * (dr / r);
                tmp = tmp + ((-PMASS * (prs[i] + prs[j])) / (2.0f * rho[j])) * grad;
                float lap = (45.0f / (PI_F * h6)) * (H - r);
                tmp = tmp + ((VISC * PMASS) * (vel[j] - vel[i]) / rho[j]) * lap;
            }
        }
    });
    force[i] = tmp;
}

extern "C" __global__ void update_acceleration(float4* __restrict__ acc, const float4* __restrict__ force,
                                               const float* __restrict__ rho, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] = force[i] / rho[i] + make_float4(0.0f, -9.8f, 0.0f, 0.0f);
}

__device__ __forceinline__ float4 collision(float4 a, float x0, float x1, float4 v, float4 normal)
{
    float diff = RADIUS * 2.0f - (x1 - x0) * SIMSCALE;
    if (EPSILON < diff) {
        float adj = EXTSTIFF * diff - EXTDAMP * (normal.x * v.x + normal.y * v.y + normal.z * v.z + normal.w * v.w);
        a = a + adj * normal;
    }
    return a;
}

extern "C" __global__ void boundary_condition(float4* __restrict__ acc, const float4* __restrict__ pos,
                                              const float4* __restrict__ vel, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 x = pos[i], v = vel[i], a = acc[i];
    a = collision(a, box_min.x, x.x, v, make_float4(1.0f, 0.0f, 0.0f, 0.0f));
    a = collision(a, x.x, box_max.x, v, make_float4(-1.0f, 0.0f, 0.0f, 0.0f));
    a = collision(a, box_min.y, x.y, v, make_float4(0.0f, 1.0f, 0.0f, 0.0f));
    a = collision(a, x.y, box_max.y, v, make_float4(0.0f, -1.0f, 0.0f, 0.0f));
    a = collision(a, box_min.z, x.z, v, make_float4(0.0f, 0.0f, 1.0f, 0.0f));
    a = collision(a, x.z, box_max.z, v, make_float4(0.0f, 0.0f, -1.0f, 0.0f));
    float speed = norm4(a);
    if (LIMIT < speed) a = a * (LIMIT / speed);
    acc[i] = a;
}

extern "C" __global__ void update_velocity(float4* __restrict__ vel, const float4* __restrict__ acc, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) vel[i] = vel[i] + acc[i] * DT;
}

extern "C" __global__ void update_position(float4* __restrict__ pos, const float4* __restrict__ vel, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) pos[i] = pos[i] + (vel[i] * DT) / SIMSCALE;
}
