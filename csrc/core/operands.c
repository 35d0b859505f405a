/* The four ways an op of arrays runs (operands.h). */
#include "operands.h"

#include <stddef.h>
#include <string.h>

#include "args.h"
#include "devarray.h"
#include "errors.h"
#include "interop.h"
#include "interrupt.h"
#include "mirror.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

/* Below this many elements in and out, a CPU variant keeps the GIL: releasing it costs more. */
#define GL_OPERANDS_RELEASE_GIL_MIN (1 << 16)

static int has_best_for_dtypes(const gl_ladder *ladder) {
  for (int i = 0; i < ladder->count; i++)
    if (ladder->variants[i].flags & GL_BEST_FOR_DTYPES) return 1;
  return 0;
}

/* The mode, the variant, its tunables and where it runs; refuses a CPU variant with a stream or
 * on device arrays, and a CUDA variant without a GPU (on NumPy arrays of a check_before_gpu op,
 * run_on_host asks later). */
static int resolve(const gl_operands_op *op, PyObject *const *inputs, PyObject *mode,
                   PyObject *variant, PyObject *stream, gl_operands_call *call, int *on_device) {
  const char *names[GL_OPERANDS_MAX];
  for (int i = 0; i < op->n_in; i++) names[i] = op->in[i].name;
  if (gl_classify_operands(op->n_in, inputs, names, on_device) < 0) return -1;
  if (op->ladder->modes && gl_resolve_mode(op->ladder, mode, &call->mode) < 0) return -1;
  call->variant = gl_resolve_variant(op->ladder, variant, *on_device || gl_gpu_ready());
  /* variant=None on a ladder with defaults by dtype: configured once the dtype has picked */
  call->by_default = variant == Py_None && has_best_for_dtypes(op->ladder);
  if (!call->variant || (op->configure && !call->by_default && op->configure(call) < 0)) return -1;
  const gl_variant *v = call->variant;
  if (v->backend == GL_BACKEND_CPU && stream != Py_None) {
    PyErr_Format(PyExc_ValueError, "stream: variant %d (%s) runs on the CPU", v->id, v->name);
    return -1;
  }
  if (*on_device && v->backend == GL_BACKEND_CPU) {
    PyErr_Format(PyExc_TypeError,
                 "variant %d (%s) runs on the CPU and takes NumPy arrays, but %s is a device "
                 "array; pick a CUDA variant or pass NumPy arrays",
                 v->id, v->name, op->in[0].name);
    return -1;
  }
  if (v->backend == GL_BACKEND_CUDA && (*on_device || !op->check_before_gpu) &&
      gl_require_gpu(op->ladder->op) < 0)
    return -1;
  return 0;
}

/* The first input's dtype: one of the op's that the variant takes; when the variant takes none
 * of them (CUB's integer histogram asked for a float data range), the variant's, which the
 * refusal then lists. With modes, one of the op's that the mode supports on the variant (the
 * mode's refusal lists what the variant does). */
static int check_first_dtype(const gl_operands_op *op, PyArray_Descr *dtype,
                             gl_operands_call *call) {
  if (call->by_default) { /* the dtype's own default (GL_BEST_FOR_DTYPES), then its tunables */
    call->variant = gl_best_for_dtype(op->ladder, call->variant, gl_dtype_code(dtype));
    call->by_default = 0;
    if (op->configure && op->configure(call) < 0) return -1;
  }
  const unsigned both = op->dtypes & call->variant->dtypes;
  const unsigned allowed = op->ladder->modes ? op->dtypes : both ? both : call->variant->dtypes;
  call->dtype = gl_dtype_code(dtype);
  if ((call->dtype < 0 || !(allowed & GL_DT(call->dtype))) &&
      gl_check_dtype_in(dtype, allowed, op->in[0].name) < 0)
    return -1;
  call->itemsize = (int)PyDataType_ELSIZE(dtype);
  call->in_dtype[0] = call->dtype;
  return op->ladder->modes
             ? gl_check_mode_support(op->ladder, call->variant, call->mode, call->dtype)
             : 0;
}

