// The host's question before launching a file's sm_90a kernels (wgmma, setmaxnreg): does the
// current device run them? Those files are compiled for sm_90a in place of sm_90 (setup.py), and
// each sets a __device__ flag of its own to 1 in its sm_90a image only.
#ifndef GPULAB_CUDA_LINALG_SM90A_CUH
#define GPULAB_CUDA_LINALG_SM90A_CUH

#include <cuda_runtime.h>

#include <atomic>

#include "cuda/core/launch.cuh"

// *yes: the current device has compute capability 9.0 and the image loaded for it sets `built`
// (the file's flag, as a symbol) to 1. Asked once a device and kept in the caller's `cached`
// (0: not asked, 1: yes, 2: no).
inline int glc_sm90a_kernels_loaded(const void *built,
                                    std::atomic<int> (&cached)[glc_cached_devices], bool *yes) {
  *yes = false;
  int device = 0, major = 0, minor = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  const bool cacheable = device >= 0 && device < glc_cached_devices;
  const int known = cacheable ? cached[device].load(std::memory_order_relaxed) : 0;
  if (known) {
    *yes = known == 1;
    return cudaSuccess;
  }
  code = GLC_CUDA(cudaDeviceGetAttribute, &major, cudaDevAttrComputeCapabilityMajor, device);
  if (code) return code;
  code = GLC_CUDA(cudaDeviceGetAttribute, &minor, cudaDevAttrComputeCapabilityMinor, device);
  if (code) return code;
  int flag = 0;
  if (major == 9 && minor == 0) {
    code = GLC_CUDA(cudaMemcpyFromSymbol, &flag, built, sizeof flag);
    if (code) return code;
  }
  *yes = flag == 1;
  if (cacheable) cached[device].store(*yes ? 1 : 2, std::memory_order_relaxed);
  return cudaSuccess;
}

#endif
