// The CUDA C half of the libraries benchmark (crates/chorus-cuda-libs/examples/libs_bench.rs): the
// same library calls, on the same sizes, data and method as the Chorus side, made directly from C.
// libs_bench compiles this file with nvcc at run time, runs it, and reads the rows it prints:
// `baseline NAME MS VALUE UNIT CHECK` (tab-separated; CHECK is ok or FAIL).
//
//   nvcc -O3 -arch=sm_90 -o libs_baseline libs.cu -lcublas -lcublasLt -lcufft -lcusparse
//
// Method (both sides): inputs from one integer hash (identical data on both sides: the Rust side
// computes the same hash), every result checked against a float64 host reference on samples; GPU
// time is the median over REPS event-timed batches after WARMUP batches, on one created stream.
// Every working set exceeds the 50 MiB L2 (≥ 128 MiB), so the buffers are not rotated. Host
// overhead of a 64³ SGEMM is the median over bursts of 64 calls of the time to issue them
// (the GPU drains between bursts), in microseconds per call.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cufft.h>
#include <cusparse.h>

#include "check.h"
// Library status codes: 0 is success in cuBLAS, cuBLASLt, cuFFT and cuSPARSE.
#define LIB(x)                                                                      \
    do {                                                                            \
        int s_ = (int)(x);                                                          \
        if (s_ != 0) {                                                              \
            fprintf(stderr, "%s:%d: %s: status %d\n", __FILE__, __LINE__, #x, s_); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static const int WARMUP = 3;
static const int REPS = 15;
static cudaStream_t stream;

// Milliseconds per run of `f`: WARMUP untimed batches, then the median over REPS event-timed
// batches of `batch` runs, divided by `batch`.
template <class F>
static double time_ms(F f, int batch)
{
    for (int i = 0; i < WARMUP * batch; i++) f();
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> t(REPS);
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < REPS; i++) {
        CHECK(cudaEventRecord(a, stream));
        for (int j = 0; j < batch; j++) f();
        CHECK(cudaEventRecord(b, stream));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&t[i], a, b));
    }
    CHECK(cudaGetLastError());
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[REPS / 2] / batch;
}

// Microseconds of host time per call of `f`: 200 bursts of 64 calls (the first 10 dropped), each
// burst's issue time measured and the stream drained after it; the median.
template <class F>
static double host_us(F f)
{
    std::vector<double> per;
    for (int r = 0; r < 200; r++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 64; i++) f();
        auto t1 = std::chrono::steady_clock::now();
        CHECK(cudaStreamSynchronize(stream));
        if (r >= 10) per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 64);
    }
    std::sort(per.begin(), per.end());
    return per[per.size() / 2];
}

static const auto start = std::chrono::steady_clock::now();

// Seconds since the program started (progress on stderr, so that a cut run shows where it was).
static double elapsed()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

static void row(const char* name, double ms, double value, const char* unit, bool ok)
{
    printf("baseline\t%s\t%.6f\t%.6g\t%s\t%s\n", name, ms, value, unit, ok ? "ok" : "FAIL");
    fflush(stdout);
    fprintf(stderr, "# C baseline: %s done at %.1f s\n", name, elapsed());
}

// The shared input hash: element i of the stream `seed` is uniform in [lo, hi). libs_bench's
// `uniform` is the same function.
__host__ __device__ inline float uniform(unsigned long long i, unsigned seed, float lo, float hi)
{
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    return lo + (hi - lo) * (h >> 8) * (1.0f / 16777216.0f);
}
template <class T>
__global__ void fill_kernel(T* x, size_t n, unsigned seed, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = T(uniform(i, seed, lo, hi));
}
template <class T>
static T* filled(size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f)
{
    T* d;
    CHECK(cudaMalloc(&d, n * sizeof(T)));
    fill_kernel<<<1024, 256, 0, stream>>>(d, n, seed, lo, hi);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(stream));
    return d;
}
template <class T>
static std::vector<T> download(const T* d, size_t n)
{
    std::vector<T> h(n);
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}
static double value(float x) { return x; }
static double value(__nv_bfloat16 x) { return __bfloat162float(x); }
static double value(__nv_fp8_e4m3 x) { return (float)x; }

