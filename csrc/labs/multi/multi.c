/* The multi lab's bindings: NCCL opened at run time, communicators, the all-reduce and the
 * partitioned reduce, arrays on any device, and the devices' topology. The Python module
 * gpulab.multi finds NCCL, validates every argument before it calls these, splits arrays and builds
 * the tables; these check again what could crash. */
#include <string.h>

#include "csrc/core/args.h"
#include "csrc/core/devarray.h"
#include "csrc/core/errors.h"
#include "csrc/core/host.h"
#include "csrc/core/interop.h"
#include "csrc/core/registry.h"
#include "csrc/core/runtime.h"
#include "cuda/multi/multi.h"

#define COMM_CAPSULE "gpulab.multi.comm"
#define MEMORY_CAPSULE "gpulab.multi.memory"

/* ---- NCCL ---- */

/* _multi_nccl_open(path) -> (True, version) or (False, why) */
static PyObject *py_nccl_open(PyObject *m, PyObject *args) {
  const char *path;
  if (!PyArg_ParseTuple(args, "s:_multi_nccl_open", &path)) return NULL;
  if (!glc_cuda_built || !glc_cuda_built())
    return Py_BuildValue("(Os)", Py_False, "built without CUDA");
  char why[512];
  int version = 0, code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_nccl_open(path, &version, why, sizeof why);
  Py_END_ALLOW_THREADS
  if (code) return Py_BuildValue("(Os)", Py_False, why);
  return Py_BuildValue("(Oi)", Py_True, version);
}

/* _multi_unique_id() -> 128 bytes */
static PyObject *py_unique_id(PyObject *m, PyObject *unused) {
  char id[GLC_NCCL_UNIQUE_ID_BYTES];
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_nccl_unique_id(id);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return PyBytes_FromStringAndSize(id, sizeof id);
}

/* ---- communicators: capsules; destroyed by _multi_comm_destroy or by the capsule's end ---- */

static void comm_capsule_end(PyObject *capsule) {
  glc_multi_comm *comm = PyCapsule_GetPointer(capsule, COMM_CAPSULE);
  if (comm) glc_multi_comm_destroy(comm);
}

static glc_multi_comm *comm_of(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, COMM_CAPSULE))
    return PyErr_SetString(PyExc_TypeError, "comm must be a gpulab.multi communicator"), NULL;
  glc_multi_comm *comm = PyCapsule_GetPointer(capsule, COMM_CAPSULE);
  if (!comm) PyErr_SetString(PyExc_ValueError, "the communicator is closed");
  return comm;
}

static PyObject *comm_capsule(glc_multi_comm *comm) {
  PyObject *capsule = PyCapsule_New(comm, COMM_CAPSULE, comm_capsule_end);
  if (!capsule) glc_multi_comm_destroy(comm);
  return capsule;
}