/* An alike op's input i (i > 0), recorded: the first input's shape (flat: its length). */
static int check_alike(const gl_operands_op *op, int i, const gl_operands_call *call) {
  const char *first = op->in[0].name, *name = op->in[i].name;
  if (!op->in[i].flat)
    return gl_check_same_shape(call->in_ndim[0], call->shape[0], call->in_ndim[i], call->shape[i],
                               first, name);
  if (call->in_size[i] == call->in_size[0]) return 0;
  PyErr_Format(PyExc_ValueError, "%s and %s must have the same length, got %zd and %zd", first,
               name, call->in_size[0], call->in_size[i]);
  return -1;
}

/* Input i's dtype (the first one's from the op's and variant's dtypes, an input with dtypes of
 * its own one of those, a boolean one bool, the others the first's) and shape, recorded in
 * call, after the op's own checks. (Alignment: gl_check_device_array refuses a device array
 * that starts inside an element, check_host_inputs such a NumPy array.) */
static inline int check_input(const gl_operands_op *op, int i, int ndim, const Py_ssize_t *shape,
                              PyArray_Descr *dtype, const void *ptr, gl_operands_call *call) {
  const gl_operand *spec = &op->in[i];
  const char *name = spec->name;
  if (op->check && op->check(call, i, name, ndim, shape, dtype) < 0) return -1;
  if (i > 0 && spec->boolean) {
    if (dtype->type_num != NPY_BOOL) {
      PyErr_Format(PyExc_TypeError, "%s must be a bool array, got dtype %S", name,
                   (PyObject *)dtype);
      return -1;
    }
    call->in_dtype[i] = -1;
  } else if (i > 0 && spec->dtypes) {
    if (gl_check_dtype_in(dtype, spec->dtypes, name) < 0) return -1;
    call->in_dtype[i] = gl_dtype_code(dtype);
  } else if (i == 0) {
    if (check_first_dtype(op, dtype, call) < 0) return -1;
  } else if (gl_dtype_code(dtype) != call->dtype) {
    if (op->alike)
      PyErr_Format(PyExc_TypeError, "%s has dtype %S; expected %s like %s", name, (PyObject *)dtype,
                   gl_dtype_name(call->dtype), op->in[0].name);
    else
      PyErr_Format(PyExc_TypeError, "%s must have %s's dtype %s, got %S", name, op->in[0].name,
                   gl_dtype_name(call->dtype), (PyObject *)dtype);
    return -1;
  } else {
    call->in_dtype[i] = call->dtype;
  }
  if (ndim > GL_MAX_NDIM && !spec->flat) { /* an operand of any ndim: its shape must fit */
    PyErr_Format(PyExc_ValueError, "%s has %d dimensions; at most %d", name, ndim, GL_MAX_NDIM);
    return -1;
  }
  if (spec->last_dim && (ndim ? shape[ndim - 1] : 0) != spec->last_dim) {
    PyErr_Format(PyExc_ValueError, "%s must have %zd values in its last dimension, got %zd", name,
                 spec->last_dim, ndim ? shape[ndim - 1] : (Py_ssize_t)0);
    return -1;
  }
  Py_ssize_t size = 1;
  if (spec->flat) {
    for (int d = 0; d < ndim; d++) size *= shape[d];
    call->in_ndim[i] = 1;
    call->shape[i][0] = size;
  } else {
    for (int d = 0; d < ndim; d++) size *= call->shape[i][d] = shape[d];
    call->in_ndim[i] = ndim;
  }
  call->in_size[i] = size;
  call->in[i] = ptr;
  return op->alike && i > 0 ? check_alike(op, i, call) : 0;
}

/* The inputs as NumPy arrays, checked. One that starts inside an element (a view of a byte
 * buffer) is refused, or with copy_misaligned copied; a transposed one (transposable) for a CPU
 * variant is copied to C order: in[i] is then the copy, a new reference in copies[i] to release
 * whatever this returns. A transposed one for a CUDA variant stays as it lies: its bytes, the
 * storage of its transpose, are what run_staged copies to the device. */
