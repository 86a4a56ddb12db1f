// The C baseline of the cuDNN convolution benchmark (crates/chorus-cuda-libs/examples/
// cudnn_bench.rs): the same cudnnConvolutionForward call, on the same data, timed the same way
// (3 warm-up calls, then REPS calls between two events on one stream).
//
// Build: nvcc -O3 -o cudnn_conv cudnn_conv.cu -lcudnn
// Usage: cudnn_conv f16|bf16 ALGO MATH REPS [N C K H W]
//   ALGO: a cudnnConvolutionFwdAlgo_t number, or -1 for this program's own cudnnFind choice;
//   MATH: a cudnnMathType_t number. Tensors NHWC, filter KRSC, 3x3, padding 1, stride 1.
// Prints: "algo A math M ms T" (T = milliseconds per call).
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#define CHECK_DNN(x)                                                               \
  do {                                                                             \
    cudnnStatus_t s = (x);                                                         \
    if (s != CUDNN_STATUS_SUCCESS) {                                               \
      fprintf(stderr, "%s failed: %s\n", #x, cudnnGetErrorString(s));              \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

// The fill of the Rust side: ((i*13 + seed) mod 31 - 15) / 16, exact in f16 and bf16.
static float value(size_t i, int seed) {
  return (float)((long)((i * 13 + seed) % 31) - 15) * 0.0625f;
}

// f32 to f16 / bf16 bits (the values above are exact in both, so truncation is exact).
static unsigned short to_f16(float f) {
  unsigned int b;
  memcpy(&b, &f, 4);
  unsigned int sign = (b >> 16) & 0x8000, exp = (b >> 23) & 0xff, man = b & 0x7fffff;
  if (exp == 0) return (unsigned short)sign;
  int e = (int)exp - 127 + 15;
  if (e <= 0) return (unsigned short)(sign | ((man | 0x800000) >> (1 - e + 13)));
  return (unsigned short)(sign | (e << 10) | (man >> 13));
}
static unsigned short to_bf16(float f) {
  unsigned int b;
  memcpy(&b, &f, 4);
  return (unsigned short)(b >> 16);
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s f16|bf16 ALGO MATH REPS [N C K H W]\n", argv[0]);
    return 2;
  }
  int bf = strcmp(argv[1], "bf16") == 0;
  int algo_arg = atoi(argv[2]), math = atoi(argv[3]), reps = atoi(argv[4]);
  int n = 32, c = 256, k = 256, h = 56, w = 56;
  if (argc >= 10) {
    n = atoi(argv[5]); c = atoi(argv[6]); k = atoi(argv[7]); h = atoi(argv[8]); w = atoi(argv[9]);
  }
  cudnnDataType_t dt = bf ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  size_t xn = (size_t)n * c * h * w, wn = (size_t)k * c * 9, yn = (size_t)n * k * h * w;

  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  cudnnHandle_t dnn;
  CHECK_DNN(cudnnCreate(&dnn));
  CHECK_DNN(cudnnSetStream(dnn, stream));

  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  CHECK_DNN(cudnnCreateTensorDescriptor(&xd));
  CHECK_DNN(cudnnCreateTensorDescriptor(&yd));
  CHECK_DNN(cudnnCreateFilterDescriptor(&wd));
  CHECK_DNN(cudnnCreateConvolutionDescriptor(&cd));
  // NHWC through explicit strides, as the Rust side sets them (cudnnSetTensor4dDescriptorEx).
  CHECK_DNN(cudnnSetTensor4dDescriptorEx(xd, dt, n, c, h, w, h * w * c, 1, w * c, c));
  CHECK_DNN(cudnnSetTensor4dDescriptorEx(yd, dt, n, k, h, w, h * w * k, 1, w * k, k));
  CHECK_DNN(cudnnSetFilter4dDescriptor(wd, dt, CUDNN_TENSOR_NHWC, k, c, 3, 3));
  CHECK_DNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  CHECK_DNN(cudnnSetConvolutionGroupCount(cd, 1));
  CHECK_DNN(cudnnSetConvolutionMathType(cd, (cudnnMathType_t)math));

  unsigned short *hx = (unsigned short*)malloc(xn * 2), *hw = (unsigned short*)malloc(wn * 2);
  for (size_t i = 0; i < xn; i++) hx[i] = bf ? to_bf16(value(i, 3)) : to_f16(value(i, 3));
  for (size_t i = 0; i < wn; i++) hw[i] = bf ? to_bf16(value(i, 7)) : to_f16(value(i, 7));
  void *x, *wt, *y;
  CHECK(cudaMalloc(&x, xn * 2));
  CHECK(cudaMalloc(&wt, wn * 2));
  CHECK(cudaMalloc(&y, yn * 2));
  CHECK(cudaMemcpy(x, hx, xn * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(wt, hw, wn * 2, cudaMemcpyHostToDevice));

  cudnnConvolutionFwdAlgo_t algo = (cudnnConvolutionFwdAlgo_t)algo_arg;
  if (algo_arg < 0) {
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int count = 0;
    CHECK_DNN(cudnnFindConvolutionForwardAlgorithm(dnn, xd, wd, cd, yd, 8, &count, perf));
    if (count < 1 || perf[0].status != CUDNN_STATUS_SUCCESS) {
      fprintf(stderr, "no algorithm\n");
      return 1;
    }
    algo = perf[0].algo;
    math = (int)perf[0].mathType;
    CHECK_DNN(cudnnSetConvolutionMathType(cd, (cudnnMathType_t)math));
  }
  size_t ws_bytes = 0;
  CHECK_DNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, wd, cd, yd, algo, &ws_bytes));
  void* ws = NULL;
  if (ws_bytes) CHECK(cudaMalloc(&ws, ws_bytes));
  float alpha = 1.0f, beta = 0.0f;

  // The bare call a C program makes (the Rust side also checks its arguments and asks for the
  // workspace size on each call: that host work counts against it).
  for (int i = 0; i < 3; i++) {
    CHECK_DNN(cudnnConvolutionForward(dnn, &alpha, xd, x, wd, wt, cd, algo, ws, ws_bytes, &beta,
                                      yd, y));
  }
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < reps; i++) {
    CHECK_DNN(cudnnConvolutionForward(dnn, &alpha, xd, x, wd, wt, cd, algo, ws, ws_bytes, &beta,
                                      yd, y));
  }
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  printf("algo %d math %d ms %.6f\n", (int)algo, math, ms / reps);
  return 0;
}
