// The Jacobi solver (glc_jacobi): the sweep loop on the device, two grids in turn, the residual
// reduced on the device into one scalar that is the only thing copied back, once per check.
// Variant 0 sweeps and then reduces the last update in a separate pass over both grids; 1 has
// the checked sweep reduce its own update; 2 runs `depth` sweeps per launch (jacobi_temporal.cu);
// 3 captures a check's worth of variant 1's launches (and the residual's reset) as a CUDA graph
// once and replays it, one launch per check instead of check_every.
#include <utility>

#include "cuda/core/interrupt.h"
#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/stencil/jacobi.cuh"
#include "cuda/stencil/stencil.h"

namespace {

template <typename T>
struct problem {
  int variant, depth, ndim;
  size_t rows, cols, planes;  // 2D: planes = 1
  T h2;
  const T *f;
  T *residual;  // device scalar
  cudaStream_t stream;
};

template <typename T>
int sweep(const problem<T> &p, const T *u, T *u_new, bool fused_residual, cudaStream_t stream) {
  T *res = fused_residual ? p.residual : nullptr;
  if (p.ndim == 2)
    return glc_jacobi_rows(u, u_new, p.f, p.rows, p.cols, 1, p.rows - 1, p.h2, res, stream);
  return glc_jacobi_planes(u, u_new, p.f, p.planes, p.rows, p.cols, 1, p.planes - 1, p.h2, res,
                           stream);
}

// `count` sweeps from *cur, the last one's update reduced into p.residual (zeroed first); *cur
// ends on the newest grid.
template <typename T>
int chunk(const problem<T> &p, T **cur, T **next, size_t count, cudaStream_t stream) {
  int code = GLC_CUDA(cudaMemsetAsync, p.residual, 0, sizeof(T), stream);
  size_t done = 0;
  while (code == cudaSuccess && done < count) {
    // A chunk can be seconds of launches: the host blocks in them once the launch queue is full.
    // Not while variant 3 captures: a handler's own CUDA calls would be captured or refused.
    if (stream == p.stream) code = glc_check_interrupt();
    if (code) break;
    size_t step = 1;
    if (p.variant == GLC_JACOBI_TEMPORAL) {
      step = count - done < static_cast<size_t>(p.depth) ? count - done : p.depth;
      code =
          glc_jacobi_temporal(*cur, *next, p.f, p.rows, p.cols, 0, p.rows, static_cast<int>(step),
                              p.h2, done + step == count ? p.residual : nullptr, stream);
    } else {
      const bool fused = p.variant != GLC_JACOBI_PER_SWEEP && done + 1 == count;
      code = sweep(p, *cur, *next, fused, stream);
    }
    std::swap(*cur, *next);
    done += step;
  }
  if (code == cudaSuccess && p.variant == GLC_JACOBI_PER_SWEEP)
    code = glc_jacobi_residual(*next, *cur, p.rows * p.cols * p.planes, p.residual, stream);
  return code;
}

// Variant 3's graphs: one per parity of the starting grid (an odd check_every alternates them).
template <typename T>
class chunk_graphs {
 public:
  ~chunk_graphs() {
    for (auto exec : execs_)
      if (exec) cudaGraphExecDestroy(exec);
  }
  int run(const problem<T> &p, T *a, T *b, bool from_b, size_t count) {
    cudaGraphExec_t &exec = execs_[from_b];
    if (!exec) {
      // captured on a stream of our own: the caller's may be the legacy stream, which cannot be
      int code = glc_jacobi_load_sweeps<T>();
      if (code != cudaSuccess) return code;
      cudaStream_t capture = nullptr;
      code = GLC_CUDA(cudaStreamCreateWithFlags, &capture, cudaStreamNonBlocking);
      if (code != cudaSuccess) return code;
      code = GLC_CUDA(cudaStreamBeginCapture, capture, cudaStreamCaptureModeThreadLocal);
      T *cur = from_b ? b : a, *next = from_b ? a : b;
      if (code == cudaSuccess) code = chunk(p, &cur, &next, count, capture);
      cudaGraph_t graph = nullptr;
      int end = GLC_CUDA(cudaStreamEndCapture, capture, &graph);
      if (code == cudaSuccess) code = end;
      if (code == cudaSuccess)
        code = GLC_CUDA(cudaGraphInstantiate, &exec, graph, static_cast<unsigned long long>(0));
      if (graph) cudaGraphDestroy(graph);
      cudaStreamDestroy(capture);
      if (code != cudaSuccess) return code;
    }
    return GLC_CUDA(cudaGraphLaunch, exec, p.stream);
  }