static int check_host_inputs(const gl_operands_op *op, PyObject *const *inputs,
                             gl_operands_call *call, PyArrayObject **in, PyObject **copies) {
  for (int i = 0; i < op->n_in; i++) {
    if (gl_check_host_operand(inputs[i], op->in[i].name, op->in[i].ndim, 0, op->in[i].transposable,
                              &call->in_transposed[i]) < 0)
      return -1;
    in[i] = (PyArrayObject *)inputs[i];
    if (check_input(op, i, PyArray_NDIM(in[i]), PyArray_SHAPE(in[i]), PyArray_DESCR(in[i]),
                    PyArray_DATA(in[i]), call) < 0)
      return -1;
    /* a power of two: a glc dtype's, or bool's */
    const Py_ssize_t itemsize = PyArray_ITEMSIZE(in[i]);
    const int misaligned =
        call->in_size[i] && (uintptr_t)PyArray_DATA(in[i]) & (uintptr_t)(itemsize - 1);
    if (misaligned && !op->copy_misaligned) {
      PyErr_Format(PyExc_ValueError, "%s is not aligned to its %zd-byte elements", op->in[i].name,
                   itemsize);
      return -1;
    }
    if (misaligned || (call->in_transposed[i] && call->variant->backend == GL_BACKEND_CPU)) {
      if (!(copies[i] = PyArray_NewCopy(in[i], NPY_CORDER))) return -1;
      in[i] = (PyArrayObject *)copies[i];
      call->in[i] = PyArray_DATA(in[i]);
      call->in_transposed[i] = 0;
    }
  }
  return 0;
}

/* The inputs as DeviceArrays (new references into in, to release whatever this returns), each
 * ordered after its last use on another stream (gl_as_device_array), checked. */
static int check_device_inputs(const gl_operands_op *op, PyObject *const *inputs,
                               gl_operands_call *call, gl_DeviceArrayObject **in) {
  int failed = 0;
  gl_import_operands_begin();
  for (int i = 0; i < op->n_in && !failed; i++) {
    in[i] = gl_as_device_array(inputs[i], op->in[i].name, call->stream);
    failed = !in[i] ||
             gl_check_device_operand(in[i], op->in[i].name, op->in[i].ndim, 0,
                                     op->in[i].transposable, &call->in_transposed[i]) < 0 ||
             check_input(op, i, in[i]->ndim, in[i]->shape, in[i]->dtype, in[i]->ptr, call) < 0;
  }
  gl_import_operands_end();
  return failed ? -1 : 0;
}

static Py_ssize_t output_size(const gl_operands_call *call, int o) {
  Py_ssize_t size = 1;
  for (int d = 0; d < call->out_ndim[o]; d++) size *= call->out_shape[o][d];
  return size;
}

/* skip_empty's test: every output empty, nothing to run. */
static int nothing_to_run(const gl_operands_op *op, const gl_operands_call *call) {
  if (!op->skip_empty) return 0;
  for (int o = 0; o < op->n_out; o++)
    if (output_size(call, o)) return 0;
  return 1;
}

/* A counted output's length, within its capacity (a variant that counts past it is a bug that
 * must not read past the output). */
static int check_count(const gl_operands_op *op, const gl_operands_call *call, long long count) {
  if (count >= 0 && count <= call->out_shape[0][0]) return 0;
  PyErr_Format(PyExc_RuntimeError, "%s: variant %d counted %lld elements of %zd", op->ladder->op,
               call->variant->id, count, call->out_shape[0][0]);
  return -1;
}

/* The outputs as one object: the array, or a tuple of them. Steals the references. */
static PyObject *pack(int n_out, PyObject **outs) {
  if (n_out == 1) return outs[0];
  PyObject *t = PyTuple_New(n_out);
  for (int o = 0; o < n_out; o++) {
    if (t)
      PyTuple_SET_ITEM(t, o, outs[o]);
    else
      Py_DECREF(outs[o]);
  }
  return t;
}

/* A counted output's length, waited for without the GIL. */
static int read_count(const gl_operands_call *call, long long *count) {
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = gl_d2h(count, call->count, sizeof *count, call->stream, GL_PATH_AUTO);
  Py_END_ALLOW_THREADS
  return code;
}

/* A counted output on device arrays: sized by count_first before the run, or run at its capacity
 * (into *full) and its kept elements copied into one of their length (or the full one is the
 * output when everything was kept). Returns 0 or -1 raised; *out and *full are the caller's to
 * release. */
