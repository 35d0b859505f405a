// Internal to cuda/image/: what the filter variants share: the boundary modes as index maps, the
// element types (float32, uint8) read as float and written back, and the entry points of each
// family for the dispatch in filter.cu.
#ifndef GPULAB_IMAGE_FILTER_CUH
#define GPULAB_IMAGE_FILTER_CUH

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/launch.cuh"
#include "image.h"

// Index i along an axis of n >= 1 pixels under mode; -1 for the zero of GLC_MODE_CONSTANT. The
// modulo forms hold for any i, so a kernel wider than the image reflects as often as it must,
// as scipy.ndimage's do.
__host__ __device__ inline int glc_boundary_index(int i, int n, int mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case GLC_MODE_NEAREST:
      return i < 0 ? 0 : n - 1;
    case GLC_MODE_CONSTANT:
      return -1;
    case GLC_MODE_WRAP: {
      const int m = i % n;
      return m < 0 ? m + n : m;
    }
    case GLC_MODE_MIRROR: {
      if (n == 1) return 0;
      const int period = 2 * n - 2;
      int m = i % period;
      if (m < 0) m += period;
      return m < n ? m : period - m;
    }
    default: {  // GLC_MODE_REFLECT
      const int period = 2 * n;
      int m = i % period;
      if (m < 0) m += period;
      return m < n ? m : period - 1 - m;
    }
  }
}

__device__ inline float glc_pixel_value(float v) { return v; }
__device__ inline float glc_pixel_value(uint8_t v) { return static_cast<float>(v); }

// The float32 sum as the output's element: itself, or for uint8 rounded to nearest (ties to even)
// and saturated (the conversion's .sat form clamps to 0..255 and sends NaN to 0).
__device__ inline void glc_store_pixel(float *out, float v) { *out = v; }
__device__ inline void glc_store_pixel(uint8_t *out, float v) {
  *out = static_cast<uint8_t>(__float2uint_rn(fminf(fmaxf(v, 0.0f), 255.0f)));
}

// Element (row, col) of an image with row_elems elements per row (width x channels), through
// the mode's index maps; col counts pixels, channel picks the element within one.
template <typename T>
__device__ inline float glc_load_mapped(const T *img, int rows, int cols, int channels, int row,
                                        int col, int channel, int mode) {
  const int r = glc_boundary_index(row, rows, mode);
  const int c = glc_boundary_index(col, cols, mode);
  if (r < 0 || c < 0) return 0.0f;
  return glc_pixel_value(img[(static_cast<size_t>(r) * cols + c) * channels + channel]);
}

// The families, each dispatching on dtype (filter_global.cu, filter_texture.cu,
// filter_shared.cu, filter_fused.cu). Arguments as glc_filter's; h, w > 0.
int glc_filter_global(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                      int mode, const void *img, void *out, cudaStream_t stream);
int glc_filter_texture(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                       int mode, const void *img, void *out, cudaStream_t stream);
int glc_filter_shared(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                      int mode, const void *img, void *out, cudaStream_t stream);
int glc_filter_fused(int dtype, int h, int w, int channels, const glc_filter_kernel *kernel,
                     int mode, const void *img, void *out, cudaStream_t stream);

// The direct 2-D kernel of the global and texture variants, by value in the launch's parameters.
struct glc_taps_2d {
  int kh, kw;
  float w[GLC_FILTER_MAX_TAPS_2D];
};

// One axis of a separable kernel, by value in the launch's parameters.
struct glc_taps_1d {
  int n;
  float w[GLC_FILTER_MAX_TAPS];
};

inline glc_taps_1d glc_axis_taps(const float *w, int n) {
  glc_taps_1d t;
  t.n = n;
  for (int i = 0; i < GLC_FILTER_MAX_TAPS; i++) t.w[i] = i < n ? w[i] : 0.0f;
  return t;
}

// Floor division and its non-negative remainder, for element indices left of the image.
__device__ inline int glc_floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The direct kernel (the binding fills w2d, with the factors' outer product for a separable one).
inline glc_taps_2d glc_direct_taps(const glc_filter_kernel *k) {
  glc_taps_2d t;
  t.kh = k->kh;
  t.kw = k->kw;
  for (int a = 0; a < k->kh; a++)
    for (int b = 0; b < k->kw; b++) t.w[a * k->kw + b] = k->w2d[a * k->kw + b];
  return t;
}

#endif
