// Internal to cuda/ (every lab may include it): what the kernel files share around a launch: the
// size of a full wave of resident blocks, the launch itself and its check.
#ifndef GPULAB_LAUNCH_CUH
#define GPULAB_LAUNCH_CUH

#include <cuda.h>  // driver API types only: cuLaunchKernel is fetched through the runtime
#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <tuple>

#include "errors.cuh"
#include "gpulab_core.h"

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

// gl.inspect's notes of launches (cuda/core/inspect.cu). Off but for the one call gl.inspect
// makes, so a launch pays one relaxed load.
extern std::atomic<bool> glc_noting_launches;
void glc_note_launch(const void *kernel, dim3 grid, dim3 block, unsigned shared_bytes);
inline void glc_note_launch_if_noting(const void *kernel, dim3 grid, dim3 block,
                                      unsigned shared_bytes) {
  if (glc_noting_launches.load(std::memory_order_relaxed))
    glc_note_launch(kernel, grid, block, shared_bytes);
}

// The driver's cuLaunchKernel and the CUfunction of each kernel, looked up once. Small
// asynchronous calls are launch-bound, and on the H100 machine the driver's launch took
// 3.55 us against 3.85 us through the runtime (<<<>>> or cudaLaunchKernel) for an empty kernel
// (docs/labs/saxpy.md). Where either lookup fails, glc_launch falls back to <<<>>>.
using glc_cu_launch_kernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                          unsigned, unsigned, unsigned, CUstream, void **, void **);

inline glc_cu_launch_kernel glc_driver_launch_kernel() {
  static glc_cu_launch_kernel entry = [] {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernel", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<glc_cu_launch_kernel>(fn);
  }();
  return entry;
}

// CUfunction of kernel on the current device; null when the runtime can't say. An
// open-addressing table keyed by (kernel, device): the reduce lab alone has hundreds of kernel
// instantiations, and a lookup sits on every launch.
inline CUfunction glc_function_of(const void *kernel) {
  constexpr size_t slots = 2048;  // a power of two
  static std::mutex lock;
  static struct {
    const void *kernel;
    int device;
    CUfunction function;
  } table[slots];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  std::lock_guard<std::mutex> guard(lock);
  size_t slot = (reinterpret_cast<uintptr_t>(kernel) * 0x9E3779B97F4A7C15ull + device) >> 53;
  for (size_t probe = 0; probe < slots; ++probe, slot = (slot + 1) & (slots - 1)) {
    if (table[slot].kernel == nullptr) break;
    if (table[slot].kernel == kernel && table[slot].device == device) return table[slot].function;
  }
  cudaFunction_t function = nullptr;
  if (cudaGetFuncBySymbol(&function, kernel) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  if (table[slot].kernel == nullptr)
    table[slot] = {kernel, device, reinterpret_cast<CUfunction>(function)};
  return reinterpret_cast<CUfunction>(function);
}

// kernel<<<grid, block, shared_bytes, stream>>>(args...), through the driver when it can.
// Params are the kernel's own parameter types, so that each argument is passed at its declared
// size.
template <typename... Params, typename... Args>
int glc_launch_shared(void (*kernel)(Params...), const char *name, dim3 grid, dim3 block,
                      unsigned shared_bytes, cudaStream_t stream, Args... args) {
  glc_note_launch_if_noting(reinterpret_cast<const void *>(kernel), grid, block, shared_bytes);
  glc_cu_launch_kernel launch = glc_driver_launch_kernel();
  CUfunction function = launch ? glc_function_of(reinterpret_cast<const void *>(kernel)) : nullptr;
  if (function == nullptr) {
    kernel<<<grid, block, shared_bytes, stream>>>(static_cast<Params>(args)...);
    return glc_check_launch(name);
  }
  auto values = std::make_tuple(static_cast<Params>(args)...);
  void *pointers[sizeof...(Params) + 1];
  std::apply(
      [&](auto &...v) {
        int i = 0;
        ((pointers[i++] = &v), ...);
      },
      values);
  // CUresult and cudaError_t share their codes for launch errors (1, 98, 200, 209, 701, ...).
  int code =
      static_cast<int>(launch(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                              shared_bytes, reinterpret_cast<CUstream>(stream), pointers, nullptr));
  return glc_fail(code, name);
}

// kernel<<<grid, block, 0, stream>>>(args...): glc_launch_shared without dynamic shared memory.
template <typename... Params, typename... Args>
int glc_launch(void (*kernel)(Params...), const char *name, dim3 grid, dim3 block,
               cudaStream_t stream, Args... args) {
  return glc_launch_shared(kernel, name, grid, block, 0, stream, args...);
}

#endif
