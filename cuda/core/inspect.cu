// What gl.inspect reads about the kernels of a variant: which ones a call launches (noted at the
// launch, so no table can drift from the code), their compiled resources and their occupancy.
#include <cuda_runtime.h>
#include <cxxabi.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "errors.cuh"
#include "gpulab_core.h"
#include "launch.cuh"

std::atomic<bool> glc_noting_launches{false};

namespace {

std::mutex notes_lock;
std::vector<glc_launch_note> notes;
size_t notes_counted = 0;
std::unordered_set<const void *> noted_kernels;

void copy_truncated(char *dst, size_t capacity, const char *src) {
  size_t n = std::strlen(src);
  if (n >= capacity) n = capacity - 1;
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

}  // namespace

void glc_note_launch(const void *kernel, dim3 grid, dim3 block, unsigned shared_bytes) {
  std::lock_guard<std::mutex> guard(notes_lock);
  if (!glc_noting_launches.load(std::memory_order_relaxed)) return;
  ++notes_counted;
  noted_kernels.insert(kernel);
  if (notes.size() < GLC_MAX_LAUNCH_NOTES)
    notes.push_back({kernel, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, shared_bytes});
}

extern "C" void glc_launch_notes_begin(void) {
  std::lock_guard<std::mutex> guard(notes_lock);
  notes.clear();
  notes_counted = 0;
  glc_noting_launches.store(true, std::memory_order_relaxed);
}

extern "C" int glc_launch_notes_end(glc_launch_note *out, int capacity, int *copied) {
  std::lock_guard<std::mutex> guard(notes_lock);
  glc_noting_launches.store(false, std::memory_order_relaxed);
  size_t kept = notes.size() < static_cast<size_t>(capacity) ? notes.size() : capacity;
  if (kept) std::memcpy(out, notes.data(), kept * sizeof(glc_launch_note));
  *copied = static_cast<int>(kept);
  return static_cast<int>(notes_counted);
}

extern "C" int glc_kernel_was_noted(const void *kernel) {
  std::lock_guard<std::mutex> guard(notes_lock);
  return noted_kernels.count(kernel) != 0;
}

extern "C" int glc_kernel_attributes(const void *kernel, glc_kernel_attrs *attrs) {
  cudaFuncAttributes a;
  int code = GLC_CUDA(cudaFuncGetAttributes, &a, kernel);
  if (code) return code;
  attrs->registers = a.numRegs;
  attrs->max_threads_per_block = a.maxThreadsPerBlock;
  attrs->binary_version = a.binaryVersion;
  attrs->ptx_version = a.ptxVersion;
  attrs->static_shared_bytes = a.sharedSizeBytes;
  attrs->local_bytes = a.localSizeBytes;
  attrs->const_bytes = a.constSizeBytes;
  attrs->max_dynamic_shared_bytes = a.maxDynamicSharedSizeBytes;
  const char *mangled = nullptr;
  if ((code = GLC_CUDA(cudaFuncGetName, &mangled, kernel))) return code;
  copy_truncated(attrs->mangled, sizeof attrs->mangled, mangled);
  int status = 0;
  char *readable = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  copy_truncated(attrs->demangled, sizeof attrs->demangled, status == 0 ? readable : mangled);
  std::free(readable);
  return cudaSuccess;
}

extern "C" int glc_kernel_occupancy(const void *kernel, int block, size_t dynamic_shared_bytes,
                                    int *blocks_per_sm) {
  return GLC_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor, blocks_per_sm, kernel, block,
                  dynamic_shared_bytes);
}

extern "C" int glc_occupancy_limits_get(glc_occupancy_limits *limits) {
  int device = 0, blocks = 0, threads = 0, registers = 0, shared = 0, reserved = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (!code)
    code = GLC_CUDA(cudaDeviceGetAttribute, &blocks, cudaDevAttrMaxBlocksPerMultiprocessor, device);
  if (!code)
    code =
        GLC_CUDA(cudaDeviceGetAttribute, &threads, cudaDevAttrMaxThreadsPerMultiProcessor, device);
  if (!code)
    code = GLC_CUDA(cudaDeviceGetAttribute, &registers, cudaDevAttrMaxRegistersPerMultiprocessor,
                    device);
  if (!code)
    code = GLC_CUDA(cudaDeviceGetAttribute, &shared, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                    device);
  if (!code)
    code = GLC_CUDA(cudaDeviceGetAttribute, &reserved, cudaDevAttrReservedSharedMemoryPerBlock,
                    device);
  if (code) return code;
  *limits = {blocks, threads, registers, static_cast<size_t>(shared),
             static_cast<size_t>(reserved)};
  return cudaSuccess;
}