static int run_counted_on_device(const gl_operands_op *op, gl_operands_call *call, PyObject *keep,
                                 gl_DeviceArrayObject **out, gl_DeviceArrayObject **full) {
  const Py_ssize_t capacity = call->out_shape[0][0], one = 1;
  PyArray_Descr *descr = PyArray_DescrFromType(call->out_type[0]);
  PyArray_Descr *i64 = PyArray_DescrFromType(NPY_INT64);
  gl_DeviceArrayObject *slot = NULL;
  long long count = 0;
  int ok = descr && i64, code = 0;
  if (ok && capacity == 0) {
    ok = (*out = gl_devarray_empty(1, &capacity, descr, call->stream, keep)) != NULL;
    goto done;
  }
  ok = ok && (slot = gl_devarray_empty(1, &one, i64, call->stream, NULL)) != NULL;
  if (!ok) goto done;
  call->count = slot->ptr;
  if (op->count_first) {
    code = op->count_first(call);
    if (!code) code = read_count(call, &count);
    if (!code && check_count(op, call, count) < 0) ok = 0;
    if (code || !ok) goto done;
    const Py_ssize_t length = (Py_ssize_t)count;
    ok = (*out = gl_devarray_empty(1, &length, descr, call->stream, keep)) != NULL;
    if (ok && length) {
      call->out[0] = (*out)->ptr;
      code = op->run_cuda(call);
    }
    goto done;
  }
  ok = (*full = gl_devarray_empty(1, &capacity, descr, call->stream, keep)) != NULL;
  if (!ok) goto done;
  call->out[0] = (*full)->ptr;
  code = op->run_cuda(call);
  if (!code) code = read_count(call, &count);
  if (!code && check_count(op, call, count) < 0) ok = 0;
  if (code || !ok) goto done;
  if (count == capacity) {
    *out = *full;
    *full = NULL;
    goto done;
  }
  const Py_ssize_t length = (Py_ssize_t)count;
  ok = (*out = gl_devarray_empty(1, &length, descr, call->stream, keep)) != NULL;
  if (ok && length)
    code = glc_memcpy_async((*out)->ptr, (*full)->ptr, (size_t)(*out)->nbytes, call->stream);
done:
  if (code) ok = gl_raise_cuda(code) != NULL;
  Py_XDECREF(slot);
  Py_XDECREF(descr);
  Py_XDECREF(i64);
  return ok ? 0 : -1;
}

/* A given out against output 0, after the op's own check of it: its dtype, then its shape. */
static int check_out(const gl_operands_op *op, const gl_operands_call *call, int ndim,
                     const Py_ssize_t *shape, PyArray_Descr *dtype) {
  if (op->check && op->check(call, -1, "out", ndim, shape, dtype) < 0) return -1;
  if (dtype->type_num != call->out_type[0] || !PyArray_ISNBO(dtype->byteorder)) {
    /* not the output's dtype to the letter: equivalent to it (int64 as longlong), or refused */
    PyArray_Descr *want = PyArray_DescrFromType(call->out_type[0]);
    const int equivalent = want && PyArray_EquivTypes(dtype, want);
    if (want && !equivalent)
      PyErr_Format(PyExc_TypeError, "out has dtype %S; expected %S", (PyObject *)dtype,
                   (PyObject *)want);
    Py_XDECREF(want);
    if (!equivalent) return -1;
  }
  return gl_check_same_shape(ndim, shape, call->out_ndim[0], call->out_shape[0], "out",
                             "the inputs");
}

/* A given out on device arrays: a device array (gl_as_device_array's TypeError for anything
 * else), ordered on the call's stream, writeable, checked. A new reference, or NULL raised. */
static gl_DeviceArrayObject *given_device_out(const gl_operands_op *op,
                                              const gl_operands_call *call, PyObject *out) {
  gl_DeviceArrayObject *a = gl_as_device_array(out, "out", call->stream);
  if (a && (gl_check_device_array(a, "out", op->in[0].ndim, 1) < 0 ||
            check_out(op, call, a->ndim, a->shape, a->dtype) < 0))
    Py_CLEAR(a);
  return a;
}

/* A given out on NumPy arrays: a NumPy array (a device array is a ValueError), writeable,
 * checked. A new reference, or NULL raised. */
static PyArrayObject *given_host_out(const gl_operands_op *op, const gl_operands_call *call,
                                     PyObject *out) {
  if (gl_is_device_operand(out)) {
    PyErr_SetString(PyExc_ValueError,
                    "mixed devices: the inputs are NumPy arrays but out is a device array");
    return NULL;
  }
  if (gl_check_host_array(out, "out", op->in[0].ndim, 1) < 0) return NULL;
  PyArrayObject *a = (PyArrayObject *)out;
  if (check_out(op, call, PyArray_NDIM(a), PyArray_SHAPE(a), PyArray_DESCR(a)) < 0) return NULL;
  return (PyArrayObject *)Py_NewRef(out);
}

