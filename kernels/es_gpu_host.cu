/*
 * es_gpu_host.cu - the CUDA engine's host side that is no GPU's plan: the devices' names and
 * versions, page-locked host memory (allocation, registration, the pinned test) and the home
 * device whose context a thread without one borrows for those calls, and the process's first
 * call into CUDA (traced). Workers and their launches: es_gpu.cu.
 */
#include <cuda.h> /* driver types only: its calls come through cudaGetDriverEntryPointByVersion */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "es_gpu.h"
#include "es_gpu_internal.cuh"

/* The process's first call into CUDA (the runtime then loads the driver and runs cuInit:
 * 0.2-1.1 s on the GPU hosts), traced once with the entry point that made it: a run that
 * cannot use a GPU (--device cpu, only frames below --cpu-below) must show none
 * (test_cli_cuda_start). */
void cuda_note(const char *entry) {
  static int seen;
  if (!__atomic_load_n(&seen, __ATOMIC_RELAXED) && !__atomic_exchange_n(&seen, 1, __ATOMIC_ACQ_REL))
    es_trace("CUDA: first call (%s)", entry);
}

/* The home device: the first GPU this process opened a worker on. A runtime call on a thread
 * with no CUDA context (the CLI's decoder pinning its frames, a caller's thread in es_host_pin)
 * binds the primary context of that thread's current device, device 0 unless set: a GPU the
 * user may have left out with --gpus, which then got a context (memory, start-up time), and
 * whose refusal (exclusive mode, in use) left every frame pageable. So such a thread's host
 * memory calls (pin, unpin, the pinned test, pinned allocation) run in the home device's
 * context, bound for the call and unbound after it; a thread that has a context (a GPU
 * worker, a caller's own CUDA thread) keeps using its own. Page-locked memory is registered
 * portable, so it is page-locked for every GPU whichever context registered it. */
static int g_home_dev = -1;
typedef CUresult (*es_ctx_get_fn)(CUcontext *);
typedef CUresult (*es_ctx_set_fn)(CUcontext);
static es_ctx_get_fn p_ctx_get;
static es_ctx_set_fn p_ctx_set;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

/* A driver API function by name, through the runtime (no libcuda link), or NULL. */
static void *drv_entry(const char *name) {
  void *f = NULL;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return f;
}

static void drv_load(void) {
  p_ctx_get = (es_ctx_get_fn)drv_entry("cuCtxGetCurrent");
  p_ctx_set = (es_ctx_set_fn)drv_entry("cuCtxSetCurrent");
}

