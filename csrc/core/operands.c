/* The four ways an op of several arrays runs (operands.h). */
#include "operands.h"

#include <string.h>

#include "args.h"
#include "devarray.h"
#include "errors.h"
#include "interop.h"
#include "interrupt.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

/* Below this many elements in and out, a CPU variant keeps the GIL: releasing it costs more. */
#define GL_OPERANDS_RELEASE_GIL_MIN (1 << 16)

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
  if (!call->variant || (op->configure && op->configure(call) < 0)) return -1;
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
 * refusal then lists. With modes, the mode must support it on the variant. */
static int check_first_dtype(const gl_operands_op *op, PyArray_Descr *dtype,
                             gl_operands_call *call) {
  const unsigned both = op->dtypes & call->variant->dtypes;
  if (gl_check_dtype_in(dtype, both ? both : call->variant->dtypes, op->in[0].name) < 0) return -1;
  call->dtype = gl_dtype_code(dtype);
  call->itemsize = (int)PyDataType_ELSIZE(dtype);
  call->in_dtype[0] = call->dtype;
  return op->ladder->modes
             ? gl_check_mode_support(op->ladder, call->variant, call->mode, call->dtype)
             : 0;
}

/* Input i's dtype (the first one's from the op's and variant's dtypes, an input with dtypes of
 * its own one of those, a boolean one bool, the others the first's) and shape, recorded in
 * call. (Alignment: gl_check_device_array refuses a device array that starts inside an element,
 * check_host_inputs such a NumPy array.) */
static int check_input(const gl_operands_op *op, int i, int ndim, const Py_ssize_t *shape,
                       PyArray_Descr *dtype, const void *ptr, gl_operands_call *call) {
  const gl_operand *spec = &op->in[i];
  const char *name = spec->name;
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
  for (int d = 0; d < ndim; d++) size *= shape[d];
  call->in_ndim[i] = spec->flat ? 1 : ndim;
  if (spec->flat)
    call->shape[i][0] = size;
  else
    memcpy(call->shape[i], shape, sizeof(Py_ssize_t) * (size_t)ndim);
  call->in_size[i] = size;
  call->in[i] = ptr;
  return 0;
}

/* The inputs as NumPy arrays, checked. One that starts inside an element (a view of a byte
 * buffer) is refused, or with copy_misaligned copied: in[i] is then the copy, a new reference in
 * copies[i] to release whatever this returns. */
static int check_host_inputs(const gl_operands_op *op, PyObject *const *inputs,
                             gl_operands_call *call, PyArrayObject **in, PyObject **copies) {
  for (int i = 0; i < op->n_in; i++) {
    if (gl_check_host_array(inputs[i], op->in[i].name, op->in[i].ndim, 0) < 0) return -1;
    in[i] = (PyArrayObject *)inputs[i];
    if (check_input(op, i, PyArray_NDIM(in[i]), PyArray_SHAPE(in[i]), PyArray_DESCR(in[i]),
                    PyArray_DATA(in[i]), call) < 0)
      return -1;
    const Py_ssize_t itemsize = PyArray_ITEMSIZE(in[i]);
    if (PyArray_SIZE(in[i]) && (uintptr_t)PyArray_DATA(in[i]) % (uintptr_t)itemsize) {
      if (!op->copy_misaligned) {
        PyErr_Format(PyExc_ValueError, "%s is not aligned to its %zd-byte elements", op->in[i].name,
                     itemsize);
        return -1;
      }
      if (!(copies[i] = PyArray_NewCopy(in[i], NPY_CORDER))) return -1;
      in[i] = (PyArrayObject *)copies[i];
      call->in[i] = PyArray_DATA(in[i]);
    }
  }
  return 0;
}

/* The inputs as DeviceArrays (new references into in, to release whatever this returns), each
 * ordered after its last use on another stream (gl_as_device_array), checked. */