/* scalar's empty-inputs test: empty() then writes the value instead of a run. */
static int empty_scalar(const gl_operands_op *op, const gl_operands_call *call) {
  return op->scalar && op->empty && call->in_size[0] == 0;
}

/* Room for a scalar output's value. */
#define GL_OPERANDS_VALUE_BYTES 16

/* A scalar's value of nothing on device arrays: written on the host, copied into out. */
static int empty_on_device(const gl_operands_op *op, gl_operands_call *call,
                           gl_DeviceArrayObject *out) {
  _Alignas(16) char value[GL_OPERANDS_VALUE_BYTES] = {0};
  call->out[0] = value;
  if (op->empty(call) < 0) return -1;
  const int code = gl_h2d(out->ptr, value, (size_t)out->nbytes, call->stream, GL_PATH_AUTO);
  return code ? (gl_raise_cuda(code), -1) : 0;
}

/* run_cuda on device arrays, with the GIL unless release_gil. 0, or -1 raised. */
static int run_cuda_on_device(const gl_operands_op *op, const gl_operands_call *call) {
  int code;
  if (op->release_gil) {
    Py_BEGIN_ALLOW_THREADS
    code = op->run_cuda(call);
    Py_END_ALLOW_THREADS
  } else {
    code = op->run_cuda(call);
  }
  return code ? (gl_raise_cuda(code), -1) : 0;
}

static PyObject *run_on_device(const gl_operands_op *op, PyObject *const *inputs, PyObject *out_obj,
                               PyObject *stream_obj, gl_operands_call *call) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return NULL;
  gl_DeviceArrayObject *in[GL_OPERANDS_MAX] = {NULL}, *out[GL_OPERANDS_MAX] = {NULL};
  gl_DeviceArrayObject *full = NULL; /* a counted output at its capacity */
  int ok = check_device_inputs(op, inputs, call, in) == 0 && op->outputs(call) == 0;
  if (ok && op->counted) {
    ok = run_counted_on_device(op, call, keep, &out[0], &full) == 0;
  } else if (ok) {
    for (int o = 0; ok && o < op->n_out; o++) {
      if (o == 0 && out_obj != Py_None) {
        out[0] = given_device_out(op, call, out_obj);
      } else {
        PyArray_Descr *descr = PyArray_DescrFromType(call->out_type[o]);
        out[o] = descr ? gl_devarray_empty(call->out_ndim[o], call->out_shape[o], descr,
                                           call->stream, keep)
                       : NULL;
        Py_XDECREF(descr);
      }
      ok = out[o] != NULL;
      if (ok) call->out[o] = out[o]->ptr;
    }
    if (ok && empty_scalar(op, call)) {
      ok = empty_on_device(op, call, out[0]) == 0;
    } else if (ok && !nothing_to_run(op, call)) {
      glc_scalar_mirror *mirror = NULL;
      if (op->mirrors && out_obj == Py_None && op->mirrors(call))
        gl_mirror_take(&mirror, &call->mirror, &call->mirror_tag);
      ok = run_cuda_on_device(op, call) == 0;
      if (ok && mirror)
        gl_devarray_set_mirror(out[0], mirror, call->mirror_tag);
      else if (mirror)
        gl_mirror_release(mirror);
      call->mirror = NULL;
    }
  }
  if (ok) {
    for (int i = 0; i < op->n_in; i++) gl_devarray_use(in[i], call->stream, keep);
    for (int o = 0; o < op->n_out; o++) gl_devarray_use(out[o], call->stream, keep);
  }
  if (full) gl_devarray_use(full, call->stream, keep);
  for (int i = 0; i < op->n_in; i++) Py_XDECREF(in[i]);
  Py_XDECREF(full);
  Py_XDECREF(keep);
  if (!ok) {
    for (int o = 0; o < op->n_out; o++) Py_XDECREF(out[o]);
    return NULL;
  }
  return pack(op->n_out, (PyObject **)out);
}

typedef struct {
  const gl_operands_op *op;
  gl_operands_call *call;
} small_call_ctx;

