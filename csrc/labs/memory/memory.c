/* The memory lab's bindings: the measurements of cuda/memory/ and of cpu.c. The Python module
 * gpulab.memory validates the arguments, sweeps and builds the tables; these calls take plain
 * numbers and return samples. */
#include "cpu.h"
#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/errors.h"
#include "csrc/core/registry.h"
#include "csrc/core/runtime.h"
#include "cuda/memory/memory.h"

/* A list of `count` floats (ms). */
static PyObject *sample_list(const float *samples, int count) {
  PyObject *list = PyList_New(count);
  for (int i = 0; list && i < count; i++) {
    PyObject *v = PyFloat_FromDouble(samples[i]);
    if (!v) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, v);
  }
  return list;
}

/* samples[repeat] on the heap; NULL with MemoryError or ValueError set. */
static float *new_samples(int repeat) {
  if (repeat < 1 || repeat > 100000) {
    PyErr_Format(PyExc_ValueError, "repeat must lie in [1, 100000], got %d", repeat);
    return NULL;
  }
  float *samples = PyMem_Calloc((size_t)repeat, sizeof *samples);
  if (!samples) PyErr_NoMemory();
  return samples;
}

/* Turns a glc_* result into the return value: samples (and the extra object) or CudaError. */
static PyObject *finish(int code, float *samples, int repeat, PyObject *extra) {
  PyObject *result = NULL;
  if (code)
    gl_raise_cuda(code);
  else if (extra)
    result = Py_BuildValue("(NO)", sample_list(samples, repeat), extra);
  else
    result = sample_list(samples, repeat);
  PyMem_Free(samples);
  Py_XDECREF(extra);
  return result;
}

/* Pointer to a host array's or a DeviceArray's bytes, and their count. */
static int bytes_of(PyObject *obj, const char *name, int writeable, void **ptr, size_t *bytes) {
  if (gl_DeviceArray_Check(obj)) {
    gl_DeviceArrayObject *d = (gl_DeviceArrayObject *)obj;
    gl_devarray_forget_mirror(d);
    if (!gl_devarray_is_c_contiguous(d)) {
      PyErr_Format(PyExc_ValueError, "%s must be C-contiguous", name);
      return -1;
    }
    *ptr = d->ptr;
    *bytes = (size_t)d->nbytes;
    return 0;
  }
  if (gl_check_host_array(obj, name, -1, writeable) < 0) return -1;
  *ptr = PyArray_DATA((PyArrayObject *)obj);
  *bytes = (size_t)PyArray_NBYTES((PyArrayObject *)obj);
  return 0;
}

/* _memlab_memcpy(dst, src): raw cudaMemcpy between any two of NumPy / pinned NumPy /
 * DeviceArray, then a wait on the legacy stream it ran on (a pageable H2D cudaMemcpy returns
 * once its source is staged, before the copy has landed). */
