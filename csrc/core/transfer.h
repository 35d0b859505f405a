/* Host <-> device copies, the pinned staging ring, and whole small CUDA calls on host data. */
#ifndef GL_TRANSFER_H
#define GL_TRANSFER_H

#include <stddef.h>

#include "cuda/core/gpulab_core.h"
#include "py.h"

enum gl_copy_path {
  GL_PATH_AUTO,
  GL_PATH_DRIVER,
  GL_PATH_STAGED,
  GL_PATH_REGISTER,
  GL_PATH_DIRECT
};
/* Copies bytes from host to device memory ordered on stream. On return src may be reused. */
int gl_h2d(void *dst, const void *src, size_t bytes, glc_stream stream, int path);
/* Copies bytes from device to host memory ordered on stream and waits for it. Call without the
 * GIL. */
int gl_d2h(void *dst, const void *src, size_t bytes, glc_stream stream, int path);
/* From this size get() faults a fresh result's pages in on every core before gl_d2h fills it;
 * inside the staged copy they fault a ring slot at a time. H200 host: 1 GiB in 50 ms instead of
 * 81; at 64 MiB the two were within noise (4.8 and 4.6 ms). */
#define GL_FAULT_IN_MIN_BYTES ((size_t)64 << 20)
/* Parses a path= argument ('auto', 'driver', 'staged', 'register', 'direct'). */
int gl_copy_path_arg(PyObject *arg, int *path);

/* A whole small CUDA call on host data: inputs in, run(ctx, dev_in, dev_out), output back,
 * waited for. Call without the GIL. Never fits in exact allocation mode (runtime.h). */
#define GL_SMALL_CALL_BYTES (1u << 20)
#define GL_SMALL_CALL_MAX_INPUTS 4
typedef int (*gl_device_run)(void *ctx, void *const *dev_in, void *dev_out);
int gl_small_call_fits(int n_in, size_t in_bytes, size_t out_bytes);
int gl_small_call(int n_in, const void *const *host_in, size_t in_bytes, void *host_out,
                  size_t out_bytes, glc_stream stream, gl_device_run run, void *ctx);

/* Python: pinned_empty, pinned_usage and the staging ring's settings. */
extern PyMethodDef gl_transfer_methods[];

#endif