// Column-major C (m×n) = op(A)·B sampled at 64 places against float64: |c − ref| ≤ tol·Σ|a·b|.
// A is m×k (lda = m) or, transposed, k×m (lda = k); B is k×n (ldb = k).
template <class T, class U>
static bool gemm_ok(const T* a, const T* b, const U* c, int m, int n, int k, bool at, double tol)
{
    auto ha = download(a, (size_t)m * k), hb = download(b, (size_t)k * n);
    auto hc = download(c, (size_t)m * n);
    bool ok = true;
    for (int s = 0; s < 64; s++) {
        int i = (s * 7919) % m, j = (s * 104729) % n;
        double want = 0.0, mag = 0.0;
        for (int kk = 0; kk < k; kk++) {
            double x = value(at ? ha[(size_t)i * k + kk] : ha[(size_t)kk * m + i]) * value(hb[(size_t)j * k + kk]);
            want += x;
            mag += std::fabs(x);
        }
        ok &= std::fabs(value(hc[(size_t)j * m + i]) - want) <= tol * mag + 1e-6;
    }
    return ok;
}

int main()
{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# device %s, CUDA C baseline of libs_bench\n", prop.name);
    CHECK(cudaStreamCreate(&stream));
    const int n = 8192;
    const double flops = 2.0 * n * (double)n * n;
    const float one = 1.0f, zero = 0.0f;

    cublasHandle_t blas;
    LIB(cublasCreate(&blas));
    LIB(cublasSetStream(blas, stream));
    LIB(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));

    // ---- SGEMM FP32 8192³, column-major, no transposes
    {
        float *a = filled<float>((size_t)n * n, 1), *b = filled<float>((size_t)n * n, 2), *c;
        CHECK(cudaMalloc(&c, (size_t)n * n * 4));
        auto f = [&] { LIB(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n)); };
        double ms = time_ms(f, 1);
        row("sgemm-fp32-8192", ms, flops / ms / 1e9, "TFLOP/s", gemm_ok(a, b, c, n, n, n, false, 1e-5));
        CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c));
    }

    // ---- GEMM BF16 in and out, f32 accumulation (cublasGemmEx), 8192³
    {
        auto *a = filled<__nv_bfloat16>((size_t)n * n, 3), *b = filled<__nv_bfloat16>((size_t)n * n, 4);
        __nv_bfloat16* c;
        CHECK(cudaMalloc(&c, (size_t)n * n * 2));
        auto f = [&] {
            LIB(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n,
                             &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        };
        double ms = time_ms(f, 2);
        row("gemm-bf16-8192", ms, flops / ms / 1e9, "TFLOP/s", gemm_ok(a, b, c, n, n, n, false, 1e-2));
        CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c));
    }

    // ---- FP8 E4M3 cuBLASLt matmul 8192³: D (bf16) = scale_a·scale_b·Aᵀ·B, the TN layout, f32
    // compute, 32 MiB workspace, the heuristic's first algorithm (as chorus's BlasLt::matmul).
    {
        auto *a = filled<__nv_fp8_e4m3>((size_t)n * n, 5), *b = filled<__nv_fp8_e4m3>((size_t)n * n, 6);
        __nv_bfloat16* d;
        CHECK(cudaMalloc(&d, (size_t)n * n * 2));
        float *sa = filled<float>(1, 7, 1.0f, 1.0f), *sb = filled<float>(1, 8, 1.0f, 1.0f);
        size_t wsize = 32 << 20;
        void* work;
        CHECK(cudaMalloc(&work, wsize));
        cublasLtHandle_t lt;
        LIB(cublasLtCreate(&lt));
        cublasLtMatmulDesc_t desc;
        LIB(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        int ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        LIB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        LIB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        LIB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
        LIB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
        cublasLtMatrixLayout_t la, lb, ld;
        LIB(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, n, n, n));
        LIB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, n, n, n));
        LIB(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, n, n));
        cublasLtMatmulPreference_t pref;
        LIB(cublasLtMatmulPreferenceCreate(&pref));
        unsigned long long wbytes = wsize;
        LIB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wbytes, sizeof wbytes));
        cublasLtMatmulHeuristicResult_t result = {};
        int found = 0;
        LIB(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &result, &found));
        if (found == 0) { fprintf(stderr, "no FP8 algorithm\n"); exit(1); }
        {   // The algorithm chosen, as libs_bench prints Chorus's (BlasLt::algorithms).
            int32_t id = 0, split_k = 0;
            uint32_t tile = 0, stages = 0, swizzling = 0;
            uint16_t cluster = 0;
            LIB(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr));
            LIB(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, nullptr));
            LIB(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, nullptr));
            LIB(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k, sizeof split_k, nullptr));
            LIB(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzling, sizeof swizzling, nullptr));
            LIB(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, nullptr));
            fprintf(stderr, "# C baseline: FP8 algorithm %d (tile %u, stages %u, split-k %d, swizzling %u, cluster shape %u)\n",
                    id, tile, stages, split_k, swizzling, (unsigned)cluster);
        }
        auto f = [&] {
            LIB(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, d, ld, d, ld, &result.algo, work, wsize, stream));
        };
        double ms = time_ms(f, 4);
        row("lt-fp8-e4m3-8192", ms, flops / ms / 1e9, "TFLOP/s", gemm_ok(a, b, d, n, n, n, true, 1e-2));
        LIB(cublasLtMatmulPreferenceDestroy(pref));
        LIB(cublasLtMatrixLayoutDestroy(la)); LIB(cublasLtMatrixLayoutDestroy(lb)); LIB(cublasLtMatrixLayoutDestroy(ld));
        LIB(cublasLtMatmulDescDestroy(desc));
        LIB(cublasLtDestroy(lt));
        CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(d)); CHECK(cudaFree(sa)); CHECK(cudaFree(sb)); CHECK(cudaFree(work));
    }

    // ---- host overhead of a 64³ SGEMM
    {
        const int m = 64;
        float *a = filled<float>(m * m, 9), *b = filled<float>(m * m, 10), *c;
        CHECK(cudaMalloc(&c, m * m * 4));
        auto f = [&] { LIB(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, a, m, b, m, &zero, c, m)); };
        double us = host_us(f);
        CHECK(cudaStreamSynchronize(stream));
        row("sgemm-64-host", us / 1e3, us, "us/call", gemm_ok(a, b, c, m, m, m, false, 1e-5));
        CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c));
    }
    LIB(cublasDestroy(blas));

    // ---- C2C FFT, f32, 2^24 points, forward, out of place
    {
        const int len = 1 << 24;
        float* x = filled<float>(2ull * len, 11);
        cufftComplex* y;
        CHECK(cudaMalloc(&y, len * sizeof(cufftComplex)));
        cufftHandle plan;
        LIB(cufftPlan1d(&plan, len, CUFFT_C2C, 1));
        LIB(cufftSetStream(plan, stream));
        auto f = [&] { LIB(cufftExecC2C(plan, (cufftComplex*)x, y, CUFFT_FORWARD)); };
        double ms = time_ms(f, 10);
        CHECK(cudaStreamSynchronize(stream));
        auto hx = download(x, 2ull * len);
        auto hy = download((float*)y, 2ull * len);
        // Three bins against a float64 DFT: |Y_k − ref| ≤ 1e-5·Σ|x|. The twiddle factor turns by
        // one step per term and is recomputed exactly every 4096 terms (drift ≪ 1e-12).
        double mag = 0.0;
        for (int i = 0; i < len; i++) mag += std::sqrt((double)hx[2 * i] * hx[2 * i] + (double)hx[2 * i + 1] * hx[2 * i + 1]);
        bool ok = true;
        for (int k : {0, 1, 4099}) {
            const double step = -2.0 * M_PI * k / len, sr = std::cos(step), si = std::sin(step);
            double re = 0.0, im = 0.0, wr = 1.0, wi = 0.0;
            for (int i = 0; i < len; i++) {
                if (i % 4096 == 0) {
                    double ang = -2.0 * M_PI * (double)(((unsigned long long)i * k) % len) / len;
                    wr = std::cos(ang);
                    wi = std::sin(ang);
                }
                double xr = hx[2 * i], xi = hx[2 * i + 1];
                re += xr * wr - xi * wi;
                im += xr * wi + xi * wr;
                double t = wr * sr - wi * si;
                wi = wr * si + wi * sr;
                wr = t;
            }
            double dr = hy[2 * k] - re, di = hy[2 * k + 1] - im;
            ok &= std::sqrt(dr * dr + di * di) <= 1e-5 * mag;
        }
        row("fft-c2c-f32-2^24", ms, 5.0 * len * 24 / ms / 1e6, "GFLOP/s", ok);
        LIB(cufftDestroy(plan));
        CHECK(cudaFree(x)); CHECK(cudaFree(y));
    }

    // ---- SpMV, CSR f32: the 5-point Laplacian pattern of a 2048×2048 grid (20 963 328 non-zeros)
    // with hashed values; descriptors and buffer made once, as C code writes a loop of SpMVs.
    {
        const int side = 2048, rows = side * side;
        std::vector<int> offsets(1, 0), cols;
        cols.reserve(5ull * rows);
        for (int r = 0; r < rows; r++) {
            int i = r / side, j = r % side;
            if (i > 0) cols.push_back(r - side);
            if (j > 0) cols.push_back(r - 1);
            cols.push_back(r);
            if (j + 1 < side) cols.push_back(r + 1);
            if (i + 1 < side) cols.push_back(r + side);
            offsets.push_back((int)cols.size());
        }
        const long long nnz = cols.size();
        int *doff, *dcol;
        CHECK(cudaMalloc(&doff, offsets.size() * 4));
        CHECK(cudaMalloc(&dcol, nnz * 4));
        CHECK(cudaMemcpy(doff, offsets.data(), offsets.size() * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(dcol, cols.data(), nnz * 4, cudaMemcpyHostToDevice));
        float *val = filled<float>(nnz, 12), *x = filled<float>(rows, 13), *y;
        CHECK(cudaMalloc(&y, rows * 4ull));
        cusparseHandle_t sp;
        LIB(cusparseCreate(&sp));
        LIB(cusparseSetStream(sp, stream));
        cusparseSpMatDescr_t ma;
        cusparseDnVecDescr_t vx, vy;
        LIB(cusparseCreateCsr(&ma, rows, rows, nnz, doff, dcol, val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
        LIB(cusparseCreateDnVec(&vx, rows, x, CUDA_R_32F));
        LIB(cusparseCreateDnVec(&vy, rows, y, CUDA_R_32F));
        size_t size = 0;
        LIB(cusparseSpMV_bufferSize(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, ma, vx, &zero, vy, CUDA_R_32F,
                                    CUSPARSE_SPMV_ALG_DEFAULT, &size));
        void* buffer;
        CHECK(cudaMalloc(&buffer, std::max<size_t>(size, 1)));
        auto f = [&] {
            LIB(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, ma, vx, &zero, vy, CUDA_R_32F,
                             CUSPARSE_SPMV_ALG_DEFAULT, buffer));
        };
        double ms = time_ms(f, 10);
        auto hv = download(val, nnz), hx = download(x, rows), hy = download(y, rows);
        bool ok = true;
        for (int r = 0; r < rows; r++) {
            double want = 0.0, mag = 0.0;
            for (int p = offsets[r]; p < offsets[r + 1]; p++) {
                want += (double)hv[p] * hx[cols[p]];
                mag += std::fabs((double)hv[p] * hx[cols[p]]);
            }
            ok &= std::fabs(hy[r] - want) <= 1e-5 * mag + 1e-7;
        }
        char name[64];
        snprintf(name, sizeof name, "spmv-csr-f32-%lldnnz", nnz);
        row(name, ms, 2.0 * nnz / ms / 1e6, "GFLOP/s", ok);
        LIB(cusparseDestroyDnVec(vx)); LIB(cusparseDestroyDnVec(vy)); LIB(cusparseDestroySpMat(ma));
        LIB(cusparseDestroy(sp));
        CHECK(cudaFree(doff)); CHECK(cudaFree(dcol)); CHECK(cudaFree(val)); CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(buffer));
    }
    CHECK(cudaStreamDestroy(stream));
    return 0;
}
