// gl.devices(): which GPUs can reach each other directly, over what, and how fast.
// The link kind is read from CUDA alone (no NVML): cudaDevP2PAttrNativeAtomicSupported is set
// for peers joined by NVLink (or NVSwitch, or C2C) and not for PCIe peers, where CUDA offers no
// native atomics on peer memory. gpulab/labs/multi.py names the kinds and states the limits.
#include <algorithm>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "cuda/core/errors.cuh"
#include "device_guard.cuh"
#include "multi.h"

int glc_multi_topology(int count, int *access, int *atomics, int *rank) {
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j) {
      int k = i * count + j, code = cudaSuccess;
      access[k] = atomics[k] = rank[k] = 0;
      if (i == j) continue;
      code = GLC_CUDA(cudaDeviceCanAccessPeer, &access[k], i, j);
      if (!code)
        code = GLC_CUDA(cudaDeviceGetP2PAttribute, &atomics[k], cudaDevP2PAttrNativeAtomicSupported,
                        i, j);
      if (!code)
        code = GLC_CUDA(cudaDeviceGetP2PAttribute, &rank[k], cudaDevP2PAttrPerformanceRank, i, j);
      if (code) return code;
    }
  return cudaSuccess;
}

int glc_multi_enable_peer(int from, int to, int *enabled) {
  static std::mutex lock;
  static std::set<std::pair<int, int>> pairs;
  *enabled = 0;
  int can = 0, code = GLC_CUDA(cudaDeviceCanAccessPeer, &can, from, to);
  if (code || !can) return code;
  const std::lock_guard<std::mutex> hold(lock);
  if (!pairs.count({from, to})) {
    DeviceGuard guard;
    code = guard.use(from);
    if (code) return code;
    const cudaError_t result = cudaDeviceEnablePeerAccess(to, 0);
    // Another library in the process (CuPy, torch) may have enabled it first: still enabled.
    if (result == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();
    else if (result != cudaSuccess)
      return glc_fail(result, "cudaDeviceEnablePeerAccess");
    // Peer access covers cudaMalloc memory only: allocations of `to`'s stream-ordered pool
    // (gpulab's arrays, the slabs) need their own grant, or copies between them fail.
    cudaMemPool_t pool;
    code = GLC_CUDA(cudaDeviceGetDefaultMemPool, &pool, to);
    cudaMemAccessDesc access = {};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = from;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    if (!code) code = GLC_CUDA(cudaMemPoolSetAccess, pool, &access, 1);
    if (code) return code;
    pairs.insert({from, to});
  }
  *enabled = 1;
  return cudaSuccess;
}

namespace {

// Median GB/s of repeat copies of bytes from src (device i) to dst (device j), timed on a
// stream of device i; cudaMemcpyPeerAsync goes over the peer link when access is enabled and
// through the host otherwise.
int time_copies(int i, int j, void *dst, const void *src, size_t bytes, int repeat, double *gbps,
                DeviceGuard &guard) {
  int code = guard.use(i);
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (!code) code = GLC_CUDA(cudaStreamCreateWithFlags, &stream, cudaStreamNonBlocking);
  if (!code) code = GLC_CUDA(cudaEventCreate, &start);
  if (!code) code = GLC_CUDA(cudaEventCreate, &stop);
  // warm-up: first-touch mappings, peer link wake-up
  if (!code) code = GLC_CUDA(cudaMemcpyPeerAsync, dst, j, src, i, bytes, stream);
  std::vector<float> ms;
  for (int r = 0; r < repeat && !code; ++r) {
    float t = 0;
    code = GLC_CUDA(cudaEventRecord, start, stream);
    if (!code) code = GLC_CUDA(cudaMemcpyPeerAsync, dst, j, src, i, bytes, stream);
    if (!code) code = GLC_CUDA(cudaEventRecord, stop, stream);
    if (!code) code = GLC_CUDA(cudaEventSynchronize, stop);
    if (!code) code = GLC_CUDA(cudaEventElapsedTime, &t, start, stop);
    if (!code) ms.push_back(t);
  }
  if (!code) {
    std::sort(ms.begin(), ms.end());
    double median =
        ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
    *gbps = median > 0 ? static_cast<double>(bytes) / (median * 1e-3) / 1e9 : 0.0;
  }
  if (stop) cudaEventDestroy(stop);
  if (start) cudaEventDestroy(start);
  if (stream) cudaStreamDestroy(stream);
  return code;
}

}  // namespace

int glc_multi_p2p_bandwidth(int count, size_t bytes, int repeat, double *gbps) {
  if (count < 1 || repeat < 1 || bytes == 0)
    return glc_fail(cudaErrorInvalidValue, "glc_multi_p2p_bandwidth");
  DeviceGuard guard;
  // A source and a destination per device, from cudaMalloc rather than the stream-ordered pool:
  // cudaDeviceEnablePeerAccess opens cudaMalloc'd memory to the peer, while pool memory would
  // need the pool's own access settings, and a one-off measurement gains nothing from the pool.
  std::vector<void *> buffers(2 * count, nullptr);
  int code = cudaSuccess;
  for (int d = 0; d < count && !code; ++d) {
    code = guard.use(d);
    if (!code) code = GLC_CUDA(cudaMalloc, &buffers[2 * d], bytes);
    if (!code) code = GLC_CUDA(cudaMalloc, &buffers[2 * d + 1], bytes);
    if (!code) code = GLC_CUDA(cudaMemset, buffers[2 * d], 1, bytes);
  }
  for (int i = 0; i < count && !code; ++i)
    for (int j = 0; j < count && !code; ++j) {
      int enabled = 0;
      if (i != j) code = glc_multi_enable_peer(i, j, &enabled);
      if (!code)
        code = time_copies(i, j, buffers[2 * j + 1], buffers[2 * i], bytes, repeat,
                           &gbps[i * count + j], guard);
    }
  for (int d = 0; d < count; ++d) {
    guard.use(d);
    if (buffers[2 * d]) cudaFree(buffers[2 * d]);
    if (buffers[2 * d + 1]) cudaFree(buffers[2 * d + 1]);
  }
  return code;
}
