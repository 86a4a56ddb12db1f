// HIP on CUDA, the runtime half: a `libamdhip64.so` that exports the HIP runtime and hipRTC
// functions chorus-hip calls (crates/chorus-hip/src/sys.rs, nothing more) and implements them
// over the CUDA driver API and NVRTC, both loaded with dlopen. With it on ROCM_PATH/lib, the
// whole chorus-hip runtime (device query, hipRTC compile through its cache, module load,
// launch, globals, streams, events) and the facade's HIP backend run unchanged on an NVIDIA
// GPU: hipRTC's input is the HIP dialect's source, compiled by NVRTC against the HIP-on-CUDA
// header (../hip/hip_runtime.h), as HIP itself does on NVIDIA.
//
// What it reports: the CUDA device's name with " (HIP on CUDA)", its memory and limits, and
// `gcnArchName` = $CHORUS_HIP_ON_CUDA_ARCH (default gfx1030, an RDNA target with 32-lane waves
// like NVIDIA's warps), written at both layouts' offsets: ROCm 5's hipDeviceProp_t
// (hipGetDeviceProperties) and ROCm 6's hipDeviceProp_tR0600 (hipGetDevicePropertiesR0600).
// hipRTC's `--gpu-architecture=gfx…` becomes the device's `sm_XY`, `-O3` is dropped (NVRTC
// optimises by default) and $CHORUS_HIP_ON_CUDA_INCLUDE (colon-separated folders: the
// HIP-on-CUDA header's and CUDA's include folder) is added as `-I`.
//
// Errors: CUDA driver codes are returned as HIP codes unchanged (HIP's codes were taken from
// CUDA's: 0, 1, 2, 100, 101, 200, 400, 500, 700, 719 mean the same), and hipGetErrorString
// asks the driver. A missing CUDA driver or NVRTC is hipErrorNoDevice / an NVRTC error.
//
// Build: cc -shared -fPIC -O2 -I$CUDA/include hip_on_cuda_runtime.c -o libamdhip64.so -ldl
// (CUDA's headers for the types only; nothing is linked but libdl).

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
typedef int hiprtcResult;

#define STR(x) #x
#define XSTR(x) STR(x)
// A pointer to CUDA function `f`, resolved by its versioned name (`cuMemAlloc` is
// `cuMemAlloc_v2` through cuda.h's macros).
#define FN(f) static __typeof__(&f) p_##f;
#define LOAD(lib, f)                                  \
  do {                                                \
    p_##f = (__typeof__(&f))dlsym(lib, XSTR(f));      \
    if (!p_##f) {                                     \
      fprintf(stderr, "hip_on_cuda: no %s\n", XSTR(f)); \
      return 0;                                       \
    }                                                 \
  } while (0)

FN(cuInit)
FN(cuGetErrorString)
FN(cuDriverGetVersion)
FN(cuDeviceGetCount)
FN(cuDeviceGet)
FN(cuDeviceGetName)
FN(cuDeviceTotalMem)
FN(cuDeviceGetAttribute)
FN(cuDevicePrimaryCtxRetain)
FN(cuCtxSetCurrent)
FN(cuCtxSynchronize)
FN(cuMemAlloc)
FN(cuMemFree)
FN(cuMemcpy)
FN(cuMemcpyAsync)
FN(cuMemsetD8)
FN(cuStreamCreate)
FN(cuStreamDestroy)
FN(cuStreamSynchronize)
FN(cuStreamWaitEvent)
FN(cuEventCreate)
FN(cuEventDestroy)
FN(cuEventRecord)
FN(cuEventSynchronize)
FN(cuEventElapsedTime)
FN(cuModuleLoadData)
FN(cuModuleUnload)
FN(cuModuleGetFunction)
FN(cuModuleGetGlobal)
FN(cuLaunchKernel)

FN(nvrtcGetErrorString)
FN(nvrtcVersion)
FN(nvrtcCreateProgram)
FN(nvrtcCompileProgram)
FN(nvrtcGetProgramLogSize)
FN(nvrtcGetProgramLog)
FN(nvrtcGetCUBINSize)
FN(nvrtcGetCUBIN)
FN(nvrtcDestroyProgram)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int cuda_loaded, nvrtc_loaded;

