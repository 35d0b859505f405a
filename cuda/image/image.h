/* The image lab's C ABI: 2-D filters (filter2d, gaussian, box) on float32 and uint8 images, and the
 * Mandelbrot dwell map. Row-major, C-contiguous operands in device memory; every function returns a
 * CUDA error code, as cuda/core/gpulab_core.h says. The variant ids below are shared by the ladders
 * (csrc/labs/image/variants.c), the dispatch and the CPU variants. */
#ifndef GPULAB_CUDA_IMAGE_H
#define GPULAB_CUDA_IMAGE_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

enum glc_filter_variant {
  GLC_FILTER_GLOBAL = 0,  /* direct 2-D correlation, every tap read from global memory */
  GLC_FILTER_TEXTURE = 1, /* the same through a texture object: the address mode does the edge */
  GLC_FILTER_SHARED = 2,  /* separable: a row pass and a column pass, shared tiles with halos */
  GLC_FILTER_FUSED = 3,   /* both passes in one kernel, the intermediate in shared memory */
  GLC_FILTER_CPU_OPENMP = 100
};

enum glc_mandelbrot_variant {
  GLC_MANDELBROT_PIXEL = 0,   /* one thread per pixel */
  GLC_MANDELBROT_DYNAMIC = 1, /* Mariani-Silver, child grids launched by the device (CDP) */
  GLC_MANDELBROT_QUEUE = 2,   /* Mariani-Silver, one launch per level from the host */
  GLC_MANDELBROT_CPU_OPENMP = 100
};

/* scipy.ndimage's boundary modes, by the names scipy gives them. For n pixels along an axis and
 * an index i outside [0, n): */
enum glc_filter_mode {
  GLC_MODE_REFLECT = 0,  /* symmetric, the edge pixel repeated: d c b a | a b c d | d c b a */
  GLC_MODE_NEAREST = 1,  /* the edge pixel: a a a a | a b c d | d d d d */
  GLC_MODE_CONSTANT = 2, /* zero: 0 0 0 0 | a b c d | 0 0 0 0 */
  GLC_MODE_WRAP = 3,     /* periodic: a b c d | a b c d | a b c d */
  GLC_MODE_MIRROR = 4    /* about the edge pixel, not repeated: d c b | a b c d | c b a */
};

/* Taps of one axis of a separable kernel (radius up to 32: a Gaussian of sigma 8 at truncate 4)
 * and of a direct 2-D kernel (625: 25 x 25). Weights travel by value in the kernels'
 * parameters, so concurrent calls on different streams never share a constant bank. */
#define GLC_FILTER_MAX_TAPS 65
#define GLC_FILTER_MAX_TAPS_2D 625

/* A correlation kernel, as scipy.ndimage.correlate applies it: out[i][j] = sum over a, b of
 * w[a][b] in[i + a - kh / 2][j + b - kw / 2]. separable: w[a][b] = wy[a] wx[b] (the direct
 * variants then use the outer product, the separable ones the factors); otherwise only w2d is
 * set and the separable variants refuse it. */
typedef struct {
  int kh, kw;
  int separable;
  float wy[GLC_FILTER_MAX_TAPS];
  float wx[GLC_FILTER_MAX_TAPS];
  float w2d[GLC_FILTER_MAX_TAPS_2D];
} glc_filter_kernel;

/* out = kernel correlated with img, an (h, w, channels) image (channels 1 to 4, interleaved), each
 * channel on its own; dtype GLC_F32 or GLC_U8 (uint8 out: the float32 sum rounded to nearest,
 * ties to even, and saturated to 0..255). Any h, w >= 0. */
GLC_API int glc_filter(int variant, int dtype, size_t h, size_t w, int channels,
                       const glc_filter_kernel *kernel, int mode, const void *img, void *out,
                       glc_stream stream);

/* dwell[height][width]: the pixel in row i and column j is c = cx + cy sqrt(-1), cx = x0 + (j +
 * 0.5) dx, cy = y0 + (i + 0.5) dy, with dx = (x1 - x0) / width and dy = (y1 - y0) / height, in
 * float64, and the dwell is the first n >= 1 with |z_n|^2 > 4 (z_0 = 0, z_{n+1} = z_n^2 + c), or
 * max_iter when there is none up to n = max_iter - 1. xlim = {x0, x1} and ylim = {y0, y1} lie in
 * device memory. Every operation is rounded as NumPy rounds it (no contraction into FMAs that round
 * less often), so the map is bit-exact against NumPy's. */
GLC_API int glc_mandelbrot(int variant, int width, int height, const double *xlim,
                           const double *ylim, int max_iter, int *dwell, glc_stream stream);

#ifdef __cplusplus
}
#endif

#endif
