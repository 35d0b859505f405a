// Internal to cuda/: what the kernel files share around a launch: the dtype dispatch, the
// size of a full wave of resident blocks, and the launch check.
#ifndef GPULAB_LAUNCH_CUH
#define GPULAB_LAUNCH_CUH

#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "errors.cuh"
#include "gpulab_cuda.h"

// Calls body(T{}) where T is the C++ type of a floating-point dtype; other dtypes are refused
// with cudaErrorInvalidValue and `caller` as the failed call. body returns an error code.
template <typename Body>
int glc_dispatch_floating(int dtype, const char *caller, Body &&body) {
  switch (dtype) {
    case GLC_F32:
      return body(float{});
    case GLC_F64:
      return body(double{});
    default:
      return glc_fail(cudaErrorInvalidValue, caller);
  }
}

// Devices beyond this still work, only without a cache.
constexpr int glc_cached_devices = 64;

// SM count of the current device. The attribute is asked once per device: it never changes,
// and the kernels that need it are launched in timing loops.
inline int glc_current_sm_count(int *sm_count) {
  static std::atomic<int> cached[glc_cached_devices] = {};  // zero: not asked yet
  int device = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code != cudaSuccess) return code;
  bool cacheable = device >= 0 && device < glc_cached_devices;
  if (cacheable) {
    *sm_count = cached[device].load(std::memory_order_relaxed);
    if (*sm_count > 0) return cudaSuccess;
  }
  code = GLC_CUDA(cudaDeviceGetAttribute, sm_count, cudaDevAttrMultiProcessorCount, device);
  if (code == cudaSuccess && cacheable) cached[device].store(*sm_count, std::memory_order_relaxed);
  return code;
}

// Number of blocks that fills every SM of the current device once (one full wave) with `kernel`
// launched in blocks of `block` threads. The occupancy calculator accounts for the kernel's
// registers and for the per-SM limits on threads and blocks, which a plain
// max_threads_per_SM / block does not. Cached per device and block size (a multiple of 32 up
// to 1024); each kernel, being a template argument, gets its own cache.
template <auto kernel>
int glc_full_wave_blocks(int block, size_t *blocks) {
  constexpr int cached_block_sizes = 1024 / 32;
  static std::atomic<int> cached[glc_cached_devices][cached_block_sizes] = {};
  int device = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code != cudaSuccess) return code;
  int block_slot = block / 32 - 1;
  bool cacheable = device >= 0 && device < glc_cached_devices && block % 32 == 0 &&
                   block_slot >= 0 && block_slot < cached_block_sizes;
  int per_sm = cacheable ? cached[device][block_slot].load(std::memory_order_relaxed) : 0;
  if (per_sm == 0) {
    code = GLC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor, &per_sm, kernel, block, 0);
    if (code != cudaSuccess) return code;
    // Zero would mean the kernel cannot run with this block at all; let the launch say why.
    if (per_sm < 1) per_sm = 1;
    if (cacheable) cached[device][block_slot].store(per_sm, std::memory_order_relaxed);
  }
  int sm_count = 0;
  code = glc_current_sm_count(&sm_count);
  if (code != cudaSuccess) return code;
  *blocks = static_cast<size_t>(sm_count) * static_cast<size_t>(per_sm);
  return cudaSuccess;
}

// ceil(n / block).
inline size_t glc_blocks_to_cover(size_t n, int block) {
  return n / static_cast<size_t>(block) + (n % static_cast<size_t>(block) != 0);
}

// True when every pointer is non-null and a multiple of `bytes`. Kernels check their element
// pointers with it: a null or misaligned pointer would fault inside the kernel, and that error
// is sticky (it ends CUDA for the whole process), while a refused call is not.
template <typename... Pointers>
bool glc_all_aligned(size_t bytes, const Pointers *...pointers) {
  return ((pointers != nullptr && reinterpret_cast<uintptr_t>(pointers) % bytes == 0) && ...);
}

// The largest gridDim.x any device accepts.
constexpr size_t glc_max_grid_x = INT_MAX;

// Launch errors (bad configuration, missing kernel image) surface only through
// cudaGetLastError; errors of the kernel's execution come later, at a synchronisation.
inline int glc_check_launch(const char *kernel) { return glc_fail(cudaGetLastError(), kernel); }

#endif
