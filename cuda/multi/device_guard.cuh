// The multi lab's functions switch devices; gpulab itself runs on device 0. A DeviceGuard puts
// the calling thread's current device back as it was when the guard goes out of scope.
#ifndef GPULAB_CUDA_MULTI_DEVICE_GUARD_CUH
#define GPULAB_CUDA_MULTI_DEVICE_GUARD_CUH

#include <cuda_runtime.h>

#include "cuda/core/errors.cuh"

class DeviceGuard {
 public:
  DeviceGuard() { ok_ = cudaGetDevice(&saved_) == cudaSuccess; }
  ~DeviceGuard() {
    if (ok_) cudaSetDevice(saved_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  int use(int device) { return GLC_CUDA(cudaSetDevice, device); }

 private:
  int saved_ = 0;
  bool ok_ = false;
};

#endif
