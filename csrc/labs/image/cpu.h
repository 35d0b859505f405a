/* The image lab's CPU variants (cuda/image/image.h's ids from 100). Plain C with OpenMP;
 * row-major, C-contiguous operands. Each returns 0, or -1 for an id or argument it does not know
 * (or scratch memory it cannot get). */
#ifndef GL_IMAGE_CPU_H
#define GL_IMAGE_CPU_H

#include <stddef.h>

#include "cuda/image/image.h"

/* glc_filter on the host: dtype GLC_F32 or GLC_U8. */
int glcpu_filter(int variant, int dtype, size_t h, size_t w, int channels,
                 const glc_filter_kernel *kernel, int mode, const void *img, void *out);
/* glc_mandelbrot on the host; xlim and ylim in host memory. */
int glcpu_mandelbrot(int variant, int width, int height, const double *xlim, const double *ylim,
                     int max_iter, int *dwell);

#endif
