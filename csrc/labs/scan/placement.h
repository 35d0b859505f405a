/* Where the scan lab's ops run, the four ways every op of gpulab runs (DESIGN.md): CPU on NumPy,
 * CUDA on NumPy (copied in, run, copied out), CUDA on device arrays (on the stream, a DeviceArray
 * out) and the refused one, CPU on device arrays. scan's result has x's length; compact's and
 * nonzero's length is known only after the run, so their device path waits for the count (as
 * torch.masked_select does) and returns an array of exactly that length. Every operand is
 * checked before anything is allocated or launched. */
#ifndef GL_SCAN_PLACEMENT_H
#define GL_SCAN_PLACEMENT_H

#include "csrc/core/py.h"
#include "csrc/core/registry.h"
#include "cuda/core/gpulab_core.h"

typedef struct {
  const gl_variant *variant;
  int block;
  int mode;      /* scan: enum glc_scan_op */
  int inclusive; /* scan */
  int dtype;     /* x's enum glc_dtype */
  size_t n;
  const void *x;
  const unsigned char *mask; /* compact: NULL keeps x != 0 */
  void *out;
  long long *count;  /* compact, nonzero: device memory (CUDA) or host (CPU) */
  glc_stream stream; /* CUDA variants only */
} sc_call;

typedef struct {
  const gl_ladder *ladder;
  int has_mask; /* compact's mask argument */
  /* The NumPy type number of the result (scan: by dtype and mode). */
  int (*result_type)(const sc_call *call);
  /* Checks that need the variant and size (the one-block variants' limit): 0, or -1 raised. */
  int (*check)(const sc_call *call);
  /* Each returns 0, or a CUDA error code (cuda) / -1 (cpu); called for n >= 1 only. */
  int (*run_cuda)(const sc_call *call);
  int (*run_cpu)(const sc_call *call);
} sc_op;

/* scan: the result has x's length (flattened). */
PyObject *sc_run_scan(const sc_op *op, PyObject *x, PyObject *mode, int inclusive,
                      PyObject *variant, PyObject *stream, PyObject *block);
/* compact and nonzero: mask is None (or unused). */
PyObject *sc_run_select(const sc_op *op, PyObject *x, PyObject *mask, PyObject *variant,
                        PyObject *stream);

#endif