static PyObject *py_memcpy(PyObject *m, PyObject *args) {
  PyObject *dst_obj, *src_obj;
  if (!PyArg_ParseTuple(args, "OO:_memlab_memcpy", &dst_obj, &src_obj)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  void *dst, *src;
  size_t dst_bytes, src_bytes;
  if (bytes_of(dst_obj, "dst", 1, &dst, &dst_bytes) < 0 ||
      bytes_of(src_obj, "src", 0, &src, &src_bytes) < 0)
    return NULL;
  if (dst_bytes != src_bytes) return PyErr_Format(PyExc_ValueError, "dst and src differ in size");
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_memcpy_sync(dst, src, dst_bytes);
  if (!code) code = glc_stream_synchronize(NULL);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

/* _memlab_mapped(direction, bytes, repeat) -> (samples, intact) */
static PyObject *py_mapped(PyObject *m, PyObject *args) {
  int direction, repeat, intact = 0;
  Py_ssize_t bytes;
  if (!PyArg_ParseTuple(args, "ini:_memlab_mapped", &direction, &bytes, &repeat)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float *samples = new_samples(repeat);
  if (!samples) return NULL;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_memlab_mapped(direction, (size_t)bytes, repeat, samples, &intact);
  Py_END_ALLOW_THREADS
  return finish(code, samples, repeat, PyBool_FromLong(intact));
}

/* _memlab_managed(direction, prefetch, bytes, repeat) -> (samples, intact) */
static PyObject *py_managed(PyObject *m, PyObject *args) {
  int direction, prefetch, repeat, intact = 0;
  Py_ssize_t bytes;
  if (!PyArg_ParseTuple(args, "ipni:_memlab_managed", &direction, &prefetch, &bytes, &repeat))
    return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float *samples = new_samples(repeat);
  if (!samples) return NULL;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_memlab_managed(direction, prefetch, (size_t)bytes, repeat, samples, &intact);
  Py_END_ALLOW_THREADS
  return finish(code, samples, repeat, PyBool_FromLong(intact));
}

/* _memlab_access(pattern, offset, n, repeat) -> samples */
static PyObject *py_access(PyObject *m, PyObject *args) {
  int pattern, offset, repeat;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "iini:_memlab_access", &pattern, &offset, &n, &repeat)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float *samples = new_samples(repeat);
  if (!samples) return NULL;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_memlab_access(pattern, offset, (size_t)n, repeat, samples);
  Py_END_ALLOW_THREADS
  return finish(code, samples, repeat, NULL);
}

/* A 1-D C-contiguous uint32 NumPy array: the successors of a chain. */
static int chain_arg(PyObject *obj, const uint32_t **successor, size_t *nodes) {
  if (gl_check_host_array(obj, "successor", 1, 0) < 0) return -1;
  if (PyArray_TYPE((PyArrayObject *)obj) != NPY_UINT32) {
    PyErr_SetString(PyExc_TypeError, "successor must be a uint32 array");
    return -1;
  }
  *successor = PyArray_DATA((PyArrayObject *)obj);
  *nodes = (size_t)PyArray_SIZE((PyArrayObject *)obj);
  /* Every link must name a node: the chase follows them without a check. */
  for (size_t i = 0; i < *nodes; i++)
    if ((*successor)[i] >= *nodes) {
      PyErr_Format(PyExc_ValueError, "successor[%zu] = %u is not a node index", i,
                   (unsigned)(*successor)[i]);
      return -1;
    }
  return 0;
}

/* The arguments of both chases: (successor, stride_words, warm_steps, steps, repeat). */
typedef struct {
  const uint32_t *successor;
  size_t nodes;
  Py_ssize_t stride_words, warm_steps, steps;
  int repeat;
} chase_args;

/* Parses them and checks the chain's geometry: nodes * stride_words must fit the 32-bit word
 * indices. Returns samples[repeat] to fill, or NULL with an error set. */
static float *parse_chase(PyObject *args, const char *format, chase_args *c) {
  PyObject *chain;
  if (!PyArg_ParseTuple(args, format, &chain, &c->stride_words, &c->warm_steps, &c->steps,
                        &c->repeat) ||
      chain_arg(chain, &c->successor, &c->nodes) < 0)
    return NULL;
  if (c->nodes == 0 || c->stride_words < 1 || c->steps < 1 || c->warm_steps < 0 ||
      (double)c->nodes * (double)c->stride_words > (double)UINT32_MAX) {
    PyErr_SetString(PyExc_ValueError,
                    "the chain needs nodes >= 1, stride >= 1 word, steps >= 1, warm_steps >= 0 and "
                    "at most 2^32 words");
    return NULL;
  }
  return new_samples(c->repeat);
}

/* _memlab_chase(successor, stride_words, warm_steps, steps, repeat) -> (samples, final_node) */
static PyObject *py_chase(PyObject *m, PyObject *args) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  chase_args c;
  float *samples = parse_chase(args, "Onnni:_memlab_chase", &c);
  if (!samples) return NULL;
  uint32_t final_node = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_memlab_chase(c.successor, c.nodes, (size_t)c.stride_words,
                          c.nodes * (size_t)c.stride_words, (size_t)c.warm_steps, (size_t)c.steps,
                          c.repeat, samples, &final_node);
  Py_END_ALLOW_THREADS
  return finish(code, samples, c.repeat, PyLong_FromUnsignedLong(final_node));
}

/* _memlab_bank(stride, iterations, repeat) -> samples */
static PyObject *py_bank(PyObject *m, PyObject *args) {
  int stride, iterations, repeat;
  if (!PyArg_ParseTuple(args, "iii:_memlab_bank", &stride, &iterations, &repeat)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float *samples = new_samples(repeat);
  if (!samples) return NULL;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_memlab_bank(stride, iterations, repeat, samples);
  Py_END_ALLOW_THREADS
  return finish(code, samples, repeat, NULL);
}

/* _memlab_constant(mode, iterations, repeat) -> (samples, loads) */
static PyObject *py_constant(PyObject *m, PyObject *args) {
  int mode, iterations, repeat;
  if (!PyArg_ParseTuple(args, "iii:_memlab_constant", &mode, &iterations, &repeat)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  float *samples = new_samples(repeat);
  if (!samples) return NULL;
  double loads = 0;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_memlab_constant(mode, iterations, repeat, samples, &loads);
  Py_END_ALLOW_THREADS
  return finish(code, samples, repeat, PyFloat_FromDouble(loads));
}

/* _memlab_chain(nodes, shuffle, seed) -> uint32 successor array (CPU) */
static PyObject *py_chain(PyObject *m, PyObject *args) {
  Py_ssize_t nodes;
  int shuffle;
  unsigned long long seed;
  if (!PyArg_ParseTuple(args, "npK:_memlab_chain", &nodes, &shuffle, &seed)) return NULL;
  if (nodes < 1 || (size_t)nodes > UINT32_MAX)
    return PyErr_Format(PyExc_ValueError, "nodes must lie in [1, 2^32), got %zd", nodes);
  npy_intp dims[1] = {nodes};
  PyObject *out = PyArray_SimpleNew(1, dims, NPY_UINT32);
  if (!out) return NULL;
  uint32_t *successor = PyArray_DATA((PyArrayObject *)out);
  Py_BEGIN_ALLOW_THREADS
  glcpu_chase_chain(successor, (size_t)nodes, shuffle, seed);
  Py_END_ALLOW_THREADS
  return out;
}

/* _memlab_cpu_chase(successor, stride_words, warm_steps, steps, repeat) -> (samples, final) */
static PyObject *py_cpu_chase(PyObject *m, PyObject *args) {
  chase_args c;
  float *samples = parse_chase(args, "Onnni:_memlab_cpu_chase", &c);
  if (!samples) return NULL;
  uint32_t *words = PyMem_RawMalloc(c.nodes * (size_t)c.stride_words * sizeof *words);
  double *seconds = PyMem_RawCalloc((size_t)c.repeat, sizeof *seconds);
  if (!words || !seconds) {
    PyMem_RawFree(words);
    PyMem_RawFree(seconds);
    PyMem_Free(samples);
    return PyErr_NoMemory();
  }
  uint32_t final_node = 0;
  Py_BEGIN_ALLOW_THREADS
  glcpu_chase(c.successor, c.nodes, (size_t)c.stride_words, words, (size_t)c.warm_steps,
              (size_t)c.steps, c.repeat, seconds, &final_node);
  Py_END_ALLOW_THREADS
  for (int i = 0; i < c.repeat; i++) samples[i] = (float)(seconds[i] * 1e3);
  PyMem_RawFree(words);
  PyMem_RawFree(seconds);
  return finish(0, samples, c.repeat, PyLong_FromUnsignedLong(final_node));
}

/* _memlab_walk(successor, steps) -> the node reached from node 0 after `steps` links */
static PyObject *py_walk(PyObject *m, PyObject *args) {
  PyObject *chain;
  Py_ssize_t steps;
  if (!PyArg_ParseTuple(args, "On:_memlab_walk", &chain, &steps)) return NULL;
  const uint32_t *successor;
  size_t nodes;
  if (chain_arg(chain, &successor, &nodes) < 0) return NULL;
  if (steps < 0) return PyErr_Format(PyExc_ValueError, "steps must be >= 0");
  uint32_t node;
  Py_BEGIN_ALLOW_THREADS
  node = glcpu_chain_walk(successor, (size_t)steps);
  Py_END_ALLOW_THREADS
  return PyLong_FromUnsignedLong(node);
}

/* _memlab_cpu_bandwidth(kind, a, b) -> seconds; kind 0 read b, 1 write a, 2 copy b to a. */
static PyObject *py_cpu_bandwidth(PyObject *m, PyObject *args) {
  int kind;
  PyObject *a_obj, *b_obj;
  if (!PyArg_ParseTuple(args, "iOO:_memlab_cpu_bandwidth", &kind, &a_obj, &b_obj)) return NULL;
  if (kind < 0 || kind > 2) return PyErr_Format(PyExc_ValueError, "kind must be 0, 1 or 2");
  if (gl_check_host_array(a_obj, "a", -1, 1) < 0 || gl_check_host_array(b_obj, "b", -1, 0) < 0)
    return NULL;
  size_t bytes = (size_t)PyArray_NBYTES((PyArrayObject *)a_obj);
  if (bytes == 0 || bytes != (size_t)PyArray_NBYTES((PyArrayObject *)b_obj))
    return PyErr_Format(PyExc_ValueError, "a and b must be non-empty and of the same size");
  void *a = PyArray_DATA((PyArrayObject *)a_obj);
  const void *b = PyArray_DATA((PyArrayObject *)b_obj);
  double seconds = 0;
  Py_BEGIN_ALLOW_THREADS
  glcpu_bandwidth(kind, a, b, bytes, &seconds);
  Py_END_ALLOW_THREADS
  return PyFloat_FromDouble(seconds);
}

static PyMethodDef memory_methods[] = {
    {"_memlab_memcpy", py_memcpy, METH_VARARGS, "Raw cudaMemcpy(dst, src), waited for."},
    {"_memlab_mapped", py_mapped, METH_VARARGS, "Zero-copy kernel transfer samples."},
    {"_memlab_managed", py_managed, METH_VARARGS, "Managed-memory migration samples."},
    {"_memlab_access", py_access, METH_VARARGS, "S1 granularity kernel samples."},
    {"_memlab_chase", py_chase, METH_VARARGS, "GPU pointer-chase samples."},
    {"_memlab_bank", py_bank, METH_VARARGS, "Shared-memory bank stride samples."},
    {"_memlab_constant", py_constant, METH_VARARGS, "Constant vs global table read samples."},
    {"_memlab_chain", py_chain, METH_VARARGS, "A pointer-chase chain (successor array)."},
    {"_memlab_cpu_chase", py_cpu_chase, METH_VARARGS,
     "CPU pointer chase: samples (ms), last node."},
    {"_memlab_walk", py_walk, METH_VARARGS, "Walk a chain on the host: the node reached."},
    {"_memlab_cpu_bandwidth", py_cpu_bandwidth, METH_VARARGS, "Host bandwidth: seconds."},
    {NULL}};

/* Measurements, not a ladder: no variant table. */
const gl_lab gl_lab_module_memory = {.name = "memory", .methods = memory_methods};
