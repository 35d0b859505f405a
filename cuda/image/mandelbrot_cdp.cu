// Mandelbrot variant 1: Mariani-Silver with CUDA dynamic parallelism (S4 section 1.8, after
// canonizer/mandelbrot-dyn's idea; our own code). A block takes one square: it computes the
// dwells of the square's border; a uniform border fills the square, a square at the smallest
// size is evaluated pixel by pixel, and any other launches a child grid of kMsSubdiv^2 blocks,
// one per sub-square, from the device. When the fill is exact, and when sampling the border at
// pixels misleads it: gpulab/labs/image.py's notes (the dwell bands {dwell >= k} have no holes).
//
// Built with -rdc=true and device-linked against cudadevrt (setup.py: the *_cdp.cu files). CUDA
// 12's dynamic parallelism (CDP2) has no device-side cudaDeviceSynchronize: a parent never waits
// for its children. It need not: a grid completes only when every grid it launched has
// completed, so the host's stream sees the whole tree done when the top-level grid is. The
// children go to cudaStreamFireAndForget, so that sibling squares run concurrently. A child
// launch that fails (the pending-launch limit reached, say) is not lost: the block evaluates its
// square pixel by pixel itself.
#include <atomic>

#include "mandelbrot.cuh"

// A named namespace, not an anonymous one: under -rdc a kernel with internal linkage gets an
// __nv_static_ symbol that does not demangle, and gl.inspect could not match it to the table.
namespace mandelbrot_cdp {

// Deep enough for kMsInitial / kMsSubdiv^k to reach kMsMinSize; a bound for the recursion all
// the same.
constexpr int kMsMaxDepth = 8;

__global__ void mandelbrot_dynamic_square(const double *xlim, const double *ylim, int width,
                                          int height, int max_iter, int *dwell, int x0, int y0,
                                          int side, int depth) {
  __shared__ glc_ms_shared scratch;
  __shared__ int launched;
  const glc_view v = glc_read_view(xlim, ylim, width, height, max_iter);
  const int sx = x0 + blockIdx.x * side, sy = y0 + blockIdx.y * side;
  if (sx >= width || sy >= height) return;  // a sub-square past the image's edge
  const int common = glc_ms_border_dwell(v, sx, sy, side, scratch);
  if (common >= 0 || side <= kMsMinSize || depth + 1 >= kMsMaxDepth) {
    glc_ms_fill(v, dwell, sx, sy, side, common);
    return;
  }
  if (threadIdx.x == 0) {
    mandelbrot_dynamic_square<<<dim3(kMsSubdiv, kMsSubdiv), kMsThreads, 0,
                                cudaStreamFireAndForget>>>(
        xlim, ylim, width, height, max_iter, dwell, sx, sy, side / kMsSubdiv, depth + 1);
    launched = cudaGetLastError() == cudaSuccess;
  }
  __syncthreads();
  if (!launched) glc_ms_fill(v, dwell, sx, sy, side, -1);
}

}  // namespace mandelbrot_cdp

int glc_mandelbrot_dynamic(int width, int height, const double *xlim, const double *ylim,
                           int max_iter, int *dwell, cudaStream_t stream) {
  // Every square that subdivides holds a pending launch until its child grid starts; the
  // default limit (2048) would be reached at 8192 x 8192. Raised once per process, on the device
  // current then (the fallback above keeps results right beyond the limit).
  static std::atomic<bool> raised{false};
  if (!raised.load(std::memory_order_relaxed)) {
    const int code = GLC_CUDA(cudaDeviceSetLimit, cudaLimitDevRuntimePendingLaunchCount, 65536);
    if (code) return code;
    raised.store(true, std::memory_order_relaxed);
  }
  const dim3 grid(static_cast<unsigned>(glc_blocks_to_cover(width, kMsInitial)),
                  static_cast<unsigned>(glc_blocks_to_cover(height, kMsInitial)));
  return glc_launch(mandelbrot_cdp::mandelbrot_dynamic_square, "mandelbrot_dynamic_square", grid,
                    dim3(kMsThreads), stream, xlim, ylim, width, height, max_iter, dwell, 0, 0,
                    kMsInitial, 0);
}