 private:
  cudaGraphExec_t execs_[2] = {nullptr, nullptr};
};

template <typename T>
int solve(problem<T> &p, size_t max_sweeps, double tol, size_t check_every, const T *u0, T *u,
          double *residuals, size_t capacity, glc_jacobi_result *result) {
  const size_t n = p.rows * p.cols * p.planes;
  void *scratch = nullptr;
  int code = GLC_CUDA(cudaMallocAsync, &scratch, (n + 1) * sizeof(T), p.stream);
  if (code != cudaSuccess) return code;
  T *other = static_cast<T *>(scratch);
  p.residual = other + n;
  // both grids hold u0: the boundary cells are never written again
  code = GLC_CUDA(cudaMemcpyAsync, u, u0, n * sizeof(T), cudaMemcpyDeviceToDevice, p.stream);
  if (code == cudaSuccess)
    code = GLC_CUDA(cudaMemcpyAsync, other, u0, n * sizeof(T), cudaMemcpyDeviceToDevice, p.stream);
  T *cur = u, *next = other;
  chunk_graphs<T> graphs;
  const double scale = 2.0 * p.ndim / static_cast<double>(p.h2);
  while (code == cudaSuccess && result->sweeps < max_sweeps) {
    code = glc_check_interrupt();  // variant 3 launches a whole check at once
    if (code) break;
    const size_t count =
        max_sweeps - result->sweeps < check_every ? max_sweeps - result->sweeps : check_every;
    if (p.variant == GLC_JACOBI_GRAPH && count == check_every) {
      code = graphs.run(p, u, other, cur == other, count);
      if (count % 2) std::swap(cur, next);
    } else {
      code = chunk(p, &cur, &next, count, p.stream);
    }
    T largest = T(0);
    if (code == cudaSuccess)
      code = GLC_CUDA(cudaMemcpyAsync, &largest, p.residual, sizeof(T), cudaMemcpyDeviceToHost,
                      p.stream);
    if (code == cudaSuccess) code = GLC_CUDA(cudaStreamSynchronize, p.stream);
    if (code != cudaSuccess) break;
    result->sweeps += count;
    const double residual = static_cast<double>(largest) * scale;
    if (glc_jacobi_record_check(residual, tol, residuals, capacity, &result->checks,
                                &result->converged))
      break;
  }
  if (code == cudaSuccess && cur != u)
    code = GLC_CUDA(cudaMemcpyAsync, u, cur, n * sizeof(T), cudaMemcpyDeviceToDevice, p.stream);
  cudaFreeAsync(scratch, p.stream);
  // Interrupted: the launches already queued finish before the caller frees u (and the graphs
  // are destroyed); a few hundred sweeps at most, as the launch queue holds no more.
  if (code == GLC_INTERRUPTED) cudaStreamSynchronize(p.stream);
  return code;
}

}  // namespace

extern "C" int glc_jacobi(int variant, int depth, int dtype, int ndim, const size_t *shape,
                          double h, size_t max_sweeps, double tol, size_t check_every,
                          const void *f, const void *u0, void *u, double *residuals,
                          size_t capacity, glc_jacobi_result *result, glc_stream stream) {
  if (result == nullptr || shape == nullptr || (ndim != 2 && ndim != 3) || check_every == 0 ||
      !(h > 0) || (capacity && residuals == nullptr))
    return glc_fail(cudaErrorInvalidValue, "glc_jacobi (arguments)");
  if (variant < GLC_JACOBI_PER_SWEEP || variant > GLC_JACOBI_GRAPH)
    return glc_fail(cudaErrorInvalidValue, "glc_jacobi (unknown variant)");
  if (variant == GLC_JACOBI_TEMPORAL && ndim != 2)
    return glc_fail(cudaErrorInvalidValue, "glc_jacobi (temporal blocking is 2D only)");
  *result = {0, 0, 0};
  size_t n = 1;
  for (int a = 0; a < ndim; ++a) {
    if (shape[a] >= (size_t{1} << 31)) return glc_fail(cudaErrorInvalidValue, "glc_jacobi (shape)");
    n *= shape[a];
  }
  if (n == 0) {  // nothing to sweep: every sweep and check is done at once, its residual 0
    result->sweeps = max_sweeps;
    result->checks = max_sweeps / check_every + (max_sweeps % check_every != 0);
    for (size_t i = 0; i < result->checks && i < capacity; ++i) residuals[i] = 0.0;
    result->converged = tol > 0 && max_sweeps > 0;
    return cudaSuccess;
  }
  return glc_dispatch_floating(dtype, "glc_jacobi (dtype)", [&](auto zero) {
    using T = decltype(zero);
    if (!glc_all_aligned(sizeof(T), static_cast<const T *>(f), static_cast<const T *>(u0),
                         static_cast<const T *>(u)))
      return glc_fail(cudaErrorInvalidValue, "glc_jacobi (pointers)");
    problem<T> p;
    p.variant = variant;
    p.depth = depth ? depth : 4;
    p.ndim = ndim;
    p.planes = ndim == 3 ? shape[0] : 1;
    p.rows = shape[ndim - 2];
    p.cols = shape[ndim - 1];
    p.h2 = static_cast<T>(h * h);
    p.f = static_cast<const T *>(f);
    p.residual = nullptr;
    p.stream = static_cast<cudaStream_t>(stream);
    return solve(p, max_sweeps, tol, check_every, static_cast<const T *>(u0), static_cast<T *>(u),
                 residuals, capacity, result);
  });
}
