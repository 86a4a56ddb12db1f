// HIP on CUDA: `__half`, `__half2` and their intrinsics, which HIP spells as CUDA does.
#ifndef CHORUS_HIP_ON_CUDA_FP16_H
#define CHORUS_HIP_ON_CUDA_FP16_H
#include <cuda_fp16.h>
#endif
