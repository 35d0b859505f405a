/* The histogram lab's CPU variants: the NumPy-checked baselines that run without a GPU, with the
 * CUDA variants' binning (cuda/histogram/histogram.h says how). Plain C, no Python; 0 on
 * success, -1 for an unknown variant or dtype, or when memory runs out. */
#ifndef GL_HISTOGRAM_CPU_H
#define GL_HISTOGRAM_CPU_H

#include <stddef.h>

#include "cuda/histogram/histogram.h"

/* counts[bins] = the histogram of x (glc_histogram's arguments; float_bins->edges in host
 * memory): variant 100 in one thread, 101 with a private histogram per OpenMP thread, added up
 * at the end. */
int glcpu_histogram(int variant, int dtype, size_t n, const void *x, long long lo, int bins,
                    const glc_float_bins *float_bins, long long *counts);

/* glc_histogram_data_range on the host (n >= 1). */
int glcpu_histogram_data_range(int dtype, size_t n, const void *x, double *lo, double *hi,
                               int *has_nan);

/* counts[3][256] = glc_histogram_rgb's per-channel histograms, in one thread. */
int glcpu_histogram_rgb(int dtype, size_t pixels, const void *img, long long *counts);

#endif