static int load_cuda(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  LOAD(lib, cuInit);
  LOAD(lib, cuGetErrorString);
  LOAD(lib, cuDriverGetVersion);
  LOAD(lib, cuDeviceGetCount);
  LOAD(lib, cuDeviceGet);
  LOAD(lib, cuDeviceGetName);
  LOAD(lib, cuDeviceTotalMem);
  LOAD(lib, cuDeviceGetAttribute);
  LOAD(lib, cuDevicePrimaryCtxRetain);
  LOAD(lib, cuCtxSetCurrent);
  LOAD(lib, cuCtxSynchronize);
  LOAD(lib, cuMemAlloc);
  LOAD(lib, cuMemFree);
  LOAD(lib, cuMemcpy);
  LOAD(lib, cuMemcpyAsync);
  LOAD(lib, cuMemsetD8);
  LOAD(lib, cuStreamCreate);
  LOAD(lib, cuStreamDestroy);
  LOAD(lib, cuStreamSynchronize);
  LOAD(lib, cuStreamWaitEvent);
  LOAD(lib, cuEventCreate);
  LOAD(lib, cuEventDestroy);
  LOAD(lib, cuEventRecord);
  LOAD(lib, cuEventSynchronize);
  LOAD(lib, cuEventElapsedTime);
  LOAD(lib, cuModuleLoadData);
  LOAD(lib, cuModuleUnload);
  LOAD(lib, cuModuleGetFunction);
  LOAD(lib, cuModuleGetGlobal);
  LOAD(lib, cuLaunchKernel);
  return 1;
}

static int load_nvrtc(void) {
  const char *names[] = {getenv("CHORUS_HIP_ON_CUDA_NVRTC"), "libnvrtc.so", "libnvrtc.so.13",
                         "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof *names && !lib; i++)
    if (names[i] && *names[i]) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  LOAD(lib, nvrtcGetErrorString);
  LOAD(lib, nvrtcVersion);
  LOAD(lib, nvrtcCreateProgram);
  LOAD(lib, nvrtcCompileProgram);
  LOAD(lib, nvrtcGetProgramLogSize);
  LOAD(lib, nvrtcGetProgramLog);
  LOAD(lib, nvrtcGetCUBINSize);
  LOAD(lib, nvrtcGetCUBIN);
  LOAD(lib, nvrtcDestroyProgram);
  return 1;
}

static void load(void) {
  cuda_loaded = load_cuda();
  nvrtc_loaded = load_nvrtc();
}

// HIP's current device is per thread; its context is the device's primary context, made
// current on the calling thread before each call that needs one.
static __thread int current_device;
static __thread CUcontext bound;
static CUcontext primary[64];
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;

#define HIP_ERROR_NO_DEVICE 100
#define HIP_ERROR_INVALID_DEVICE 101
#define HIP_ERROR_INVALID_VALUE 1

static hipError_t ready(void) {
  pthread_once(&once, load);
  if (!cuda_loaded) return HIP_ERROR_NO_DEVICE;
  CUresult rc = p_cuInit(0);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  if (current_device < 0 || current_device >= 64) return HIP_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&primary_lock);
  if (!primary[current_device]) {
    CUdevice dev;
    rc = p_cuDeviceGet(&dev, current_device);
    if (rc == CUDA_SUCCESS) rc = p_cuDevicePrimaryCtxRetain(&primary[current_device], dev);
  }
  CUcontext ctx = primary[current_device];
  pthread_mutex_unlock(&primary_lock);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  if (bound != ctx) {
    rc = p_cuCtxSetCurrent(ctx);
    if (rc != CUDA_SUCCESS) return (hipError_t)rc;
    bound = ctx;
  }
  return 0;
}

#define READY()                       \
  do {                                \
    hipError_t e_ = ready();          \
    if (e_ != 0) return e_;           \
  } while (0)

static const char *arch_name(void) {
  const char *a = getenv("CHORUS_HIP_ON_CUDA_ARCH");
  return a && *a ? a : "gfx1030";
}

