// Device memory on any device, for the multi lab's arrays on GPUs other than gpulab's device 0
// (gpulab's own pool and block cache serve device 0 only). One non-blocking stream per device,
// created on first use and kept for the life of the process, orders the allocations.
#include <mutex>

#include "cuda/core/errors.cuh"
#include "cuda/core/launch.cuh"
#include "device_guard.cuh"
#include "multi.h"

namespace {

std::mutex streams_lock;
cudaStream_t streams[glc_cached_devices];

// The lab's stream on the current device `device`.
int device_stream(int device, cudaStream_t *stream) {
  if (device < 0 || device >= glc_cached_devices)
    return glc_fail(cudaErrorInvalidDevice, "multi: device ordinal past 63");
  std::lock_guard<std::mutex> guard(streams_lock);
  if (streams[device] == nullptr) {
    // the pool keeps freed memory, as device 0's does (see make_comm in nccl.cu)
    int code = glc_pool_init(device);
    if (!code) code = GLC_CUDA(cudaStreamCreateWithFlags, &streams[device], cudaStreamNonBlocking);
    if (code) return code;
  }
  *stream = streams[device];
  return cudaSuccess;
}

}  // namespace

int glc_multi_device_stream(int device, glc_stream *stream) {
  DeviceGuard guard;
  cudaStream_t made = nullptr;
  int code = guard.use(device);
  if (!code) code = device_stream(device, &made);
  *stream = made;
  return code;
}

int glc_multi_alloc(int device, size_t bytes, void **ptr) {
  DeviceGuard guard;
  cudaStream_t stream = nullptr;
  int code = guard.use(device);
  if (!code) code = device_stream(device, &stream);
  if (!code) code = GLC_CUDA(cudaMallocAsync, ptr, bytes == 0 ? 1 : bytes, stream);
  if (!code) code = GLC_CUDA(cudaStreamSynchronize, stream);
  return code;
}

int glc_multi_free(int device, void *ptr) {
  DeviceGuard guard;
  cudaStream_t stream = nullptr;
  int code = guard.use(device);
  if (!code) code = device_stream(device, &stream);
  // Any stream of any library may still read the memory: wait for the whole device.
  if (!code) code = GLC_CUDA(cudaDeviceSynchronize);
  if (!code) code = GLC_CUDA(cudaFreeAsync, ptr, stream);
  if (!code) code = GLC_CUDA(cudaStreamSynchronize, stream);
  return code;
}

int glc_multi_copy(int device, void *dst, const void *src, size_t bytes) {
  DeviceGuard guard;
  cudaStream_t stream = nullptr;
  int code = guard.use(device);
  if (!code) code = device_stream(device, &stream);
  // Work of other streams on the arrays (an all-reduce, a kernel) must be done first.
  if (!code) code = GLC_CUDA(cudaDeviceSynchronize);
  if (!code && bytes) code = GLC_CUDA(cudaMemcpyAsync, dst, src, bytes, cudaMemcpyDefault, stream);
  if (!code) code = GLC_CUDA(cudaStreamSynchronize, stream);
  return code;
}

int glc_multi_device_synchronize(int device) {
  DeviceGuard guard;
  int code = guard.use(device);
  if (!code) code = GLC_CUDA(cudaDeviceSynchronize);
  return code;
}