static int check_device_inputs(const gl_operands_op *op, PyObject *const *inputs,
                               gl_operands_call *call, gl_DeviceArrayObject **in) {
  for (int i = 0; i < op->n_in; i++) {
    in[i] = gl_as_device_array(inputs[i], op->in[i].name, call->stream);
    if (!in[i] || gl_check_device_array(in[i], op->in[i].name, op->in[i].ndim, 0) < 0 ||
        check_input(op, i, in[i]->ndim, in[i]->shape, in[i]->dtype, in[i]->ptr, call) < 0)
      return -1;
  }
  return 0;
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

static PyObject *run_on_device(const gl_operands_op *op, PyObject *const *inputs,
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
      PyArray_Descr *descr = PyArray_DescrFromType(call->out_type[o]);
      out[o] = descr ? gl_devarray_empty(call->out_ndim[o], call->out_shape[o], descr, call->stream,
                                         keep)
                     : NULL;
      Py_XDECREF(descr);
      ok = out[o] != NULL;
      if (ok) call->out[o] = out[o]->ptr;
    }
    if (ok && !nothing_to_run(op, call)) {
      int code = op->run_cuda(call);
      if (code) ok = gl_raise_cuda(code) != NULL;
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

/* A CUDA variant on NumPy arrays: device copies of the inputs (in the call's shapes: a flat
 * input's is its length), the run, the outputs copied back into host_out and waited for (a
 * counted output: its length into *count, then that many elements). */
static int run_staged(const gl_operands_op *op, PyArrayObject *const *host_in,
                      PyArrayObject *const *host_out, PyObject *stream_obj, gl_operands_call *call,
                      long long *count) {
  PyObject *keep = NULL;
  if (gl_stream_arg(stream_obj, &call->stream, &keep) < 0) return -1;
  gl_DeviceArrayObject *in[GL_OPERANDS_MAX] = {NULL}, *out[GL_OPERANDS_MAX] = {NULL};
  gl_DeviceArrayObject *slot = NULL;
  int ok = 1;
  for (int i = 0; ok && i < op->n_in; i++) {
    in[i] = gl_devarray_empty(call->in_ndim[i], call->shape[i], PyArray_DESCR(host_in[i]),
                              call->stream, NULL);
    ok = in[i] != NULL;
    if (ok) call->in[i] = in[i]->ptr;
  }
  for (int o = 0; ok && o < op->n_out; o++) {
    out[o] = gl_devarray_empty(PyArray_NDIM(host_out[o]), PyArray_SHAPE(host_out[o]),
                               PyArray_DESCR(host_out[o]), call->stream, NULL);
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
      if (PyArray_NBYTES(host_in[i]))
        code = gl_h2d(in[i]->ptr, PyArray_DATA(host_in[i]), (size_t)PyArray_NBYTES(host_in[i]),
                      call->stream, GL_PATH_AUTO);
    if (!code) code = op->run_cuda(call);
    if (!code && op->counted) {
      code = gl_d2h(count, slot->ptr, sizeof *count, call->stream, GL_PATH_AUTO);
      counted_past = !code && (*count < 0 || *count > PyArray_SIZE(host_out[0]));
      if (!code && !counted_past && *count)
        code = gl_d2h(PyArray_DATA(host_out[0]), out[0]->ptr,
                      (size_t)*count * (size_t)PyArray_ITEMSIZE(host_out[0]), call->stream,
                      GL_PATH_AUTO);
    }
    for (int o = 0; !code && !op->counted && o < op->n_out; o++)
      if (PyArray_NBYTES(host_out[o]))
        code = gl_d2h(PyArray_DATA(host_out[o]), out[o]->ptr, (size_t)PyArray_NBYTES(host_out[o]),
                      call->stream, GL_PATH_AUTO);
    Py_END_ALLOW_THREADS
    if (code)
      ok = gl_raise_cuda(code) != NULL;
    else if (counted_past)
      ok = check_count(op, call, *count) == 0;
  }
  for (int i = 0; i < op->n_in; i++) Py_XDECREF(in[i]);
  for (int o = 0; o < op->n_out; o++) Py_XDECREF(out[o]);
  Py_XDECREF(slot);
  Py_XDECREF(keep);
  return ok ? 0 : -1;
}

static int run_cpu(const gl_operands_op *op, gl_operands_call *call, Py_ssize_t elements) {
  int rc;
  if (elements >= GL_OPERANDS_RELEASE_GIL_MIN) {
    Py_BEGIN_ALLOW_THREADS
    rc = op->run_cpu(call);
    Py_END_ALLOW_THREADS
  } else {
    rc = op->run_cpu(call);
  }
  if (rc == GLC_INTERRUPTED)
    gl_raise_interrupted();
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

static PyObject *run_on_host(const gl_operands_op *op, PyObject *const *inputs,
                             PyObject *stream_obj, gl_operands_call *call) {
  PyArrayObject *in[GL_OPERANDS_MAX], *out[GL_OPERANDS_MAX] = {NULL};
  PyObject *copies[GL_OPERANDS_MAX] = {NULL};
  int ok = check_host_inputs(op, inputs, call, in, copies) == 0 && op->outputs(call) == 0 &&
           (call->variant->backend == GL_BACKEND_CPU || !op->check_before_gpu ||
            gl_require_gpu(op->ladder->op) == 0);
  Py_ssize_t elements = 0;
  for (int i = 0; ok && i < op->n_in; i++) elements += PyArray_SIZE(in[i]);
  for (int o = 0; ok && o < op->n_out; o++) {
    out[o] = (PyArrayObject *)PyArray_SimpleNew(call->out_ndim[o], call->out_shape[o],
                                                call->out_type[o]);
    ok = out[o] != NULL;
    if (ok) call->out[o] = PyArray_DATA(out[o]);
    elements += ok ? output_size(call, o) : 0;
  }
  long long count = 0;
  if (ok && !nothing_to_run(op, call)) {
    if (call->variant->backend == GL_BACKEND_CUDA) {
      ok = run_staged(op, in, out, stream_obj, call, &count) == 0;
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

PyObject *gl_operands_run_mode(const gl_operands_op *op, PyObject *const *inputs, PyObject *mode,
                               PyObject *variant, PyObject *stream, void *params) {
  gl_operands_call call = {0};
  call.params = params;
  int on_device = 0;
  if (resolve(op, inputs, mode, variant, stream, &call, &on_device) < 0) return NULL;
  return on_device ? run_on_device(op, inputs, stream, &call)
                   : run_on_host(op, inputs, stream, &call);
}

PyObject *gl_operands_run(const gl_operands_op *op, PyObject *const *inputs, PyObject *variant,
                          PyObject *stream, void *params) {
  return gl_operands_run_mode(op, inputs, Py_None, variant, stream, params);
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