/* gl_small_call's run: the op on the device addresses of its pinned slot. */
static int run_small(void *ctx, void *const *dev_in, void *dev_out) {
  small_call_ctx *c = ctx;
  for (int i = 0; i < c->op->n_in; i++) c->call->in[i] = dev_in[i];
  c->call->out[0] = dev_out;
  return c->op->run_cuda(c->call);
}

/* small_calls' test: one output, inputs of one size, and room in gl_small_call. */
static int fits_small_call(const gl_operands_op *op, PyArrayObject *const *host_in,
                           size_t out_bytes) {
  if (!op->small_calls || op->n_out != 1 || op->counted) return 0;
  const Py_ssize_t bytes = PyArray_NBYTES(host_in[0]);
  for (int i = 1; i < op->n_in; i++)
    if (PyArray_NBYTES(host_in[i]) != bytes) return 0;
  return gl_small_call_fits(op->n_in, (size_t)bytes, out_bytes);
}

/* A CUDA variant on NumPy arrays: device copies of the inputs (in the call's shapes: a flat
 * input's is its length), the run, the outputs (of dtypes descr, in host memory at call->out)
 * copied back and waited for (a counted output: its length into *count, then that many elements).
 * fresh_out: the outputs were made for this call (no out=), so gl_d2h_result faults them in
 * (an uncounted output while the run is still on the GPU). With small_calls, a call that fits
 * runs through gl_small_call instead. */
static int run_staged(const gl_operands_op *op, PyArrayObject *const *host_in,
                      PyArray_Descr *const *descr, PyObject *stream_obj, gl_operands_call *call,
                      long long *count, int fresh_out) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return -1;
  void *host_out[GL_OPERANDS_MAX];
  size_t out_bytes[GL_OPERANDS_MAX];
  for (int o = 0; o < op->n_out; o++) {
    host_out[o] = call->out[o];
    out_bytes[o] = (size_t)output_size(call, o) * (size_t)PyDataType_ELSIZE(descr[o]);
  }
  gl_DeviceArrayObject *in[GL_OPERANDS_MAX] = {NULL}, *out[GL_OPERANDS_MAX] = {NULL};
  gl_DeviceArrayObject *slot = NULL;
  int ok = 1;
  if (fits_small_call(op, host_in, out_bytes[0])) {
    const void *src[GL_OPERANDS_MAX];
    for (int i = 0; i < op->n_in; i++) src[i] = PyArray_DATA(host_in[i]);
    small_call_ctx ctx = {op, call};
    int code;
    Py_BEGIN_ALLOW_THREADS
    code = gl_small_call(op->n_in, src, (size_t)PyArray_NBYTES(host_in[0]), host_out[0],
                         out_bytes[0], call->stream, run_small, &ctx);
    Py_END_ALLOW_THREADS
    if (code) ok = gl_raise_cuda(code) != NULL;
    goto done;
  }
  for (int i = 0; ok && i < op->n_in; i++) {
    /* a transposed input's copy holds its bytes as they lie (in_transposed says how to read
     * them); the device array is only their room */
    in[i] = gl_devarray_empty(call->in_ndim[i], call->shape[i], PyArray_DESCR(host_in[i]),
                              call->stream, NULL);
    ok = in[i] != NULL;
    if (ok) call->in[i] = in[i]->ptr;
  }
  for (int o = 0; ok && o < op->n_out; o++) {
    out[o] = gl_devarray_empty(call->out_ndim[o], call->out_shape[o], descr[o], call->stream, NULL);
    ok = out[o] != NULL;
    if (ok) call->out[o] = out[o]->ptr;
  }
  if (ok && op->counted) {
    PyArray_Descr *i64 = PyArray_DescrFromType(NPY_INT64);
    const Py_ssize_t one = 1;
    slot = i64 ? gl_devarray_empty(1, &one, i64, call->stream, NULL) : NULL;
    Py_XDECREF(i64);
    ok = slot != NULL;
    if (ok) call->count = slot->ptr;
  }
  if (ok) {
    int code = 0, counted_past = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; !code && i < op->n_in; i++)
      if (PyArray_NBYTES(host_in[i]) > 0)
        code = gl_h2d(in[i]->ptr, PyArray_DATA(host_in[i]), (size_t)PyArray_NBYTES(host_in[i]),
                      call->stream, GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    if (!code && op->counted) {
      code = gl_d2h(count, slot->ptr, sizeof *count, call->stream, GL_PATH_AUTO);
      counted_past = !code && (*count < 0 || *count > call->out_shape[0][0]);
      if (!code && !counted_past && *count)
        code = gl_d2h_result(host_out[0], out[0]->ptr,
                             (size_t)*count * (size_t)PyDataType_ELSIZE(descr[0]), call->stream,
                             fresh_out);
    }
    for (int o = 0; !code && !op->counted && o < op->n_out; o++)
      if (out_bytes[o])
        code = gl_d2h_result(host_out[o], out[o]->ptr, out_bytes[o], call->stream, fresh_out);
    Py_END_ALLOW_THREADS
    if (code)
      ok = gl_raise_cuda(code) != NULL;
    else if (counted_past)
      ok = check_count(op, call, *count) == 0;
  }
