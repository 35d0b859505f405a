/* The sort lab's CPU variants: qsort on (key, index) records (100) and an OpenMP LSD radix sort
 * (101). Plain C; dtypes are cuda/core/gpulab_core.h's codes, and the arguments mean what
 * glc_sort's do (cuda/sort/sort.h): keys_out NULL for argsort, values NULL with value_bytes 8
 * for argsort's indices. Each returns 0, or -1 for an id or dtype it does not know, or when it
 * cannot allocate its scratch. */
#ifndef GL_SORT_CPU_H
#define GL_SORT_CPU_H

#include <stddef.h>

int glcpu_sort(int variant, int dtype, int descending, size_t n, const void *keys, void *keys_out,
               int value_bytes, const void *values, void *values_out);

#endif
