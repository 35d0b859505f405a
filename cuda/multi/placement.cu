// Copies between a whole grid and the GPUs' slabs (gl.multi.jacobi's scatter and gather), the
// grid in host memory or on any device. A piece with device memory or pinned memory at both ends
// is issued async on its own GPU's stream, so the GPUs' copies (peer copies over NVLink, copies
// within a GPU, DMA from pinned memory) run at once. Pageable host memory is staged by the
// driver through its own pinned buffers on the calling thread, which returns only once the
// piece is staged (to a device) or done (to the host): one thread issuing for every GPU would
// serialize them, so each GPU gets a host thread of its own, and with it a CPU core and its own
// link. A staging ring of our own would add per-GPU pinned memory for what the driver's
// pipelined staging already does.
#include <thread>
#include <vector>

#include "cuda/core/errors.cuh"
#include "device_guard.cuh"
#include "multi.h"

namespace {

int issue(const glc_multi_piece &piece) {
  if (piece.bytes == 0) return cudaSuccess;
  return GLC_CUDA(cudaMemcpyAsync, piece.dst, piece.src, piece.bytes, cudaMemcpyDefault,
                  static_cast<cudaStream_t>(piece.stream));
}

// The pageable pieces of one device, on the calling thread, waited for.
int run_pageable(const glc_multi_piece *pieces, const std::vector<int> &mine) {
  int code = cudaSuccess;
  for (int i : mine) {
    if (!code) code = GLC_CUDA(cudaSetDevice, pieces[i].device);
    if (!code) code = issue(pieces[i]);
    if (!code) code = GLC_CUDA(cudaStreamSynchronize, static_cast<cudaStream_t>(pieces[i].stream));
  }
  return code;
}

}  // namespace

int glc_multi_locate(const void *ptr, int *device, int *pageable) {
  int found = -1, is_device = 0;
  int code = glc_pointer_device(ptr, &found, &is_device);
  if (code) return code;
  *device = is_device ? found : -1;
  *pageable = !is_device && found < 0;
  return cudaSuccess;
}

int glc_multi_copy_pieces(int count, const glc_multi_piece *pieces) {
  if (count < 0 || (count > 0 && pieces == nullptr))
    return glc_fail(cudaErrorInvalidValue, "glc_multi_copy_pieces (arguments)");
  DeviceGuard guard;
  std::vector<int> devices;             // the devices with pageable pieces, first seen first
  std::vector<std::vector<int>> paged;  // their pieces
  int code = cudaSuccess;
  for (int i = 0; i < count && !code; ++i) {
    const glc_multi_piece &piece = pieces[i];
    int dst_device, dst_paged, src_device, src_paged;
    code = glc_multi_locate(piece.dst, &dst_device, &dst_paged);
    if (!code) code = glc_multi_locate(piece.src, &src_device, &src_paged);
    if (code) break;
    if (!dst_paged && !src_paged) {
      code = guard.use(piece.device);
      if (!code) code = issue(piece);
      continue;
    }
    size_t k = 0;
    while (k < devices.size() && devices[k] != piece.device) ++k;
    if (k == devices.size()) {
      devices.push_back(piece.device);
      paged.emplace_back();
    }
    paged[k].push_back(i);
  }
  if (!code && !devices.empty()) {
    std::vector<int> codes(devices.size(), cudaSuccess);
    std::vector<std::thread> threads;
    // the first device's pieces run here; a thread that cannot start runs here as well
    for (size_t k = 1; k < devices.size(); ++k) {
      try {
        threads.emplace_back(
            [&codes, &paged, pieces, k] { codes[k] = run_pageable(pieces, paged[k]); });
      } catch (...) {
        codes[k] = run_pageable(pieces, paged[k]);
      }
    }
    codes[0] = run_pageable(pieces, paged[0]);
    for (std::thread &t : threads) t.join();
    for (int c : codes)
      if (c && !code) code = c;
  }
  for (int i = 0; i < count; ++i) {  // the async pieces (and the rest: already done)
    int c = guard.use(pieces[i].device);
    if (!c) c = GLC_CUDA(cudaStreamSynchronize, static_cast<cudaStream_t>(pieces[i].stream));
    if (c && !code) code = c;
  }
  return code;
}
