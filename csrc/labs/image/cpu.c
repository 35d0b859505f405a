/* The image lab's CPU variants (cpu.h): the filters and the Mandelbrot dwell map, rows across
 * OpenMP threads. */
#include "cpu.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* cuda/image/filter.cuh's glc_boundary_index, for the host. */
static int boundary_index(long i, long n, int mode) {
  if (i >= 0 && i < n) return (int)i;
  switch (mode) {
    case GLC_MODE_NEAREST:
      return i < 0 ? 0 : (int)n - 1;
    case GLC_MODE_CONSTANT:
      return -1;
    case GLC_MODE_WRAP: {
      long m = i % n;
      return (int)(m < 0 ? m + n : m);
    }
    case GLC_MODE_MIRROR: {
      if (n == 1) return 0;
      const long period = 2 * n - 2;
      long m = i % period;
      if (m < 0) m += period;
      return (int)(m < n ? m : period - m);
    }
    default: {
      const long period = 2 * n;
      long m = i % period;
      if (m < 0) m += period;
      return (int)(m < n ? m : period - 1 - m);
    }
  }
}

static float read_pixel(int dtype, const void *img, size_t index) {
  return dtype == GLC_U8 ? (float)((const uint8_t *)img)[index] : ((const float *)img)[index];
}

/* As the kernels store: uint8 rounded to nearest (ties to even) and saturated. */
static void write_pixel(int dtype, void *out, size_t index, float v) {
  if (dtype == GLC_U8)
    ((uint8_t *)out)[index] = (uint8_t)nearbyintf(fminf(fmaxf(v, 0.0f), 255.0f));
  else
    ((float *)out)[index] = v;
}

/* The direct 2-D correlation, one output row at a time. */
static void filter_direct(int dtype, long h, long w, int channels, const glc_filter_kernel *k,
                          int mode, const void *img, void *out) {
#pragma omp parallel for schedule(static)
  for (long row = 0; row < h; row++)
    for (long col = 0; col < w; col++)
      for (int ch = 0; ch < channels; ch++) {
        float sum = 0.0f;
        for (int a = 0; a < k->kh; a++) {
          const int r = boundary_index(row + a - k->kh / 2, h, mode);
          if (r < 0) continue;
          for (int b = 0; b < k->kw; b++) {
            const int c = boundary_index(col + b - k->kw / 2, w, mode);
            if (c < 0) continue;
            sum +=
                k->w2d[a * k->kw + b] * read_pixel(dtype, img, ((size_t)r * w + c) * channels + ch);
          }
        }
        write_pixel(dtype, out, ((size_t)row * w + col) * channels + ch, sum);
      }
}

/* A separable kernel: the row pass into a float32 scratch image, then the column pass. */
static int filter_separable(int dtype, long h, long w, int channels, const glc_filter_kernel *k,
                            int mode, const void *img, void *out) {
  const size_t row_elems = (size_t)w * channels;
  float *tmp = malloc((size_t)h * row_elems * sizeof(float));
  if (!tmp) return -1;
#pragma omp parallel for schedule(static)
  for (long row = 0; row < h; row++)
    for (long col = 0; col < w; col++)
      for (int ch = 0; ch < channels; ch++) {
        float sum = 0.0f;
        for (int b = 0; b < k->kw; b++) {
          const int c = boundary_index(col + b - k->kw / 2, w, mode);
          if (c >= 0)
            sum += k->wx[b] * read_pixel(dtype, img, row * row_elems + (size_t)c * channels + ch);
        }
        tmp[row * row_elems + col * channels + ch] = sum;
      }
#pragma omp parallel for schedule(static)
  for (long row = 0; row < h; row++)
    for (size_t e = 0; e < row_elems; e++) {
      float sum = 0.0f;
      for (int a = 0; a < k->kh; a++) {
        const int r = boundary_index(row + a - k->kh / 2, h, mode);
        if (r >= 0) sum += k->wy[a] * tmp[(size_t)r * row_elems + e];
      }
      write_pixel(dtype, out, row * row_elems + e, sum);
    }
  free(tmp);
  return 0;
}

int glcpu_filter(int variant, int dtype, size_t h, size_t w, int channels,
                 const glc_filter_kernel *kernel, int mode, const void *img, void *out) {
  if (variant != GLC_FILTER_CPU_OPENMP || (dtype != GLC_F32 && dtype != GLC_U8) || channels < 1)
    return -1;
  if (h == 0 || w == 0) return 0;
  if (kernel->separable)
    return filter_separable(dtype, (long)h, (long)w, channels, kernel, mode, img, out);
  filter_direct(dtype, (long)h, (long)w, channels, kernel, mode, img, out);
  return 0;
}

/* cuda/image/mandelbrot.cuh's glc_dwell: each operation rounded on its own (never contracted
 * into an FMA, whatever -march allows), in NumPy's order. */
__attribute__((optimize("fp-contract=off"))) static int dwell_at(const double *view, int row,
                                                                 int col, int max_iter) {
  const double cx = view[0] + (col + 0.5) * view[1], cy = view[2] + (row + 0.5) * view[3];
  double zr = 0.0, zi = 0.0;
  int n = 0;
  while (n < max_iter) {
    const double zr2 = zr * zr, zi2 = zi * zi;
    if (zr2 + zi2 > 4.0) break;
    const double t = zr * zi;
    zi = (t + t) + cy;
    zr = (zr2 - zi2) + cx;
    n++;
  }
  return n;
}

int glcpu_mandelbrot(int variant, int width, int height, const double *xlim, const double *ylim,
                     int max_iter, int *dwell) {
  if (variant != GLC_MANDELBROT_CPU_OPENMP || width < 0 || height < 0 || max_iter < 1) return -1;
  /* x0, dx, y0, dy */
  const double view[4] = {xlim[0], (xlim[1] - xlim[0]) / width, ylim[0],
                          (ylim[1] - ylim[0]) / height};
#pragma omp parallel for schedule(dynamic, 1)
  for (int row = 0; row < height; row++)
    for (int col = 0; col < width; col++)
      dwell[(size_t)row * width + col] = dwell_at(view, row, col, max_iter);
  return 0;
}