/* _multi_comm_init_all(devices: tuple of int) -> list of capsules, rank i on devices[i] */
static PyObject *py_comm_init_all(PyObject *m, PyObject *args) {
  PyObject *devices_obj;
  if (!PyArg_ParseTuple(args, "O!:_multi_comm_init_all", &PyTuple_Type, &devices_obj)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  int count = (int)PyTuple_GET_SIZE(devices_obj);
  if (count < 1 || count > 64) return PyErr_Format(PyExc_ValueError, "1 to 64 devices");
  int devices[64];
  glc_multi_comm *comms[64];
  for (int i = 0; i < count; i++) {
    devices[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(devices_obj, i));
    if (devices[i] == -1 && PyErr_Occurred()) return NULL;
  }
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_comm_init_all(count, devices, comms);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  PyObject *list = PyList_New(count);
  for (int i = 0; i < count; i++) {
    /* comm_capsule destroys comms[i] when it fails; the list's capsules destroy theirs */
    PyObject *capsule = list ? comm_capsule(comms[i]) : NULL;
    if (!capsule) {
      for (int k = list ? i + 1 : i; k < count; k++) glc_multi_comm_destroy(comms[k]);
      Py_XDECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, capsule);
  }
  return list;
}

/* _multi_comm_init_rank(unique_id: bytes, rank, world, device) -> capsule */
static PyObject *py_comm_init_rank(PyObject *m, PyObject *args) {
  const char *id;
  Py_ssize_t id_size;
  int rank, world, device;
  if (!PyArg_ParseTuple(args, "y#iii:_multi_comm_init_rank", &id, &id_size, &rank, &world, &device))
    return NULL;
  if (id_size != GLC_NCCL_UNIQUE_ID_BYTES)
    return PyErr_Format(PyExc_ValueError, "unique_id must be %d bytes, got %zd",
                        GLC_NCCL_UNIQUE_ID_BYTES, id_size);
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_multi_comm *comm = NULL;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_comm_init_rank(id, rank, world, device, &comm);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return comm_capsule(comm);
}

/* _multi_comm_info(capsule) -> (rank, world, device) */
static PyObject *py_comm_info(PyObject *m, PyObject *capsule) {
  glc_multi_comm *comm = comm_of(capsule);
  if (!comm) return NULL;
  int rank, world, device;
  glc_multi_comm_info(comm, &rank, &world, &device);
  return Py_BuildValue("(iii)", rank, world, device);
}

/* _multi_comm_destroy(capsule): idempotent */
static PyObject *py_comm_destroy(PyObject *m, PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, COMM_CAPSULE)) Py_RETURN_NONE; /* already closed */
  glc_multi_comm *comm = PyCapsule_GetPointer(capsule, COMM_CAPSULE);
  /* The capsule no longer owns it, whatever the destroy returns. */
  if (PyCapsule_SetName(capsule, NULL) < 0) return NULL;
  PyCapsule_SetDestructor(capsule, NULL);
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_comm_destroy(comm);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

/* Gathers count communicators from a list of capsules. */
static int comms_of(PyObject *list, int count, glc_multi_comm **comms) {
  for (int i = 0; i < count; i++)
    if (!(comms[i] = comm_of(PyList_GET_ITEM(list, i)))) return -1;
  return 0;
}

