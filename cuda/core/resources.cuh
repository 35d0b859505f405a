// Internal to cuda/ (every lab may include it): owners of the buffers, streams and events that a
// lab measurement allocates for itself. Each frees what it holds when it goes out of scope, so that
// every early return on an error path leaves nothing behind.
#ifndef GPULAB_LAB_RESOURCES_CUH
#define GPULAB_LAB_RESOURCES_CUH

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <vector>

#include "errors.cuh"
#include "gpulab_core.h"

// Device memory from the stream-ordered pool, freed on the stream it was taken on.
struct GlcDeviceBuffer {
  void *ptr = nullptr;
  cudaStream_t stream = nullptr;
  GlcDeviceBuffer() = default;
  GlcDeviceBuffer(const GlcDeviceBuffer &) = delete;
  GlcDeviceBuffer &operator=(const GlcDeviceBuffer &) = delete;
  int allocate(size_t bytes, cudaStream_t on) {
    stream = on;
    return glc_malloc_async(&ptr, bytes, on);
  }
  template <typename T>
  T *as() const {
    return static_cast<T *>(ptr);
  }
  ~GlcDeviceBuffer() {
    if (ptr) glc_free_async(ptr, stream);
  }
};

// Page-locked host memory, mapped into the device's address space.
struct GlcMappedBuffer {
  void *host = nullptr;
  void *device = nullptr;
  GlcMappedBuffer() = default;
  GlcMappedBuffer(const GlcMappedBuffer &) = delete;
  GlcMappedBuffer &operator=(const GlcMappedBuffer &) = delete;
  int allocate(size_t bytes) {
    int code = glc_host_alloc(&host, bytes);
    return code ? code : glc_host_device_pointer(&device, host);
  }
  ~GlcMappedBuffer() {
    if (host) glc_host_free(host);
  }
};

// cudaMallocManaged memory (migrates between host and device on demand).
struct GlcManagedBuffer {
  void *ptr = nullptr;
  GlcManagedBuffer() = default;
  GlcManagedBuffer(const GlcManagedBuffer &) = delete;
  GlcManagedBuffer &operator=(const GlcManagedBuffer &) = delete;
  int allocate(size_t bytes) {
    return GLC_CUDA(cudaMallocManaged, &ptr, bytes, cudaMemAttachGlobal);
  }
  ~GlcManagedBuffer() {
    if (ptr) cudaFree(ptr);
  }
};

// n non-blocking streams.
struct GlcStreams {
  std::vector<cudaStream_t> s;
  GlcStreams() = default;
  GlcStreams(const GlcStreams &) = delete;
  GlcStreams &operator=(const GlcStreams &) = delete;
  int create(int n) {
    for (int i = 0; i < n; ++i) {
      glc_stream created = nullptr;
      int code = glc_stream_create(&created, 1, 0);
      if (code) return code;
      s.push_back(static_cast<cudaStream_t>(created));
    }
    return cudaSuccess;
  }
  cudaStream_t operator[](size_t i) const { return s[i]; }
  ~GlcStreams() {
    for (cudaStream_t stream : s) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
  }
};

// n events, with timing.
struct GlcEvents {
  std::vector<cudaEvent_t> e;
  GlcEvents() = default;
  GlcEvents(const GlcEvents &) = delete;
  GlcEvents &operator=(const GlcEvents &) = delete;
  int create(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      glc_event created = nullptr;
      int code = glc_event_create(&created, 1);
      if (code) return code;
      e.push_back(static_cast<cudaEvent_t>(created));
    }
    return cudaSuccess;
  }
  cudaEvent_t operator[](size_t i) const { return e[i]; }
  ~GlcEvents() {
    for (cudaEvent_t event : e) {
      cudaEventSynchronize(event);
      cudaEventDestroy(event);
    }
  }
};

// Milliseconds between two recorded events, after waiting for the second.
inline int glc_elapsed_after(cudaEvent_t start, cudaEvent_t end, float *ms) {
  int code = GLC_CUDA(cudaEventSynchronize, end);
  return code ? code : GLC_CUDA(cudaEventElapsedTime, ms, start, end);
}

// Wall-clock time on the host, for the measurements whose cost is the host's own (API calls).
inline double glc_host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The first error of a sequence of calls: GLC_TRY(code, call) runs call only while code is 0.
#define GLC_TRY(code, call)       \
  do {                            \
    if (!(code)) (code) = (call); \
  } while (0)

// CUB's two-phase device calls: run(nullptr, bytes) asks for the scratch size, then
// run(scratch, bytes) does the work; the scratch is never null (a null pointer asks for the size).
template <typename Run>
int glc_with_cub_scratch(Run run, cudaStream_t stream) {
  size_t bytes = 0;
  int code = run(nullptr, bytes);
  GlcDeviceBuffer temp;
  GLC_TRY(code, temp.allocate(bytes ? bytes : 1, stream));
  GLC_TRY(code, run(temp.ptr, bytes));
  return code;
}

#endif
