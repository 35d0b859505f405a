// Thin wrappers around the CUDA runtime: each returns the cudaError_t as an int and, on
// failure, records the CUDA call's name for glc_failed_call().
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "errors.cuh"
#include "gpulab_core.h"

namespace {

// Never null, so that the binding can turn it into a string without a check.
thread_local const char *failed_call = "";
// Bytes the failed call asked for when it was glc_malloc_async, else 0.
thread_local size_t failed_bytes = 0;

// Clears the runtime's pending error only when it is code itself, so that an unrelated
// pending error is not swallowed on the way.
void clear_pending(int code) {
  if (cudaPeekAtLastError() == code) cudaGetLastError();
}

cudaStream_t as_stream(glc_stream stream) { return static_cast<cudaStream_t>(stream); }
cudaEvent_t as_event(glc_event event) { return static_cast<cudaEvent_t>(event); }

// cudaErrorNotReady from a query means "still running", not a failure: it is returned as-is,
// neither recorded nor left pending.
int query_result(int code, const char *call) {
  if (code == cudaErrorNotReady) {
    clear_pending(code);
    return code;
  }
  return glc_fail(code, call);
}

// cudaPointerGetAttributes, where memory that CUDA does not know is not a failure but
// cudaMemoryTypeUnregistered.
int pointer_attributes(const void *ptr, cudaPointerAttributes *attributes) {
  int code = cudaPointerGetAttributes(attributes, ptr);
  if (code == cudaErrorInvalidValue) {
    // Runtimes before CUDA 11 answered this for ordinary host memory.
    clear_pending(code);
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -1;
    return cudaSuccess;
  }
  return glc_fail(code, "cudaPointerGetAttributes");
}

// cudaDeviceProp has no such field; the figures are the FP32 units per SM of each
// architecture (CUDA C Programming Guide, "Arithmetic Instructions" throughput table).
int fp32_lanes_per_sm(int major, int minor) {
  switch (major * 10 + minor) {
    case 70:  // Volta
    case 75:  // Turing
    case 80:  // A100
      return 64;
    case 86:  // GA10x
    case 87:  // Orin
    case 89:  // Ada
    case 90:  // Hopper
    case 100:
    case 103:
    case 110:
    case 120:
    case 121:  // Blackwell
      return 128;
    default:
      // Every architecture since Ampere's consumer parts has 128; older ones mostly had 64.
      return major >= 8 ? 128 : 64;
  }
}

}  // namespace

int glc_fail(int code, const char *call) {
  if (code != cudaSuccess) {
    failed_call = call;
    failed_bytes = 0;
    clear_pending(code);
  }
  return code;
}