/* _multi_allreduce(comms: list, arrays: list of DeviceArray, nccl_type, nccl_op): in place */
static PyObject *py_allreduce(PyObject *m, PyObject *args) {
  PyObject *comms_obj, *arrays_obj;
  int type, op;
  if (!PyArg_ParseTuple(args, "O!O!ii:_multi_allreduce", &PyList_Type, &comms_obj, &PyList_Type,
                        &arrays_obj, &type, &op))
    return NULL;
  int count = (int)PyList_GET_SIZE(comms_obj);
  if (count < 1 || count > 64 || PyList_GET_SIZE(arrays_obj) != count)
    return PyErr_Format(PyExc_ValueError, "one array per communicator (1 to 64)");
  glc_multi_comm *comms[64];
  void *buffers[64];
  glc_stream after[64];
  if (comms_of(comms_obj, count, comms) < 0) return NULL;
  gl_DeviceArrayObject *first = NULL;
  for (int i = 0; i < count; i++) {
    PyObject *item = PyList_GET_ITEM(arrays_obj, i);
    if (!gl_DeviceArray_Check(item))
      return PyErr_Format(PyExc_TypeError, "arrays[%d] must be a gpulab.DeviceArray", i);
    gl_DeviceArrayObject *a = (gl_DeviceArrayObject *)item;
    gl_devarray_forget_mirror(a);
    int rank, world, device;
    glc_multi_comm_info(comms[i], &rank, &world, &device);
    if (gl_check_device_array(a, "arrays[i]", -1, 1) < 0) return NULL;
    if (a->device != device)
      return PyErr_Format(PyExc_ValueError, "arrays[%d] lives on device %d, its rank on %d", i,
                          a->device, device);
    if (first && (a->size != first->size || a->dtype->type_num != first->dtype->type_num))
      return PyErr_Format(PyExc_ValueError, "arrays[%d] differs from arrays[0] in size or dtype",
                          i);
    first = first ? first : a;
    buffers[i] = a->ptr;
    after[i] = a->stream;
  }
  size_t n = (size_t)first->size;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_allreduce(count, comms, buffers, after, n, type, op);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

/* _multi_reduce(comms: list or None, device, parts: list, on_host, dtype, variant, block,
 *               reduce_op, result_type, nccl_op, identity: 8 bytes) -> 8 bytes (rank 0's) */
static PyObject *py_reduce(PyObject *m, PyObject *args) {
  PyObject *comms_obj, *parts_obj;
  int device, on_host, dtype, variant, block, reduce_op, result_type, nccl_op;
  const char *identity;
  Py_ssize_t identity_size;
  if (!PyArg_ParseTuple(args, "OiO!piiiiiiy#:_multi_reduce", &comms_obj, &device, &PyList_Type,
                        &parts_obj, &on_host, &dtype, &variant, &block, &reduce_op, &result_type,
                        &nccl_op, &identity, &identity_size))
    return NULL;
  if (identity_size != 8) return PyErr_Format(PyExc_ValueError, "identity must be 8 bytes");
  if (gl_require_gpu(NULL) < 0) return NULL;
  int count = (int)PyList_GET_SIZE(parts_obj);
  if (count < 1 || count > 64) return PyErr_Format(PyExc_ValueError, "1 to 64 parts");
  glc_multi_comm *comms[64] = {NULL};
  const void *parts[64];
  size_t counts[64];
  if (comms_obj != Py_None) {
    if (!PyList_Check(comms_obj) || PyList_GET_SIZE(comms_obj) != count)
      return PyErr_Format(PyExc_ValueError, "one communicator per part");
    if (comms_of(comms_obj, count, comms) < 0) return NULL;
  } else if (count != 1) {
    return PyErr_Format(PyExc_ValueError, "several parts need communicators");
  }
  for (int i = 0; i < count; i++) {
    PyObject *item = PyList_GET_ITEM(parts_obj, i);
    if (on_host) {
      if (gl_check_host_array(item, "part", 1, 0) < 0) return NULL;
      PyArrayObject *a = (PyArrayObject *)item;
      if (gl_dtype_code(PyArray_DESCR(a)) != dtype)
        return PyErr_Format(PyExc_TypeError, "parts[%d] has another dtype", i);
      parts[i] = PyArray_DATA(a);
      counts[i] = (size_t)PyArray_SIZE(a);
    } else {
      if (!gl_DeviceArray_Check(item))
        return PyErr_Format(PyExc_TypeError, "parts[%d] must be a gpulab.DeviceArray", i);
      gl_DeviceArrayObject *a = (gl_DeviceArrayObject *)item;
      gl_devarray_forget_mirror(a);
      if (gl_check_device_array(a, "part", -1, 0) < 0) return NULL;
      if (gl_dtype_code(a->dtype) != dtype)
        return PyErr_Format(PyExc_TypeError, "parts[%d] has another dtype", i);
      int want = comms[i] ? 0 : device;
      if (comms[i]) {
        int rank, world;
        glc_multi_comm_info(comms[i], &rank, &world, &want);
      }
      if (a->device != want)
        return PyErr_Format(PyExc_ValueError, "parts[%d] lives on device %d, not %d", i, a->device,
                            want);
      parts[i] = a->ptr;
      counts[i] = (size_t)a->size;
    }
  }
  char result[8] = {0};
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_reduce(count, comms, &device, parts, counts, on_host, dtype, variant, block,
                          reduce_op, result_type, nccl_op, identity, result);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return PyBytes_FromStringAndSize(result, sizeof result);
}

/* ---- Jacobi over slabs ---- */

/* One grid of _multi_jacobi: a C-contiguous NumPy array or DeviceArray (any device). */
typedef struct {
  void *data;
  int ndim, dtype, device; /* device -1: NumPy */
  Py_ssize_t shape[GL_MAX_NDIM];
} grid;

static int grid_of(PyObject *obj, const char *argname, int writeable, grid *g) {
  if (gl_DeviceArray_Check(obj)) {
    gl_DeviceArrayObject *a = (gl_DeviceArrayObject *)obj;
    gl_devarray_forget_mirror(a);
    if (gl_check_device_array(a, argname, -1, writeable) < 0) return -1;
    g->data = a->ptr;
    g->ndim = a->ndim;
    g->dtype = gl_dtype_code(a->dtype);
    g->device = a->device;
    for (int i = 0; i < a->ndim; i++) g->shape[i] = a->shape[i];
    return 0;
  }
  if (gl_check_host_array(obj, argname, -1, writeable) < 0) return -1;
  PyArrayObject *h = (PyArrayObject *)obj;
  g->data = PyArray_DATA(h);
  g->ndim = PyArray_NDIM(h);
  g->dtype = gl_dtype_code(PyArray_DESCR(h));
  g->device = -1;
  for (int i = 0; i < g->ndim && i < GL_MAX_NDIM; i++) g->shape[i] = PyArray_DIM(h, i);
  return 0;
}

static int same_grid(const grid *a, const grid *b) {
  if (a->ndim != b->ndim || a->dtype != b->dtype) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

/* _multi_jacobi(devices: tuple, comms: list or None, exchange, overlap, depth, f, u0, starts:
 * tuple, h, max_sweeps, tol, check_every, out) -> (u, residuals, sweeps, checks, converged, timing
 * dict, depth run). depth: 0, the fused sweeps; 1..15, temporal passes of up to depth sweeps
 * (2-D), lowered to the thinnest slab's rows where it is thinner. f: a
 * C-contiguous NumPy array or DeviceArray (any device, ready: gl.multi waited for its device) of a
 * 2-D or 3-D float grid; u0: None (zeros) or one of f's shape and dtype, on the host or any device;
 * out: None (u: a new NumPy array) or the DeviceArray that receives u. residuals: a float64 array
 * of ceil(max_sweeps/check_every) of which the first `checks` are written; timing {"compute_ms":
 * [per GPU], "exchange_ms": [per GPU], "allreduce_ms", "total_ms", "scatter_ms", "gather_ms"}.
 * gpulab.labs.multi checks every argument first. */
static PyObject *py_jacobi(PyObject *m, PyObject *args) {
  PyObject *devices_obj, *comms_obj, *starts_obj, *f_obj, *u0_obj, *out_obj;
  int exchange, overlap, depth;
  double h, tol;
  unsigned long long max_sweeps, check_every;
  if (!PyArg_ParseTuple(args, "O!OipiOOO!dKdKO:_multi_jacobi", &PyTuple_Type, &devices_obj,
                        &comms_obj, &exchange, &overlap, &depth, &f_obj, &u0_obj, &PyTuple_Type,
                        &starts_obj, &h, &max_sweeps, &tol, &check_every, &out_obj))
    return NULL;
  int count = (int)PyTuple_GET_SIZE(devices_obj);
  if (count < 1 || count > GLC_MULTI_MAX_GPUS || PyTuple_GET_SIZE(starts_obj) != count + 1)
    return PyErr_Format(PyExc_ValueError, "1 to %d devices, count + 1 starts", GLC_MULTI_MAX_GPUS);
  if (check_every == 0) return PyErr_Format(PyExc_ValueError, "check_every must be >= 1");
  if (depth < 0 || depth > 15) return PyErr_Format(PyExc_ValueError, "depth: 0 to 15");
  grid f, u0, dest;
  if (grid_of(f_obj, "f", 0, &f) < 0 || (u0_obj != Py_None && grid_of(u0_obj, "u0", 0, &u0) < 0) ||
      (out_obj != Py_None && grid_of(out_obj, "out", 1, &dest) < 0))
    return NULL;
  if ((f.ndim != 2 && f.ndim != 3) || (f.dtype != GLC_F32 && f.dtype != GLC_F64) ||
      (u0_obj != Py_None && !same_grid(&f, &u0)))
    return PyErr_Format(PyExc_ValueError, "f and u0: one 2-D or 3-D float shape and dtype");
  if (depth && f.ndim != 2)
    return PyErr_Format(PyExc_ValueError, "temporal blocking (depth > 0) is 2-D only");
  if (out_obj != Py_None && (!same_grid(&f, &dest) || dest.device < 0))
    return PyErr_Format(PyExc_ValueError, "out: a DeviceArray of f's shape and dtype");
  if (out_obj == Py_None && f.device >= 0)
    return PyErr_Format(PyExc_ValueError, "out: f lives on a device, u must be given a place");
  if (gl_require_gpu(NULL) < 0) return NULL;
  int devices[GLC_MULTI_MAX_GPUS];
  size_t starts[GLC_MULTI_MAX_GPUS + 1], shape[3];
  glc_multi_comm *comms[GLC_MULTI_MAX_GPUS];
  for (int i = 0; i < count; i++) {
    devices[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(devices_obj, i));
    if (devices[i] == -1 && PyErr_Occurred()) return NULL;
  }
  for (int i = 0; i <= count; i++) {
    starts[i] = (size_t)PyLong_AsSize_t(PyTuple_GET_ITEM(starts_obj, i));
    if (starts[i] == (size_t)-1 && PyErr_Occurred()) return NULL;
  }
  size_t bytes = f.dtype == GLC_F64 ? sizeof(double) : sizeof(float);
  for (int a = 0; a < f.ndim; a++) {
    shape[a] = (size_t)f.shape[a];
    bytes *= shape[a];
  }
  if (comms_obj != Py_None) {
    if (!PyList_Check(comms_obj) || PyList_GET_SIZE(comms_obj) != count)
      return PyErr_Format(PyExc_ValueError, "one communicator per device");
    if (comms_of(comms_obj, count, comms) < 0) return NULL;
  }
  const npy_intp capacity = (npy_intp)(max_sweeps / check_every + (max_sweeps % check_every != 0));
  PyArrayObject *residuals = (PyArrayObject *)PyArray_ZEROS(1, &capacity, NPY_FLOAT64, 0);
  PyObject *u = NULL;
  if (residuals && out_obj != Py_None) {
    u = Py_NewRef(out_obj);
  } else if (residuals) {
    npy_intp dims[3];
    for (int a = 0; a < f.ndim; a++) dims[a] = (npy_intp)shape[a];
    u = PyArray_SimpleNew(f.ndim, dims, f.dtype == GLC_F64 ? NPY_FLOAT64 : NPY_FLOAT32);
    /* poisoned (0xff: NaN in either dtype), so that a row the gather missed shows; filled on
     * every core, the fresh array's pages fault in at once, not one by one in the gather */
    if (u) glcpu_parallel_fill(PyArray_DATA((PyArrayObject *)u), 0xff, bytes);
  }
  void *u_data = !u ? NULL : out_obj != Py_None ? dest.data : PyArray_DATA((PyArrayObject *)u);
  glc_multi_jacobi_result *result = u ? PyMem_Calloc(1, sizeof *result) : NULL;
  if (!result) {
    Py_XDECREF(u);
    Py_XDECREF(residuals);
    return PyErr_NoMemory();
  }
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_jacobi(count, devices, comms_obj != Py_None ? comms : NULL, exchange, overlap,
                          depth, f.dtype, f.ndim, shape, starts, h, (size_t)max_sweeps, tol,
                          (size_t)check_every, f.data, u0_obj != Py_None ? u0.data : NULL, u_data,
                          (double *)PyArray_DATA(residuals), (size_t)capacity, result);
  Py_END_ALLOW_THREADS
  PyObject *out = NULL;
  if (code) {
    gl_raise_cuda(code);
  } else {
    PyObject *compute = PyList_New(count), *exchanged = PyList_New(count);
    for (int i = 0; compute && exchanged && i < count; i++) {
      PyList_SET_ITEM(compute, i, PyFloat_FromDouble(result->compute_ms[i]));
      PyList_SET_ITEM(exchanged, i, PyFloat_FromDouble(result->exchange_ms[i]));
    }
    PyObject *timing =
        compute && exchanged
            ? Py_BuildValue("{sOsOsdsdsdsd}", "compute_ms", compute, "exchange_ms", exchanged,
                            "allreduce_ms", result->allreduce_ms, "total_ms", result->total_ms,
                            "scatter_ms", result->scatter_ms, "gather_ms", result->gather_ms)
            : NULL;
    if (timing)
      out = Py_BuildValue("(OOnnONi)", u, residuals, (Py_ssize_t)result->sweeps,
                          (Py_ssize_t)result->checks, result->converged ? Py_True : Py_False,
                          timing, result->depth);
    Py_XDECREF(compute);
    Py_XDECREF(exchanged);
  }
  PyMem_Free(result);
  Py_DECREF(u);
  Py_DECREF(residuals);
  return out;
}

/* ---- arrays on any device ---- */

typedef struct {
  void *ptr;
  int device;
} multi_memory;

static void memory_capsule_end(PyObject *capsule) {
  multi_memory *mem = PyCapsule_GetPointer(capsule, MEMORY_CAPSULE);
  if (!mem) return;
  glc_multi_free(mem->device, mem->ptr);
  PyMem_Free(mem);
}

/* _multi_empty(shape: tuple, dtype, device) -> DeviceArray on device, its memory owned by a
 * capsule (gpulab's own pool serves device 0 only) */
static PyObject *py_empty(PyObject *m, PyObject *args) {
  PyObject *shape_obj, *dtype_obj;
  int device;
  if (!PyArg_ParseTuple(args, "OOi:_multi_empty", &shape_obj, &dtype_obj, &device)) return NULL;
  int ndim = 0;
  Py_ssize_t shape[GL_MAX_NDIM], size = 0;
  if (gl_shape_arg(shape_obj, &ndim, shape, &size) < 0) return NULL;
  PyArray_Descr *dtype = NULL;
  if (!PyArray_DescrConverter(dtype_obj, &dtype)) return NULL;
  if (gl_dtype_code(dtype) < 0) {
    Py_DECREF(dtype);
    return PyErr_Format(PyExc_TypeError, "dtype %S is not one of gpulab's", (PyObject *)dtype);
  }
  if (gl_require_gpu(NULL) < 0) return Py_DECREF(dtype), NULL;
  size_t bytes = (size_t)size * (size_t)PyDataType_ELSIZE(dtype);
  multi_memory *mem = PyMem_Malloc(sizeof *mem);
  if (!mem) return Py_DECREF(dtype), PyErr_NoMemory();
  mem->device = device;
  mem->ptr = NULL;
  glc_stream stream = NULL;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_alloc(device, bytes, &mem->ptr);
  if (!code) code = glc_multi_device_stream(device, &stream);
  Py_END_ALLOW_THREADS
  if (code) {
    if (mem->ptr) glc_multi_free(device, mem->ptr);
    PyMem_Free(mem);
    Py_DECREF(dtype);
    return gl_raise_cuda(code);
  }
  PyObject *capsule = PyCapsule_New(mem, MEMORY_CAPSULE, memory_capsule_end);
  if (!capsule) {
    glc_multi_free(device, mem->ptr);
    PyMem_Free(mem);
    Py_DECREF(dtype);
    return NULL;
  }
  gl_DeviceArrayObject *a =
      gl_devarray_wrap(mem->ptr, ndim, shape, NULL, dtype, device, 0, capsule);
  Py_DECREF(capsule);
  Py_DECREF(dtype);
  if (a) a->stream = stream; /* the device's own stream, not gpulab's device-0 stream */
  return (PyObject *)a;
}

/* _multi_as_device(obj, argname) -> a DeviceArray of obj (itself, or a zero-copy view of a CuPy,
 * PyTorch or other CAI or DLPack array) on whichever device it lives, with every stream of that
 * device waited for: what its producer queued on any stream is then done. */
static PyObject *py_as_device(PyObject *m, PyObject *args) {
  PyObject *obj;
  const char *argname;
  if (!PyArg_ParseTuple(args, "Os:_multi_as_device", &obj, &argname)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  gl_DeviceArrayObject *a = gl_as_device_array_anywhere(obj, argname);
  if (!a) return NULL;
  int device = a->device, code;
  glc_stream stream = NULL;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_device_synchronize(device);
  if (!code && (PyObject *)a != obj) code = glc_multi_device_stream(device, &stream);
  Py_END_ALLOW_THREADS
  if (code) return Py_DECREF(a), gl_raise_cuda(code);
  if ((PyObject *)a != obj) a->stream = stream; /* a view's work is ordered on its device */
  return (PyObject *)a;
}

/* _multi_copy(device, dst, src, bytes): dst and src are addresses (ints); waits */
static PyObject *py_copy(PyObject *m, PyObject *args) {
  int device;
  unsigned long long dst, src;
  Py_ssize_t bytes;
  if (!PyArg_ParseTuple(args, "iKKn:_multi_copy", &device, &dst, &src, &bytes)) return NULL;
  if (bytes < 0) return PyErr_Format(PyExc_ValueError, "bytes must be >= 0");
  if (gl_require_gpu(NULL) < 0) return NULL;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code =
      glc_multi_copy(device, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, (size_t)bytes);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  Py_RETURN_NONE;
}

/* ---- topology ---- */

static PyObject *int_matrix(const int *v, int n) {
  PyObject *rows = PyList_New(n);
  for (int i = 0; rows && i < n; i++) {
    PyObject *row = PyList_New(n);
    if (!row) return Py_DECREF(rows), NULL;
    for (int j = 0; j < n; j++) PyList_SET_ITEM(row, j, PyLong_FromLong(v[i * n + j]));
    PyList_SET_ITEM(rows, i, row);
  }
  return rows;
}

/* _multi_topology(count) -> (access, native_atomics, performance_rank), n x n lists */
static PyObject *py_topology(PyObject *m, PyObject *args) {
  int count;
  if (!PyArg_ParseTuple(args, "i:_multi_topology", &count)) return NULL;
  if (count < 1 || count > 64) return PyErr_Format(PyExc_ValueError, "1 to 64 devices");
  if (gl_require_gpu(NULL) < 0) return NULL;
  int access[64 * 64], atomics[64 * 64], rank[64 * 64];
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_topology(count, access, atomics, rank);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return Py_BuildValue("(NNN)", int_matrix(access, count), int_matrix(atomics, count),
                       int_matrix(rank, count));
}

/* _multi_bandwidth(count, bytes, repeat) -> n x n list of GB/s */
static PyObject *py_bandwidth(PyObject *m, PyObject *args) {
  int count, repeat;
  Py_ssize_t bytes;
  if (!PyArg_ParseTuple(args, "ini:_multi_bandwidth", &count, &bytes, &repeat)) return NULL;
  if (count < 1 || count > 64 || bytes < 1 || repeat < 1)
    return PyErr_Format(PyExc_ValueError, "bad count, bytes or repeat");
  if (gl_require_gpu(NULL) < 0) return NULL;
  double gbps[64 * 64];
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_multi_p2p_bandwidth(count, (size_t)bytes, repeat, gbps);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  PyObject *rows = PyList_New(count);
  for (int i = 0; rows && i < count; i++) {
    PyObject *row = PyList_New(count);
    if (!row) return Py_DECREF(rows), NULL;
    for (int j = 0; j < count; j++)
      PyList_SET_ITEM(row, j, PyFloat_FromDouble(gbps[i * count + j]));
    PyList_SET_ITEM(rows, i, row);
  }
  return rows;
}

/* _multi_device_count() -> int (raises NoDeviceError without a GPU) */
static PyObject *py_device_count(PyObject *m, PyObject *unused) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  int count = 0, code = glc_device_count(&count);
  if (code) return gl_raise_cuda(code);
  return PyLong_FromLong(count);
}

static PyMethodDef multi_methods[] = {
    {"_multi_nccl_open", py_nccl_open, METH_VARARGS,
     "Opens NCCL: (True, version) or (False, why)."},
    {"_multi_unique_id", py_unique_id, METH_NOARGS, "ncclGetUniqueId: 128 bytes."},
    {"_multi_comm_init_all", py_comm_init_all, METH_VARARGS, "ncclCommInitAll over devices."},
    {"_multi_comm_init_rank", py_comm_init_rank, METH_VARARGS, "ncclCommInitRank."},
    {"_multi_comm_info", py_comm_info, METH_O, "(rank, world, device) of a communicator."},
    {"_multi_comm_destroy", py_comm_destroy, METH_O, "Destroys a communicator (idempotent)."},
    {"_multi_allreduce", py_allreduce, METH_VARARGS, "In-place NCCL all-reduce."},
    {"_multi_reduce", py_reduce, METH_VARARGS, "Local reduces, then an all-reduce of scalars."},
    {"_multi_jacobi", py_jacobi, METH_VARARGS, "Jacobi over slabs of several GPUs."},
    {"_multi_empty", py_empty, METH_VARARGS, "A DeviceArray on any device."},
    {"_multi_as_device", py_as_device, METH_VARARGS, "A DeviceArray of a device array, any GPU."},
    {"_multi_copy", py_copy, METH_VARARGS, "A copy between any memories (UVA); waits."},
    {"_multi_topology", py_topology, METH_VARARGS, "P2P access, native atomics, rank."},
    {"_multi_bandwidth", py_bandwidth, METH_VARARGS, "P2P copy GB/s, every pair."},
    {"_multi_device_count", py_device_count, METH_NOARGS, "CUDA devices visible."},
    {NULL}};

/* Communication and placement over several GPUs, not a ladder: no variant table. */
const gl_lab gl_lab_module_multi = {.name = "multi", .methods = multi_methods};
