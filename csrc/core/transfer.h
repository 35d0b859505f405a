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
/* gl_d2h (auto path) of a result into host memory; fresh: dst was just made for it, its pages
 * never touched, and from GL_FAULT_IN_MIN_BYTES they are faulted in on every core first. Call
 * without the GIL. */
int gl_d2h_result(void *dst, const void *src, size_t bytes, glc_stream stream, int fresh);
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