extern "C" {

int glc_cuda_built(void) { return 1; }

/* ---- errors ---- */

const char *glc_error_name(int code) {
  if (code == GLC_NOT_BUILT) return "gpulabNotBuilt";
  return cudaGetErrorName(static_cast<cudaError_t>(code));
}

const char *glc_error_string(int code) {
  if (code == GLC_NOT_BUILT) return "gpulab was built without CUDA";
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

const char *glc_failed_call(void) { return failed_call; }

size_t glc_failed_bytes(void) { return failed_bytes; }

int glc_error_is_sticky(int code) {
  // The errors that driver_types.h documents as leaving the process in an inconsistent state
  // (only a new process can use CUDA again), plus uncorrectable hardware errors and
  // cudaErrorUnknown, after which the context cannot be trusted either.
  switch (code) {
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContained:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
    case cudaErrorUnknown:
      return 1;
    default:
      return 0;
  }
}

/* ---- device ---- */

int glc_device_count(int *count) { return GLC_CUDA(cudaGetDeviceCount, count); }

int glc_set_device(int device) { return GLC_CUDA(cudaSetDevice, device); }

int glc_get_device(int *device) { return GLC_CUDA(cudaGetDevice, device); }

int glc_device_props_get(int device, glc_device_props *props) {
  cudaDeviceProp prop;
  int code = GLC_CUDA(cudaGetDeviceProperties, &prop, device);
  if (code != cudaSuccess) return code;

  std::memset(props, 0, sizeof(*props));
  static_assert(sizeof(props->name) == sizeof(prop.name), "both are char[256]");
  std::memcpy(props->name, prop.name, sizeof(props->name));
  props->name[sizeof(props->name) - 1] = '\0';
  props->major = prop.major;
  props->minor = prop.minor;
  props->multiprocessors = prop.multiProcessorCount;
  props->total_global_mem = prop.totalGlobalMem;
  props->memory_bus_width = prop.memoryBusWidth;
  props->l2_cache_bytes = prop.l2CacheSize;
  props->shared_mem_per_block = prop.sharedMemPerBlock;
  props->shared_mem_per_block_optin = prop.sharedMemPerBlockOptin;
  props->shared_mem_per_multiprocessor = prop.sharedMemPerMultiprocessor;
  props->regs_per_block = prop.regsPerBlock;
  props->regs_per_multiprocessor = prop.regsPerMultiprocessor;
  props->warp_size = prop.warpSize;
  props->max_threads_per_block = prop.maxThreadsPerBlock;
  props->max_threads_per_multiprocessor = prop.maxThreadsPerMultiProcessor;
  props->async_engine_count = prop.asyncEngineCount;
  props->concurrent_kernels = prop.concurrentKernels;
  props->pci_bus_id = prop.pciBusID;
  props->pci_device_id = prop.pciDeviceID;
  props->pci_domain_id = prop.pciDomainID;
  props->ecc_enabled = prop.ECCEnabled;
  props->memory_pools_supported = prop.memoryPoolsSupported;
  props->fp32_per_sm_per_clock = fp32_lanes_per_sm(prop.major, prop.minor);

  // CUDA 13 removed clockRate and memoryClockRate from cudaDeviceProp; both are in kHz here.
  code = GLC_CUDA(cudaDeviceGetAttribute, &props->clock_khz, cudaDevAttrClockRate, device);
  if (code != cudaSuccess) return code;
  return GLC_CUDA(cudaDeviceGetAttribute, &props->memory_clock_khz, cudaDevAttrMemoryClockRate,
                  device);
}

int glc_versions(int *driver, int *runtime) {
  int code = GLC_CUDA(cudaDriverGetVersion, driver);
  if (code != cudaSuccess) return code;
  return GLC_CUDA(cudaRuntimeGetVersion, runtime);
}

int glc_mem_info(size_t *free_bytes, size_t *total_bytes) {
  return GLC_CUDA(cudaMemGetInfo, free_bytes, total_bytes);
}

/* ---- device memory (stream-ordered pool) ---- */

int glc_pool_init(int device) {
  cudaMemPool_t pool;
  int code = GLC_CUDA(cudaDeviceGetDefaultMemPool, &pool, device);
  if (code != cudaSuccess) return code;
  // The default threshold (0) hands freed memory back to the driver at every synchronisation,
  // so that the next cudaMallocAsync pays for a fresh mapping.
  uint64_t keep_everything = UINT64_MAX;
  return GLC_CUDA(cudaMemPoolSetAttribute, pool, cudaMemPoolAttrReleaseThreshold, &keep_everything);
}

int glc_pool_usage(int device, uint64_t *used, uint64_t *reserved) {
  cudaMemPool_t pool;
  int code = GLC_CUDA(cudaDeviceGetDefaultMemPool, &pool, device);
  if (code != cudaSuccess) return code;
  code = GLC_CUDA(cudaMemPoolGetAttribute, pool, cudaMemPoolAttrUsedMemCurrent, used);
  if (code != cudaSuccess) return code;
  return GLC_CUDA(cudaMemPoolGetAttribute, pool, cudaMemPoolAttrReservedMemCurrent, reserved);
}

int glc_pool_trim(int device) {
  cudaMemPool_t pool;
  int code = GLC_CUDA(cudaDeviceGetDefaultMemPool, &pool, device);
  if (code != cudaSuccess) return code;
  return GLC_CUDA(cudaMemPoolTrimTo, pool, 0);
}

int glc_malloc_async(void **ptr, size_t bytes, glc_stream stream) {
  if (bytes == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  int code = GLC_CUDA(cudaMallocAsync, ptr, bytes, as_stream(stream));
  if (code) failed_bytes = bytes;
  return code;
}

int glc_free_async(void *ptr, glc_stream stream) {
  if (ptr == nullptr) return cudaSuccess;
  return GLC_CUDA(cudaFreeAsync, ptr, as_stream(stream));
}

int glc_memcpy_async(void *dst, const void *src, size_t bytes, glc_stream stream) {
  if (bytes == 0) return cudaSuccess;
  return GLC_CUDA(cudaMemcpyAsync, dst, src, bytes, cudaMemcpyDefault, as_stream(stream));
}

int glc_memset_async(void *ptr, int value, size_t bytes, glc_stream stream) {
  if (bytes == 0) return cudaSuccess;
  return GLC_CUDA(cudaMemsetAsync, ptr, value, bytes, as_stream(stream));
}

int glc_memcpy_sync(void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  return GLC_CUDA(cudaMemcpy, dst, src, bytes, cudaMemcpyDefault);
}

int glc_pointer_device(const void *ptr, int *device, int *is_device) {
  cudaPointerAttributes attributes;
  int code = pointer_attributes(ptr, &attributes);
  if (code != cudaSuccess) return code;
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged:
      *device = attributes.device;
      *is_device = 1;
      break;
    case cudaMemoryTypeHost:  // pinned: the GPU can reach it, but it lives on the host
      *device = attributes.device;
      *is_device = 0;
      break;
    default:  // pageable host memory belongs to no device
      *device = -1;
      *is_device = 0;
      break;
  }
  return cudaSuccess;
}

int glc_host_is_pinned(const void *ptr, int *pinned) {
  cudaPointerAttributes attributes;
  int code = pointer_attributes(ptr, &attributes);
  if (code != cudaSuccess) return code;
  *pinned = attributes.type == cudaMemoryTypeHost;
  return cudaSuccess;
}

/* ---- host memory ---- */

int glc_host_alloc(void **ptr, size_t bytes) {
  if (bytes == 0) {
    *ptr = nullptr;
    return cudaSuccess;
  }
  return GLC_CUDA(cudaHostAlloc, ptr, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
}

int glc_host_device_pointer(void **device_ptr, void *host_ptr) {
  return GLC_CUDA(cudaHostGetDevicePointer, device_ptr, host_ptr, 0);
}

int glc_host_free(void *ptr) {
  if (ptr == nullptr) return cudaSuccess;
  return GLC_CUDA(cudaFreeHost, ptr);
}

int glc_host_register(void *ptr, size_t bytes) {
  return GLC_CUDA(cudaHostRegister, ptr, bytes, cudaHostRegisterPortable);
}

int glc_host_unregister(void *ptr) { return GLC_CUDA(cudaHostUnregister, ptr); }

/* ---- streams and events ---- */

int glc_stream_create(glc_stream *stream, int non_blocking, int priority) {
  // A non-blocking stream does not synchronise with the legacy default stream.
  unsigned int flags = non_blocking ? cudaStreamNonBlocking : cudaStreamDefault;
  cudaStream_t created = nullptr;
  int code = GLC_CUDA(cudaStreamCreateWithPriority, &created, flags, priority);
  *stream = created;
  return code;
}

int glc_stream_destroy(glc_stream stream) { return GLC_CUDA(cudaStreamDestroy, as_stream(stream)); }

int glc_device_synchronize(void) { return GLC_CUDA(cudaDeviceSynchronize); }

int glc_stream_synchronize(glc_stream stream) {
  return GLC_CUDA(cudaStreamSynchronize, as_stream(stream));
}

int glc_stream_query(glc_stream stream) {
  return query_result(cudaStreamQuery(as_stream(stream)), "cudaStreamQuery");
}

int glc_stream_priority_range(int *least, int *greatest) {
  return GLC_CUDA(cudaDeviceGetStreamPriorityRange, least, greatest);
}

int glc_stream_wait_event(glc_stream stream, glc_event event) {
  return GLC_CUDA(cudaStreamWaitEvent, as_stream(stream), as_event(event), 0);
}

int glc_event_create(glc_event *event, int timing) {
  // Without timing, an event is lighter to record and to wait on.
  unsigned int flags = timing ? cudaEventDefault : cudaEventDisableTiming;
  cudaEvent_t created = nullptr;
  int code = GLC_CUDA(cudaEventCreateWithFlags, &created, flags);
  *event = created;
  return code;
}

int glc_event_destroy(glc_event event) { return GLC_CUDA(cudaEventDestroy, as_event(event)); }

int glc_event_record(glc_event event, glc_stream stream) {
  return GLC_CUDA(cudaEventRecord, as_event(event), as_stream(stream));
}

int glc_event_synchronize(glc_event event) {
  return GLC_CUDA(cudaEventSynchronize, as_event(event));
}

int glc_event_query(glc_event event) {
  return query_result(cudaEventQuery(as_event(event)), "cudaEventQuery");
}

int glc_event_elapsed_ms(float *ms, glc_event start, glc_event end) {
  return GLC_CUDA(cudaEventElapsedTime, ms, as_event(start), as_event(end));
}

}  // extern "C"
