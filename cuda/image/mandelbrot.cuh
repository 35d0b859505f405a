// Internal to cuda/image/: the Mandelbrot dwell and what the Mariani-Silver variants share (the
// per-pixel kernel, the host-driven queue and the dynamic-parallelism file). Every operation of
// the iteration is rounded as tests/references/image.py's NumPy iteration rounds it (__dmul_rn,
// __dadd_rn: never contracted into an FMA that would round less often; the one __fma_rn rounds
// exactly what NumPy rounds), in its order, so that each dwell is bit-exact against NumPy's.
#ifndef GPULAB_IMAGE_MANDELBROT_CUH
#define GPULAB_IMAGE_MANDELBROT_CUH

#include <cuda_runtime.h>

#include "cuda/core/launch.cuh"
#include "image.h"

// The view: pixel (i, j) is c = (x0 + (j + 0.5) dx, y0 + (i + 0.5) dy).
struct glc_view {
  double x0, dx, y0, dy;
  int width, height, max_iter;
};

__device__ inline glc_view glc_read_view(const double *xlim, const double *ylim, int width,
                                         int height, int max_iter) {
  glc_view v;
  v.x0 = xlim[0];
  v.dx = __ddiv_rn(__dsub_rn(xlim[1], xlim[0]), static_cast<double>(width));
  v.y0 = ylim[0];
  v.dy = __ddiv_rn(__dsub_rn(ylim[1], ylim[0]), static_cast<double>(height));
  v.width = width;
  v.height = height;
  v.max_iter = max_iter;
  return v;
}

// The first n >= 1 with |z_n|^2 > 4 (z_0 = 0), or max_iter.
__device__ inline int glc_dwell(const glc_view &v, int row, int col) {
  const double cx = __dadd_rn(v.x0, __dmul_rn(col + 0.5, v.dx));
  const double cy = __dadd_rn(v.y0, __dmul_rn(row + 0.5, v.dy));
  double zr = 0.0, zi = 0.0;
  int n = 0;
  while (n < v.max_iter) {
    const double zr2 = __dmul_rn(zr, zr), zi2 = __dmul_rn(zi, zi);
    if (__dadd_rn(zr2, zi2) > 4.0) break;
    // NumPy's (t + t) + cy in one operation: t + t = 2t is exact (or infinite, where the fused
    // form overflows too), so rounding 2t + cy once is rounding (t + t) + cy: 7 float64
    // operations an iteration instead of 8, bit for bit the same.
    const double t = __dmul_rn(zr, zi);
    zi = __fma_rn(t, 2.0, cy);
    zr = __dadd_rn(__dsub_rn(zr2, zi2), cx);
    n++;
  }
  return n;
}

// Mariani-Silver's rectangles: squares of side kMsInitial at the top level, each subdivided
// into kMsSubdiv x kMsSubdiv squares while its side is above kMsMinSize; a square at
// kMsMinSize whose border is not uniform is evaluated pixel by pixel. Squares at the right and
// bottom edges are clipped to the image (their border is the clipped one's).
constexpr int kMsInitial = 256;
constexpr int kMsSubdiv = 4;
constexpr int kMsMinSize = 16;
constexpr int kMsThreads = 256;
constexpr int kMsWarps = kMsThreads / 32;

// The warps' partial minima and maxima of glc_ms_border_dwell, in the calling kernel's shared
// memory (a kernel's own __shared__ variable, not one of an inline function's: the
// dynamic-parallelism file is relocatable device code).
struct glc_ms_shared {
  int lows[kMsWarps], highs[kMsWarps];
};

// The dwell every border pixel of the clipped square (x0, y0, side) shares, or -1 when they
// differ: a block-wide call (every thread of a 1-D block of kMsThreads returns the answer).
__device__ inline int glc_ms_border_dwell(const glc_view &v, int x0, int y0, int side,
                                          glc_ms_shared &s) {
  const int w = min(side, v.width - x0), h = min(side, v.height - y0);
  // the border walked as one sequence: top row, bottom row, then the columns between them
  const int top_bottom = h > 1 ? 2 * w : w;
  const int sides = w > 1 ? 2 * max(h - 2, 0) : max(h - 2, 0);
  int low = INT_MAX, high = INT_MIN;
  for (int k = threadIdx.x; k < top_bottom + sides; k += blockDim.x) {
    int row, col;
    if (k < top_bottom) {
      row = k < w ? y0 : y0 + h - 1;
      col = x0 + (k < w ? k : k - w);
    } else {
      const int s = k - top_bottom;
      const int between = max(h - 2, 0);
      row = y0 + 1 + s % between;
      col = s < between ? x0 : x0 + w - 1;
    }
    const int d = glc_dwell(v, row, col);
    low = min(low, d);
    high = max(high, d);
  }
  low = __reduce_min_sync(0xffffffffu, low);
  high = __reduce_max_sync(0xffffffffu, high);
  if (threadIdx.x % 32 == 0) {
    s.lows[threadIdx.x / 32] = low;
    s.highs[threadIdx.x / 32] = high;
  }
  __syncthreads();
  low = s.lows[0];
  high = s.highs[0];
  for (int i = 1; i < kMsWarps; i++) {
    low = min(low, s.lows[i]);
    high = max(high, s.highs[i]);
  }
  __syncthreads();  // s is reused by the block's next call
  return low == high ? low : -1;
}

// The clipped square filled with one dwell, or evaluated pixel by pixel (dwell < 0), by the
// block.
__device__ inline void glc_ms_fill(const glc_view &v, int *out, int x0, int y0, int side,
                                   int dwell) {
  const int w = min(side, v.width - x0), h = min(side, v.height - y0);
  for (int k = threadIdx.x; k < w * h; k += blockDim.x) {
    const int row = y0 + k / w, col = x0 + k % w;
    out[static_cast<size_t>(row) * v.width + col] = dwell >= 0 ? dwell : glc_dwell(v, row, col);
  }
}

// The dynamic-parallelism variant (mandelbrot_cdp.cu, compiled with -rdc=true).
int glc_mandelbrot_dynamic(int width, int height, const double *xlim, const double *ylim,
                           int max_iter, int *dwell, cudaStream_t stream);

#endif
