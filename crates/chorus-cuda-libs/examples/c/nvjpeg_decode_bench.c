/* The baseline of examples/nvjpeg_bench.rs: the same nvJPEG calls from C on the same files
 * (nvjpegCreateEx, nvjpegJpegStateCreate, nvjpegDecodeBatchedInitialize, then per repetition
 * nvjpegGetImageInfo for each image and one nvjpegDecodeBatched to interleaved RGB into
 * preallocated pitched images), timed with the wall clock over REPS batches after 2 warm-ups.
 *
 *   nvcc -O2 -o nvjpeg_decode_bench nvjpeg_decode_bench.c -lnvjpeg
 *   ./nvjpeg_decode_bench DIR   (the frame_*.jpg that `nvjpeg_bench --write DIR` wrote)
 */
#include <cuda_runtime.h>
#include <nvjpeg.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 10
#define CHECK(x) do { int s_ = (int)(x); if (s_) { fprintf(stderr, "%s failed: %d\n", #x, s_); return 1; } } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    DIR *d = opendir(argv[1]);
    if (!d) { perror(argv[1]); return 1; }
    char *names[1024]; int n = 0; struct dirent *e;
    while ((e = readdir(d)) && n < 1024)
        if (strstr(e->d_name, ".jpg")) names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    unsigned char **data = calloc(n, sizeof *data); size_t *lengths = calloc(n, sizeof *lengths);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        char path[4096]; snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
        FILE *f = fopen(path, "rb"); if (!f) { perror(path); return 1; }
        fseek(f, 0, SEEK_END); lengths[i] = ftell(f); fseek(f, 0, SEEK_SET);
        data[i] = malloc(lengths[i]);
        if (fread(data[i], 1, lengths[i], f) != lengths[i]) { perror(path); return 1; }
        fclose(f); total += lengths[i];
    }
    cudaStream_t stream; CHECK(cudaStreamCreate(&stream));
    const nvjpegBackend_t backends[3] = {NVJPEG_BACKEND_DEFAULT, NVJPEG_BACKEND_GPU_HYBRID, NVJPEG_BACKEND_HARDWARE};
    const char *backend_names[3] = {"Default", "GpuHybrid", "Hardware"};
    for (int b = 0; b < 3; b++) {
        nvjpegHandle_t h; nvjpegJpegState_t st;
        if (nvjpegCreateEx(backends[b], NULL, NULL, 0, &h)) { printf("C nvJPEG %s: not available here\n", backend_names[b]); continue; }
        CHECK(nvjpegJpegStateCreate(h, &st));
        CHECK(nvjpegDecodeBatchedInitialize(h, st, n, 1, NVJPEG_OUTPUT_RGBI));
        nvjpegImage_t *out = calloc(n, sizeof *out);
        int w0 = 0, h0 = 0;
        for (int i = 0; i < n; i++) {
            int c, w[4], hh[4]; nvjpegChromaSubsampling_t css;
            CHECK(nvjpegGetImageInfo(h, data[i], lengths[i], &c, &css, w, hh));
            size_t pitch = ((size_t)w[0] * 3 + 511) / 512 * 512;
            CHECK(cudaMalloc((void **)&out[i].channel[0], pitch * hh[0]));
            out[i].pitch[0] = pitch; w0 = w[0]; h0 = hh[0];
        }
        double t0 = 0;
        for (int r = 0; r < REPS + 2; r++) {
            if (r == 2) { CHECK(cudaStreamSynchronize(stream)); t0 = now(); }
            for (int i = 0; i < n; i++) {  /* as the Rust side does: the header of each, then the batch */
                int c, w[4], hh[4]; nvjpegChromaSubsampling_t css;
                CHECK(nvjpegGetImageInfo(h, data[i], lengths[i], &c, &css, w, hh));
            }
            CHECK(nvjpegDecodeBatched(h, st, (const unsigned char *const *)data, lengths, out, stream));
        }
        CHECK(cudaStreamSynchronize(stream));
        double s = now() - t0, images = (double)n * REPS;
        printf("C nvJPEG %s: %.1f ms per batch of %d, %.0f images/s, %.0f MB/s of JPEG, %.0f Mpixel/s\n",
               backend_names[b], s * 1e3 / REPS, n, images / s, total * (double)REPS / s / 1e6,
               images * w0 * h0 / s / 1e6);
        for (int i = 0; i < n; i++) cudaFree(out[i].channel[0]);
        free(out);
        nvjpegJpegStateDestroy(st); nvjpegDestroy(h);
    }
    return 0;
}