done:
  for (int i = 0; i < op->n_in; i++) Py_XDECREF(in[i]);
  for (int o = 0; o < op->n_out; o++) Py_XDECREF(out[o]);
  Py_XDECREF(slot);
  Py_XDECREF(keep);
  return ok ? 0 : -1;
}

static int run_cpu(const gl_operands_op *op, gl_operands_call *call, Py_ssize_t elements) {
  int rc;
  if (op->release_gil || elements >= GL_OPERANDS_RELEASE_GIL_MIN) {
    Py_BEGIN_ALLOW_THREADS
    rc = op->run_cpu(call);
    Py_END_ALLOW_THREADS
  } else {
    rc = op->run_cpu(call);
  }
  if (rc == GLC_INTERRUPTED)
    gl_raise_interrupted();
  else if (rc == GL_CPU_NO_MEMORY)
    PyErr_Format(PyExc_MemoryError, "%s: CPU variant %d could not allocate scratch", op->ladder->op,
                 call->variant->id);
  else if (rc)
    PyErr_Format(PyExc_RuntimeError, "%s: CPU variant %d failed", op->ladder->op,
                 call->variant->id);
  return rc ? -1 : 0;
}

/* The first count elements of a NumPy array, as a new array of that length (the array itself
 * when all of it was kept). */
static PyObject *host_prefix(PyArrayObject *full, long long count) {
  const Py_ssize_t length = (Py_ssize_t)count;
  if (length == PyArray_SIZE(full)) return Py_NewRef((PyObject *)full);
  PyArrayObject *out = (PyArrayObject *)PyArray_SimpleNew(1, &length, PyArray_TYPE(full));
  if (out && length)
    memcpy(PyArray_DATA(out), PyArray_DATA(full), (size_t)length * (size_t)PyArray_ITEMSIZE(full));
  return (PyObject *)out;
}

static PyObject *run_on_host(const gl_operands_op *op, PyObject *const *inputs, PyObject *out_obj,
                             PyObject *stream_obj, gl_operands_call *call) {
  PyArrayObject *in[GL_OPERANDS_MAX], *out[GL_OPERANDS_MAX] = {NULL};
  PyArray_Descr *descr[GL_OPERANDS_MAX] = {NULL}; /* the outputs' (borrowed, a scalar's owned) */
  PyObject *copies[GL_OPERANDS_MAX] = {NULL};
  _Alignas(16) char value[GL_OPERANDS_VALUE_BYTES] = {0}; /* a scalar output */
  int ok = check_host_inputs(op, inputs, call, in, copies) == 0 && op->outputs(call) == 0 &&
           (out_obj == Py_None || (out[0] = given_host_out(op, call, out_obj)) != NULL) &&
           (call->variant->backend == GL_BACKEND_CPU || !op->check_before_gpu ||
            gl_require_gpu(op->ladder->op) == 0);
  Py_ssize_t elements = 0;
  for (int i = 0; ok && i < op->n_in; i++) elements += call->in_size[i];
  if (ok && op->scalar) {
    ok = (descr[0] = PyArray_DescrFromType(call->out_type[0])) != NULL;
    call->out[0] = value;
    elements += 1;
  }
  for (int o = 0; ok && !op->scalar && o < op->n_out; o++) {
    if (!out[o])
      out[o] = (PyArrayObject *)PyArray_SimpleNew(call->out_ndim[o], call->out_shape[o],
                                                  call->out_type[o]);
    ok = out[o] != NULL;
    if (ok) {
      call->out[o] = PyArray_DATA(out[o]);
      descr[o] = PyArray_DESCR(out[o]);
    }
    elements += ok ? output_size(call, o) : 0;
  }
  long long count = 0;
  if (ok && empty_scalar(op, call)) {
    ok = op->empty(call) == 0;
  } else if (ok && !nothing_to_run(op, call)) {
    if (call->variant->backend == GL_BACKEND_CUDA) {
      ok = run_staged(op, in, descr, stream_obj, call, &count, out_obj == Py_None) == 0;
    } else {
      call->count = &count;
      ok = run_cpu(op, call, elements) == 0 && (!op->counted || check_count(op, call, count) == 0);
    }
    if (ok && op->counted) {
      PyObject *kept = host_prefix(out[0], count);
      Py_SETREF(out[0], (PyArrayObject *)kept);
      ok = kept != NULL;
    }
  }
  for (int i = 0; i < op->n_in; i++) Py_XDECREF(copies[i]);
  if (op->scalar) {
    PyObject *scalar = ok ? PyArray_Scalar(value, descr[0], NULL) : NULL;
    Py_XDECREF(descr[0]);
    return scalar;
  }
  if (!ok) {
    for (int o = 0; o < op->n_out; o++) Py_XDECREF(out[o]);
    return NULL;
  }
  return pack(op->n_out, (PyObject **)out);
}

