// The C half of the all-reduce benchmark (examples/nccl-allreduce.rs, `--baseline`): NCCL called
// directly from C on the same sizes, data and method as the Chorus side, in one process over every
// visible GPU (ncclCommInitAll). nccl-allreduce compiles this file with nvcc at run time, runs it
// before and after its own measurement, and reads the rows it prints:
// `baseline MIB MICROSECONDS BUSBW_GBPS CHECK` (tab-separated; CHECK is ok or FAIL).
//
//   nvcc -O3 -o nccl_baseline nccl_allreduce.cu -ldl && ./nccl_baseline MAX_MIB ITERATIONS
//
// NCCL is opened at run time by its soname (libnccl.so.2, then libnccl.so), as the Chorus binding
// opens it, so both sides call the same library; the few declarations needed are below (values
// from nccl.h), so no NCCL headers are needed to build it.
//
// Method (both sides): each rank's send buffer holds (rank + 1) · (i mod 13) as f32, so the sum
// over n ranks is n(n+1)/2 · (i mod 13), exact; for each size, from 1 MiB up by factors of 4, one
// all-reduce is checked element by element, then ITERATIONS all-reduces (each a group of every
// rank's call) are issued back to back and every rank's stream is synchronised once, as nccl-tests
// times them; the time per all-reduce is the wall time over ITERATIONS; the bus bandwidth is
// 2(n−1)/n times bytes / time.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <vector>
#include <cuda_runtime.h>

#include "check.h"

// nccl.h's declarations this program uses.
typedef struct ncclComm *ncclComm_t;
typedef int ncclResult_t; // ncclSuccess = 0
static const int ncclFloat32 = 7;
static const int ncclSum = 0;
static ncclResult_t (*ncclGetVersion)(int *);
static ncclResult_t (*ncclCommInitAll)(ncclComm_t *, int, const int *);
static ncclResult_t (*ncclCommDestroy)(ncclComm_t);
static ncclResult_t (*ncclAllReduce)(const void *, void *, size_t, int, int, ncclComm_t,
                                     cudaStream_t);
static ncclResult_t (*ncclGroupStart)(void);
static ncclResult_t (*ncclGroupEnd)(void);
static const char *(*ncclGetErrorString)(ncclResult_t);

#define NCCL(x)                                                                          \
    do {                                                                                 \
        ncclResult_t r_ = (x);                                                           \
        if (r_ != 0) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, ncclGetErrorString(r_)); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static void load_nccl() {
    void *lib = dlopen("libnccl.so.2", RTLD_NOW);
    if (!lib) lib = dlopen("libnccl.so", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "cannot open NCCL: %s\n", dlerror());
        exit(1);
    }
    auto sym = [&](const char *name) {
        void *p = dlsym(lib, name);
        if (!p) {
            fprintf(stderr, "NCCL has no %s\n", name);
            exit(1);
        }
        return p;
    };
    ncclGetVersion = (ncclResult_t(*)(int *))sym("ncclGetVersion");
    ncclCommInitAll = (ncclResult_t(*)(ncclComm_t *, int, const int *))sym("ncclCommInitAll");
    ncclCommDestroy = (ncclResult_t(*)(ncclComm_t))sym("ncclCommDestroy");
    ncclAllReduce = (ncclResult_t(*)(const void *, void *, size_t, int, int, ncclComm_t,
                                     cudaStream_t))sym("ncclAllReduce");
    ncclGroupStart = (ncclResult_t(*)(void))sym("ncclGroupStart");
    ncclGroupEnd = (ncclResult_t(*)(void))sym("ncclGroupEnd");
    ncclGetErrorString = (const char *(*)(ncclResult_t))sym("ncclGetErrorString");
}

__global__ void fill_rank(float *a, int rank, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) a[i] = (float)(rank + 1) * (float)(i % 13);
}

struct Rank {
    float *send, *recv;
    cudaStream_t stream;
};

static void all_reduce(const std::vector<Rank> &ranks, const std::vector<ncclComm_t> &comms,
                       size_t n) {
    NCCL(ncclGroupStart());
    for (size_t r = 0; r < ranks.size(); r++)
        NCCL(ncclAllReduce(ranks[r].send, ranks[r].recv, n, ncclFloat32, ncclSum, comms[r],
                           ranks[r].stream));
    NCCL(ncclGroupEnd());
}

static void synchronize(const std::vector<Rank> &ranks) {
    for (size_t r = 0; r < ranks.size(); r++) {
        CHECK(cudaSetDevice((int)r));
        CHECK(cudaStreamSynchronize(ranks[r].stream));
    }
}

int main(int argc, char **argv) {
    size_t max_mib = argc > 1 ? strtoul(argv[1], nullptr, 10) : 256;
    int iterations = argc > 2 ? atoi(argv[2]) : 20;
    load_nccl();
    int version = 0;
    NCCL(ncclGetVersion(&version));
    int world = 0;
    CHECK(cudaGetDeviceCount(&world));
    // The largest size: the last power of 4 MiB up to max_mib (at least 1 MiB).
    size_t max_mib_4 = 1;
    while (max_mib_4 * 4 <= max_mib) max_mib_4 *= 4;
    size_t max_n = max_mib_4 << 18;
    std::vector<Rank> ranks(world);
    std::vector<int> devices(world);
    for (int r = 0; r < world; r++) {
        devices[r] = r;
        CHECK(cudaSetDevice(r));
        CHECK(cudaMalloc(&ranks[r].send, max_n * sizeof(float)));
        CHECK(cudaMalloc(&ranks[r].recv, max_n * sizeof(float)));
        fill_rank<<<(unsigned)((max_n + 255) / 256), 256>>>(ranks[r].send, r, (int)max_n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
    }
    std::vector<ncclComm_t> comms(world);
    NCCL(ncclCommInitAll(comms.data(), world, devices.data()));
    // NCCL's version code is major * 10000 + minor * 100 + patch (2.28.3 is 22803).
    fprintf(stderr, "nccl_allreduce baseline: NCCL %d.%d.%d, %d rank(s) in this process\n",
            version / 10000, version / 100 % 100, version % 100, world);
    float scale = (float)(world * (world + 1) / 2);
    std::vector<float> host(max_n);
    for (size_t mib = 1; mib <= max_mib; mib *= 4) {
        size_t n = mib << 18;
        all_reduce(ranks, comms, n);
        synchronize(ranks);
        bool ok = true;
        for (int r = 0; r < world; r++) {
            CHECK(cudaSetDevice(r));
            CHECK(cudaMemcpy(host.data(), ranks[r].recv, n * sizeof(float),
                             cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < n; i++)
                if (host[i] != scale * (float)(i % 13)) {
                    ok = false;
                    break;
                }
        }
        auto start = std::chrono::steady_clock::now();
        for (int it = 0; it < iterations; it++) all_reduce(ranks, comms, n);
        synchronize(ranks);
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
            (iterations < 1 ? 1 : iterations);
        double algbw = (double)(n * sizeof(float)) / seconds / 1e9;
        double busbw = algbw * 2.0 * (world - 1) / world;
        printf("baseline\t%zu\t%.3f\t%.1f\t%s\n", mib, seconds * 1e6, busbw, ok ? "ok" : "FAIL");
        fflush(stdout);
    }
    for (int r = 0; r < world; r++) NCCL(ncclCommDestroy(comms[r]));
    for (int r = 0; r < world; r++) {
        CHECK(cudaSetDevice(r));
        CHECK(cudaStreamDestroy(ranks[r].stream));
        CHECK(cudaFree(ranks[r].send));
        CHECK(cudaFree(ranks[r].recv));
    }
    return 0;
}