hipError_t hipInit(unsigned int flags) {
  (void)flags;
  pthread_once(&once, load);
  if (!cuda_loaded) return HIP_ERROR_NO_DEVICE;
  return (hipError_t)p_cuInit(0);
}

const char *hipGetErrorString(hipError_t code) {
  pthread_once(&once, load);
  const char *s = NULL;
  if (cuda_loaded && p_cuGetErrorString((CUresult)code, &s) == CUDA_SUCCESS && s) return s;
  return code == HIP_ERROR_NO_DEVICE ? "no CUDA driver or device (HIP on CUDA)"
                                     : "unknown error (HIP on CUDA)";
}

hipError_t hipRuntimeGetVersion(int *version) {
  pthread_once(&once, load);
  if (!cuda_loaded) return HIP_ERROR_NO_DEVICE;
  return (hipError_t)p_cuDriverGetVersion(version);
}

hipError_t hipGetDeviceCount(int *count) {
  pthread_once(&once, load);
  *count = 0;
  if (!cuda_loaded) return HIP_ERROR_NO_DEVICE;
  CUresult rc = p_cuInit(0);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  rc = p_cuDeviceGetCount(count);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  return *count == 0 ? HIP_ERROR_NO_DEVICE : 0;
}

hipError_t hipSetDevice(int device) {
  int count = 0;
  hipError_t e = hipGetDeviceCount(&count);
  if (e != 0) return e;
  if (device < 0 || device >= count || device >= 64) return HIP_ERROR_INVALID_DEVICE;
  current_device = device;
  return ready();
}

hipError_t hipDeviceGetName(char *name, int len, int device) {
  pthread_once(&once, load);
  if (!cuda_loaded) return HIP_ERROR_NO_DEVICE;
  CUdevice dev;
  CUresult rc = p_cuDeviceGet(&dev, device);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  char cuda_name[256] = {0};
  rc = p_cuDeviceGetName(cuda_name, sizeof cuda_name, dev);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  if (len <= 0) return HIP_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s (HIP on CUDA)", cuda_name);
  return 0;
}

hipError_t hipDeviceTotalMem(size_t *bytes, int device) {
  pthread_once(&once, load);
  if (!cuda_loaded) return HIP_ERROR_NO_DEVICE;
  CUdevice dev;
  CUresult rc = p_cuDeviceGet(&dev, device);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  return (hipError_t)p_cuDeviceTotalMem(bytes, dev);
}

// hipDeviceAttribute_t values (ROCm 5 and 6 agree on these) and CUDA's counterparts.
static int cuda_attribute(int hip_attribute) {
  switch (hip_attribute) {
    case 56: return CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    case 74: return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
    case 63: return CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    case 87: return CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    default: return -1;
  }
}

hipError_t hipDeviceGetAttribute(int *value, int attribute, int device) {
  pthread_once(&once, load);
  if (!cuda_loaded) return HIP_ERROR_NO_DEVICE;
  int a = cuda_attribute(attribute);
  if (a < 0) return HIP_ERROR_INVALID_VALUE;
  CUdevice dev;
  CUresult rc = p_cuDeviceGet(&dev, device);
  if (rc != CUDA_SUCCESS) return (hipError_t)rc;
  return (hipError_t)p_cuDeviceGetAttribute(value, (CUdevice_attribute)a, dev);
}

// The fields chorus-hip reads, at their offsets in ROCm 5's hipDeviceProp_t and ROCm 6's
// hipDeviceProp_tR0600 (chorus-hip's sys.rs documents and unit-tests the same offsets).
struct layout {
  size_t total_global_mem, warp_size, gcn_arch_name;
};
static const struct layout R0000 = {256, 276, 396};
static const struct layout R0600 = {288, 308, 1160};

