/* The kernel facts behind gl.inspect (gpulab/inspect.py). Kernels travel to Python as the
 * address of their host stub; only addresses noted at a launch are looked up again, so no
 * integer from Python reaches the CUDA runtime as a function. */
#include "inspect.h"

#include "cuda/core/gpulab_core.h"
#include "errors.h"
#include "runtime.h"

static PyObject *py_launch_notes_begin(PyObject *m, PyObject *unused) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_launch_notes_begin();
  Py_RETURN_NONE;
}

static PyObject *triple(const unsigned v[3]) { return Py_BuildValue("(III)", v[0], v[1], v[2]); }

/* _launch_notes_end() -> (launches counted, [{kernel, grid, block, shared_bytes}, ...]) */
static PyObject *py_launch_notes_end(PyObject *m, PyObject *unused) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_launch_note *notes = PyMem_Malloc(GLC_MAX_LAUNCH_NOTES * sizeof *notes);
  if (!notes) return PyErr_NoMemory();
  int kept = 0;
  int counted = glc_launch_notes_end(notes, GLC_MAX_LAUNCH_NOTES, &kept);
  PyObject *list = PyList_New(kept);
  for (int i = 0; list && i < kept; ++i) {
    PyObject *note =
        Py_BuildValue("{s:N,s:N,s:N,s:I}", "kernel", PyLong_FromVoidPtr((void *)notes[i].kernel),
                      "grid", triple(notes[i].grid), "block", triple(notes[i].block),
                      "shared_bytes", notes[i].shared_bytes);
    if (!note)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, i, note);
  }
  PyMem_Free(notes);
  return list ? Py_BuildValue("(iN)", counted, list) : NULL;
}

/* The kernel behind a noted address, or NULL with ValueError set. */
static const void *noted_kernel(PyObject *obj) {
  const void *kernel = PyLong_AsVoidPtr(obj);
  if (!kernel && PyErr_Occurred()) return NULL;
  if (!kernel || !glc_kernel_was_noted(kernel)) {
    PyErr_SetString(PyExc_ValueError,
                    "kernel: not a kernel noted at a launch in this process (take it from "
                    "_launch_notes_end())");
    return NULL;
  }
  return kernel;
}

static PyObject *py_kernel_attributes(PyObject *m, PyObject *arg) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  const void *kernel = noted_kernel(arg);
  if (!kernel) return NULL;
  glc_kernel_attrs a;
  int code;
  Py_BEGIN_ALLOW_THREADS
  code = glc_kernel_attributes(kernel, &a);
  Py_END_ALLOW_THREADS
  if (code) return gl_raise_cuda(code);
  return Py_BuildValue("{s:i,s:i,s:i,s:i,s:n,s:n,s:n,s:i,s:s,s:s}", "registers", a.registers,
                       "max_threads_per_block", a.max_threads_per_block, "binary_version",
                       a.binary_version, "ptx_version", a.ptx_version, "static_shared_bytes",
                       (Py_ssize_t)a.static_shared_bytes, "local_bytes", (Py_ssize_t)a.local_bytes,
                       "const_bytes", (Py_ssize_t)a.const_bytes, "max_dynamic_shared_bytes",
                       a.max_dynamic_shared_bytes, "mangled", a.mangled, "demangled", a.demangled);
}

/* _kernel_occupancy(kernel, block, dynamic_shared_bytes) -> resident blocks per SM */
static PyObject *py_kernel_occupancy(PyObject *m, PyObject *args) {
  PyObject *kernel_obj;
  int block;
  Py_ssize_t shared;
  if (!PyArg_ParseTuple(args, "Oin:_kernel_occupancy", &kernel_obj, &block, &shared)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  const void *kernel = noted_kernel(kernel_obj);
  if (!kernel) return NULL;
  if (block < 1 || block > 1024 || shared < 0)
    return PyErr_Format(PyExc_ValueError,
                        "block must be in 1..1024 and dynamic shared memory >= 0, got %d, %zd",
                        block, shared);
  int per_sm = 0;
  int code = glc_kernel_occupancy(kernel, block, (size_t)shared, &per_sm);
  if (code) return gl_raise_cuda(code);
  return PyLong_FromLong(per_sm);
}

static PyObject *py_occupancy_limits(PyObject *m, PyObject *unused) {
  if (gl_require_gpu(NULL) < 0) return NULL;
  glc_occupancy_limits l;
  int code = glc_occupancy_limits_get(&l);
  if (code) return gl_raise_cuda(code);
  return Py_BuildValue("{s:i,s:i,s:i,s:n,s:n}", "max_blocks_per_sm", l.max_blocks_per_sm,
                       "max_threads_per_sm", l.max_threads_per_sm, "registers_per_sm",
                       l.registers_per_sm, "shared_per_sm", (Py_ssize_t)l.shared_per_sm,
                       "reserved_shared_per_block", (Py_ssize_t)l.reserved_shared_per_block);
}

PyMethodDef gl_inspect_methods[] = {
    {"_launch_notes_begin", py_launch_notes_begin, METH_NOARGS,
     "Starts noting every kernel launch (gl.inspect)."},
    {"_launch_notes_end", py_launch_notes_end, METH_NOARGS,
     "Stops noting; returns (launches counted, the notes kept)."},
    {"_kernel_attributes", py_kernel_attributes, METH_O,
     "cudaFuncGetAttributes and the symbol of a noted kernel."},
    {"_kernel_occupancy", py_kernel_occupancy, METH_VARARGS,
     "Resident blocks per SM of a noted kernel at (block, dynamic shared bytes)."},
    {"_occupancy_limits", py_occupancy_limits, METH_NOARGS,
     "The current device's per-SM limits on blocks, threads, registers and shared memory."},
    {NULL, NULL, 0, NULL}};