int gl_operands_configure_block(gl_operands_call *call) {
  gl_operands_block *block = call->params;
  return gl_resolve_tunable(call->variant, "block", block->arg, &block->value);
}

int gl_operands_outputs_like_first(gl_operands_call *call) {
  call->out_ndim[0] = call->in_ndim[0];
  for (int d = 0; d < call->in_ndim[0]; d++) call->out_shape[0][d] = call->shape[0][d];
  call->out_type[0] = gl_dtype_typenum(call->dtype);
  return 0;
}

static PyObject *run(const gl_operands_op *op, PyObject *const *inputs, PyObject *mode,
                     PyObject *out, PyObject *variant, PyObject *stream, void *params) {
  gl_operands_call call;
  memset(&call, 0, offsetof(gl_operands_call, shape));
  call.params = params;
  int on_device = 0;
  if (resolve(op, inputs, mode, variant, stream, &call, &on_device) < 0) return NULL;
  return on_device ? run_on_device(op, inputs, out, stream, &call)
                   : run_on_host(op, inputs, out, stream, &call);
}

PyObject *gl_operands_run(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                          PyObject *stream, void *params) {
  return run(op, inputs, Py_None, Py_None, variant, stream, params);
}

PyObject *gl_operands_run_out(const gl_operands_op *op, PyObject *const *inputs, PyObject *out,
                              PyObject *variant, PyObject *stream, void *params) {
  return run(op, inputs, Py_None, out, variant, stream, params);
}

PyObject *gl_operands_run_mode(const gl_operands_op *op, PyObject *const *inputs, PyObject *mode,
                               PyObject *variant, PyObject *stream, void *params) {
  return run(op, inputs, mode, Py_None, variant, stream, params);
}

int gl_operands_open(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                     PyObject *stream, gl_operands_call *call, gl_operands_hold *hold,
                     int *on_device) {
  memset(hold, 0, sizeof *hold);
  *on_device = 0;
  if (resolve(op, inputs, Py_None, variant, stream, call, on_device) < 0) return -1;
  const int cuda = call->variant->backend == GL_BACKEND_CUDA;
  if (cuda && gl_stream_arg(stream, &call->stream, &hold->keep) < 0) return -1;
  if (!*on_device) {
    PyArrayObject *host[GL_OPERANDS_MAX];
    if (check_host_inputs(op, inputs, call, host, hold->copies) < 0) return -1;
    return cuda && op->check_before_gpu && gl_require_gpu(op->ladder->op) < 0 ? -1 : 0;
  }
  gl_DeviceArrayObject *device[GL_OPERANDS_MAX] = {NULL};
  const int rc = check_device_inputs(op, inputs, call, device);
  for (int i = 0; i < op->n_in; i++) hold->device[i] = (PyObject *)device[i];
  return rc;
}

void gl_operands_close(gl_operands_hold *hold) {
  for (int i = 0; i < GL_OPERANDS_MAX; i++) {
    Py_CLEAR(hold->device[i]);
    Py_CLEAR(hold->copies[i]);
  }
  Py_CLEAR(hold->keep);
}