static hipError_t properties(void *props, int device, const struct layout *at) {
  char *p = (char *)props;
  hipError_t e = hipDeviceGetName(p, 256, device);
  if (e != 0) return e;
  size_t total = 0;
  if ((e = hipDeviceTotalMem(&total, device)) != 0) return e;
  memcpy(p + at->total_global_mem, &total, sizeof total);
  int warp = 0;
  if ((e = hipDeviceGetAttribute(&warp, 87, device)) != 0) return e;
  memcpy(p + at->warp_size, &warp, sizeof warp);
  snprintf(p + at->gcn_arch_name, 256, "%s", arch_name());
  return 0;
}

hipError_t hipGetDeviceProperties(void *props, int device) {
  return properties(props, device, &R0000);
}

hipError_t hipGetDevicePropertiesR0600(void *props, int device) {
  return properties(props, device, &R0600);
}

hipError_t hipDeviceSynchronize(void) {
  READY();
  return (hipError_t)p_cuCtxSynchronize();
}

hipError_t hipMalloc(void **ptr, size_t size) {
  READY();
  CUdeviceptr d = 0;
  CUresult rc = p_cuMemAlloc(&d, size);
  *ptr = (void *)(uintptr_t)d;
  return (hipError_t)rc;
}

hipError_t hipFree(void *ptr) {
  READY();
  return (hipError_t)p_cuMemFree((CUdeviceptr)(uintptr_t)ptr);
}

// Unified addressing: cuMemcpy takes host and device pointers alike, whatever the kind.
hipError_t hipMemcpy(void *dst, const void *src, size_t size, int kind) {
  (void)kind;
  READY();
  return (hipError_t)p_cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, size);
}

hipError_t hipMemcpyAsync(void *dst, const void *src, size_t size, int kind, void *stream) {
  (void)kind;
  READY();
  return (hipError_t)p_cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src,
                                     size, (CUstream)stream);
}

hipError_t hipMemset(void *dst, int value, size_t size) {
  READY();
  return (hipError_t)p_cuMemsetD8((CUdeviceptr)(uintptr_t)dst, (unsigned char)value, size);
}

hipError_t hipStreamCreate(void **stream) {
  READY();
  return (hipError_t)p_cuStreamCreate((CUstream *)stream, CU_STREAM_DEFAULT);
}

hipError_t hipStreamDestroy(void *stream) {
  READY();
  return (hipError_t)p_cuStreamDestroy((CUstream)stream);
}

hipError_t hipStreamSynchronize(void *stream) {
  READY();
  return (hipError_t)p_cuStreamSynchronize((CUstream)stream);
}

hipError_t hipStreamWaitEvent(void *stream, void *event, unsigned int flags) {
  READY();
  return (hipError_t)p_cuStreamWaitEvent((CUstream)stream, (CUevent)event, flags);
}

hipError_t hipEventCreate(void **event) {
  READY();
  return (hipError_t)p_cuEventCreate((CUevent *)event, CU_EVENT_DEFAULT);
}

hipError_t hipEventDestroy(void *event) {
  READY();
  return (hipError_t)p_cuEventDestroy((CUevent)event);
}

hipError_t hipEventRecord(void *event, void *stream) {
  READY();
  return (hipError_t)p_cuEventRecord((CUevent)event, (CUstream)stream);
}

hipError_t hipEventSynchronize(void *event) {
  READY();
  return (hipError_t)p_cuEventSynchronize((CUevent)event);
}

hipError_t hipEventElapsedTime(float *ms, void *start, void *stop) {
  READY();
  return (hipError_t)p_cuEventElapsedTime(ms, (CUevent)start, (CUevent)stop);
}

hipError_t hipModuleLoadData(void **module, const void *image) {
  READY();
  return (hipError_t)p_cuModuleLoadData((CUmodule *)module, image);
}

hipError_t hipModuleUnload(void *module) {
  READY();
  return (hipError_t)p_cuModuleUnload((CUmodule)module);
}

hipError_t hipModuleGetFunction(void **function, void *module, const char *name) {
  READY();
  return (hipError_t)p_cuModuleGetFunction((CUfunction *)function, (CUmodule)module, name);
}

hipError_t hipModuleGetGlobal(void **ptr, size_t *size, void *module, const char *name) {
  READY();
  CUdeviceptr d = 0;
  CUresult rc = p_cuModuleGetGlobal(&d, size, (CUmodule)module, name);
  *ptr = (void *)(uintptr_t)d;
  return (hipError_t)rc;
}

hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shared, void *stream,
                                 void **params, void **extra) {
  READY();
  return (hipError_t)p_cuLaunchKernel((CUfunction)f, gx, gy, gz, bx, by, bz, shared,
                                      (CUstream)stream, params, extra);
}

// ---- hipRTC over NVRTC -------------------------------------------------------------------

#define HIPRTC_ERROR_INVALID_INPUT 3
#define HIPRTC_ERROR_INTERNAL 11

const char *hiprtcGetErrorString(hiprtcResult code) {
  pthread_once(&once, load);
  if (!nvrtc_loaded) return "NVRTC not found (HIP on CUDA)";
  return p_nvrtcGetErrorString((nvrtcResult)code);
}

hiprtcResult hiprtcVersion(int *major, int *minor) {
  pthread_once(&once, load);
  if (!nvrtc_loaded) return HIPRTC_ERROR_INTERNAL;
  return (hiprtcResult)p_nvrtcVersion(major, minor);
}

hiprtcResult hiprtcCreateProgram(void **program, const char *source, const char *name,
                                 int headers, const char *const *contents,
                                 const char *const *names) {
  pthread_once(&once, load);
  if (!nvrtc_loaded) return HIPRTC_ERROR_INTERNAL;
  return (hiprtcResult)p_nvrtcCreateProgram((nvrtcProgram *)program, source, name, headers,
                                            contents, names);
}

hiprtcResult hiprtcCompileProgram(void *program, int count, const char *const *options) {
  if (ready() != 0) return HIPRTC_ERROR_INTERNAL;
  if (!nvrtc_loaded) return HIPRTC_ERROR_INTERNAL;
  if (count < 0 || count > 256) return HIPRTC_ERROR_INVALID_INPUT;
  CUdevice dev;
  int major = 0, minor = 0;
  if (p_cuDeviceGet(&dev, current_device) != CUDA_SUCCESS ||
      p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
      p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    return HIPRTC_ERROR_INTERNAL;
  const char *translated[300];
  char arch[64];
  char includes[16][1024];
  int n = 0, nincludes = 0;
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  translated[n++] = arch;
  for (int i = 0; i < count; i++) {
    const char *o = options[i];
    if (!strncmp(o, "--gpu-architecture=", 19) || !strncmp(o, "--offload-arch=", 15) ||
        !strcmp(o, "-O3"))
      continue;
    translated[n++] = o;
  }
  const char *dirs = getenv("CHORUS_HIP_ON_CUDA_INCLUDE");
  while (dirs && *dirs && nincludes < 16) {
    const char *end = strchr(dirs, ':');
    size_t len = end ? (size_t)(end - dirs) : strlen(dirs);
    if (len > 0 && len < 1000) {
      snprintf(includes[nincludes], sizeof includes[nincludes], "-I%.*s", (int)len, dirs);
      translated[n++] = includes[nincludes++];
    }
    dirs = end ? end + 1 : NULL;
  }
  return (hiprtcResult)p_nvrtcCompileProgram((nvrtcProgram)program, n, translated);
}

hiprtcResult hiprtcGetProgramLogSize(void *program, size_t *size) {
  return (hiprtcResult)p_nvrtcGetProgramLogSize((nvrtcProgram)program, size);
}

hiprtcResult hiprtcGetProgramLog(void *program, char *log) {
  return (hiprtcResult)p_nvrtcGetProgramLog((nvrtcProgram)program, log);
}

// The code object is the cubin for the device's architecture.
hiprtcResult hiprtcGetCodeSize(void *program, size_t *size) {
  return (hiprtcResult)p_nvrtcGetCUBINSize((nvrtcProgram)program, size);
}

hiprtcResult hiprtcGetCode(void *program, char *code) {
  return (hiprtcResult)p_nvrtcGetCUBIN((nvrtcProgram)program, code);
}

hiprtcResult hiprtcDestroyProgram(void **program) {
  return (hiprtcResult)p_nvrtcDestroyProgram((nvrtcProgram *)program);
}
