/* NVTX ranges through the toolkit's header-only NVTX3. With no tool attached, NVTX3 resolves
 * each entry point to a no-op on its first call, and a push costs a call through a pointer.
 * A build without the CUDA toolkit has no NVTX headers: the ranges are then no-ops here, and
 * gpulab.nvtx says so. */
#include "nvtx.h"

#ifndef GPULAB_HAVE_NVTX
#define GPULAB_HAVE_NVTX 0
#endif
#if GPULAB_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

static PyObject *py_nvtx_push(PyObject *m, PyObject *arg) {
  if (!PyUnicode_Check(arg))
    return PyErr_Format(PyExc_TypeError, "name must be a str, not %s", Py_TYPE(arg)->tp_name);
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name) return NULL;
#if GPULAB_HAVE_NVTX
  return PyLong_FromLong(nvtxRangePushA(name));
#else
  return PyLong_FromLong(-1);
#endif
}

static PyObject *py_nvtx_pop(PyObject *m, PyObject *unused) {
#if GPULAB_HAVE_NVTX
  return PyLong_FromLong(nvtxRangePop());
#else
  return PyLong_FromLong(-1);
#endif
}

static PyObject *py_nvtx_built(PyObject *m, PyObject *unused) {
  return PyBool_FromLong(GPULAB_HAVE_NVTX);
}

PyMethodDef gl_nvtx_methods[] = {
    {"_nvtx_push", py_nvtx_push, METH_O,
     "nvtxRangePushA(name): the nesting level, or a negative value when no tool records it."},
    {"_nvtx_pop", py_nvtx_pop, METH_NOARGS, "nvtxRangePop()."},
    {"_nvtx_built", py_nvtx_built, METH_NOARGS, "True when built with the toolkit's NVTX3."},
    {NULL, NULL, 0, NULL}};