void gpu_home_set(int device) {
  int none = -1;
  __atomic_compare_exchange_n(&g_home_dev, &none, device, false, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
}

/* Binds the home device's context to a thread that has none; 1 when it did (home_leave
 * unbinds it). */
static int home_enter(void) {
  const int home = __atomic_load_n(&g_home_dev, __ATOMIC_ACQUIRE);
  CUcontext cur = NULL;
  if (home < 0) return 0;
  pthread_once(&drv_once, drv_load);
  if (!p_ctx_get || !p_ctx_set || p_ctx_get(&cur) != CUDA_SUCCESS || cur) return 0;
  if (cudaSetDevice(home) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return 1;
}

static void home_leave(int entered) {
  if (entered) p_ctx_set(NULL);
}

/* What kind of memory p is (cudaPointerGetAttributes, in the home device's context), asked
 * once a pointer. Page-locked host memory and device (or managed) memory of any GPU (e.g. a
 * CuPy array) are reached by a copy engine without the host's help: range_compute moves them
 * by cudaMemcpy*Async with cudaMemcpyDefault (unified addressing tells the direction, a peer
 * GPU's memory is copied device to device), never through the pageable staging (a host memcpy
 * of a device pointer would fault). why: the first-call trace's words, or NULL. */
int gpu_mem_kind(const void *p, const char *why) {
  cudaPointerAttributes a;
  int kind = ES_GPU_MEM_PAGEABLE;
  if (!p) return kind;
  if (why) cuda_note(why);
  const int h = home_enter();
  if (cudaPointerGetAttributes(&a, p) == cudaSuccess) {
    if (a.type == cudaMemoryTypeHost) kind = ES_GPU_MEM_PINNED;
    else if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged)
      kind = ES_GPU_MEM_DEVICE;
  } else {
    cudaGetLastError();
  }
  home_leave(h);
  return kind;
}

int gpu_is_pinned(const void *p) { return gpu_mem_kind(p, "pinned test") == ES_GPU_MEM_PINNED; }

/* ---- identification ---- */

extern "C" int es_gpu_built(void) { return 1; }

extern "C" int es_gpu_device_count(void) {
  int n = 0;
  cuda_note("device count");
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

extern "C" int es_gpu_describe(int device, char *buf, size_t len) {
  cudaDeviceProp pr;
  cuda_note("describe");
  if (cudaGetDeviceProperties(&pr, device) != cudaSuccess) {
    cudaGetLastError();
    if (buf && len) snprintf(buf, len, "GPU %d: not available", device);
    return ES_ERR_DEVICE;
  }
  if (buf && len)
    snprintf(buf, len, "GPU %d: %s, %d SMs, %.1f GiB, cc %d.%d", device, pr.name,
             pr.multiProcessorCount, (double)pr.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
             pr.major, pr.minor);
  return ES_OK;
}

extern "C" int es_gpu_versions(char *buf, size_t len) {
  int rt = 0, dr = 0;
  cuda_note("versions");
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&dr);
  cudaGetLastError();
  /* cudaDriverGetVersion gives 0 where no driver is installed: say so, not "driver 0.0". */
  if (buf && len && dr <= 0)
    snprintf(buf, len, "CUDA runtime %d.%d, no CUDA driver", rt / 1000, (rt % 1000) / 10);
  else if (buf && len)
    snprintf(buf, len, "CUDA runtime %d.%d, driver %d.%d", rt / 1000, (rt % 1000) / 10, dr / 1000,
             (dr % 1000) / 10);
  return ES_OK;
}

extern "C" void *es_gpu_host_alloc(size_t bytes) {
  void *p = NULL;
  if (bytes == 0) bytes = 1;
  if (es_gpu_device_count() > 0 && cudaMallocHost(&p, bytes) == cudaSuccess) return p;
  cudaGetLastError();
  return malloc(bytes);
}

extern "C" void es_gpu_host_free(void *p) {
  if (!p) return;
  if (gpu_is_pinned(p)) {
    cudaFreeHost(p);
    return;
  }
  free(p);
}

extern "C" int es_gpu_context_active(int device) {
  typedef CUresult (*state_fn)(CUdevice, unsigned int *, int *);
  const state_fn f = (state_fn)drv_entry("cuDevicePrimaryCtxGetState");
  unsigned int flags = 0;
  int active = 0;
  cuda_note("context state");
  if (!f || f((CUdevice)device, &flags, &active) != CUDA_SUCCESS) return -1;
  return active;
}

extern "C" int es_gpu_host_register(void *p, size_t bytes) {
  if (!p || !bytes) return 0;
  cuda_note("host register");
  const int h = home_enter();
  const int ok = cudaHostRegister(p, bytes, cudaHostRegisterPortable) == cudaSuccess;
  if (!ok) cudaGetLastError();
  home_leave(h);
  return ok;
}

extern "C" int es_gpu_is_pinned(const void *p) { return gpu_is_pinned(p); }

extern "C" void es_gpu_host_unregister(void *p) {
  if (!p) return;
  const int h = home_enter();
  if (cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
  home_leave(h);
}

extern "C" int es_gpu_set_blocking_sync(int device) {
  cuda_note("blocking sync");
  if (cudaSetDevice(device) != cudaSuccess ||
      cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  es_trace("GPU %d: blocking sync", device);
  return 0;
}
