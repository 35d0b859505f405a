/* gpulab._core: module set-up, build and device information. The labs' functions come from
 * the registry's list (csrc/labs/labs.def). */
#define GL_MODULE_MAIN
#include "py.h"

#include "arrays.h"
#include "devarray.h"
#include "errors.h"
#include "gpulab_build_info.h"
#include "host.h"
#include "inspect.h"
#include "interop.h"
#include "measure.h"
#include "nvtx.h"
#include "registry.h"
#include "runtime.h"
#include "stream.h"
#include "transfer.h"

static PyObject *py_build_info(PyObject *m, PyObject *unused) {
  int linked = glc_cuda_built != NULL && glc_cuda_built();
  return Py_BuildValue("{s:O,s:s,s:s,s:s,s:s,s:s,s:s,s:O,s:i}", "cuda", linked ? Py_True : Py_False,
                       "archs", GPULAB_CUDA_ARCHS, "nvcc", GPULAB_NVCC, "nvcc_version",
                       GPULAB_NVCC_VERSION, "nvcc_flags", GPULAB_NVCC_FLAGS, "cc", GPULAB_CC,
                       "cflags", GPULAB_CFLAGS, "openmp", glcpu_openmp() ? Py_True : Py_False,
                       "openmp_threads", glcpu_max_threads());
}

static PyObject *py_cuda_available(PyObject *m, PyObject *unused) {
  return PyBool_FromLong(gl_gpu_ready());
}

/* Why the GPU is not usable: (code, reason) or None when it is. */
static PyObject *py_gpu_status(PyObject *m, PyObject *unused) {
  if (gl_gpu_ready()) Py_RETURN_NONE;
  gl_raise_no_device(gl_gpu_start_code(), NULL);
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

static PyObject *py_exact_alloc(PyObject *m, PyObject *unused) {
  return PyBool_FromLong(gl_exact_alloc());
}

static PyObject *version_string(int v) {
  return PyUnicode_FromFormat("%d.%d", v / 1000, (v % 1000) / 10);
}

static PyObject *py_device_info(PyObject *m, PyObject *args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "|i:device_info", &device)) return NULL;
  if (gl_require_gpu(NULL) < 0) return NULL;
  int count = 0, code = glc_device_count(&count);
  if (code) return gl_raise_cuda(code);
  if (device < 0 || device >= count)
    return PyErr_Format(PyExc_ValueError, "device must be in [0, %d), got %d", count, device);
  glc_device_props p;
  int driver = 0, runtime = 0;
  if ((code = glc_device_props_get(device, &p)) || (code = glc_versions(&driver, &runtime)))
    return gl_raise_cuda(code);
  /* Double data rate: two transfers per memory clock. */
  double peak_gbps = 2.0 * p.memory_clock_khz * 1e3 * (p.memory_bus_width / 8.0) / 1e9;
  double peak_gflops = 2.0 * p.fp32_per_sm_per_clock * p.multiprocessors * p.clock_khz * 1e3 / 1e9;
  char pci[32];
  snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", p.pci_domain_id, p.pci_bus_id, p.pci_device_id);
  PyObject *d = Py_BuildValue(
      "{s:i,s:s,s:(ii),s:i,s:n,s:d,s:d,s:i,s:i,s:n,s:n,s:n,s:i,s:i,s:i,s:i,s:i,s:i,s:O,s:s,s:O,"
      "s:i,s:d,s:d}",
      "device", device, "name", p.name, "compute_capability", p.major, p.minor, "multiprocessors",
      p.multiprocessors, "total_memory", (Py_ssize_t)p.total_global_mem, "clock_mhz",
      p.clock_khz / 1e3, "memory_clock_mhz", p.memory_clock_khz / 1e3, "memory_bus_width",
      p.memory_bus_width, "l2_cache_bytes", p.l2_cache_bytes, "shared_mem_per_block",
      (Py_ssize_t)p.shared_mem_per_block, "shared_mem_per_block_optin",
      (Py_ssize_t)p.shared_mem_per_block_optin, "shared_mem_per_sm",
      (Py_ssize_t)p.shared_mem_per_multiprocessor, "registers_per_block", p.regs_per_block,
      "registers_per_sm", p.regs_per_multiprocessor, "warp_size", p.warp_size,
      "max_threads_per_block", p.max_threads_per_block, "max_threads_per_sm",
      p.max_threads_per_multiprocessor, "async_engines", p.async_engine_count, "ecc",
      p.ecc_enabled ? Py_True : Py_False, "pci_bus_id", pci, "concurrent_kernels",
      p.concurrent_kernels ? Py_True : Py_False, "fp32_lanes_per_sm", p.fp32_per_sm_per_clock,
      "peak_bandwidth_gbps", peak_gbps, "peak_fp32_gflops", peak_gflops);
  if (!d) return NULL;
  PyObject *dv = version_string(driver), *rv = version_string(runtime);
  if (!dv || !rv || PyDict_SetItemString(d, "driver_version", dv) < 0 ||
      PyDict_SetItemString(d, "runtime_version", rv) < 0)
    Py_CLEAR(d);
  Py_XDECREF(dv);
  Py_XDECREF(rv);
  return d;
}

static PyMethodDef core_methods[] = {
    {"build_info", py_build_info, METH_NOARGS, "What this _core was built with."},
    {"cuda_available", py_cuda_available, METH_NOARGS,
     "True when a CUDA GPU is usable. Starts CUDA on first call; never raises."},
    {"_gpu_status", py_gpu_status, METH_NOARGS,
     "None when the GPU is usable, else the NoDeviceError that says why."},
    {"device_info", py_device_info, METH_VARARGS,
     "device_info(device=0): the device's properties."},
    {"_exact_alloc", py_exact_alloc, METH_NOARGS,
     "True in exact allocation mode (GPULAB_EXACT_ALLOC=1 at import): every device buffer at its "
     "exact size, no block cache, no mapped small-call path."},
    {NULL}};

static struct PyModuleDef core_module = {PyModuleDef_HEAD_INIT, "gpulab._core",
                                         "The native core of gpulab.", -1, core_methods};

PyMODINIT_FUNC PyInit__core(void) {
  import_array();
  gl_exact_alloc_init();
  PyObject *m = PyModule_Create(&core_module);
  if (!m) return NULL;
  PyMethodDef *tables[] = {gl_registry_methods, gl_arrays_methods,   gl_interop_methods,
                           gl_measure_methods,  gl_transfer_methods, gl_inspect_methods,
                           gl_nvtx_methods};
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
    if (PyModule_AddFunctions(m, tables[i]) < 0) goto fail;
  for (int i = 0; gl_labs[i]; i++)
    if (gl_labs[i]->methods && PyModule_AddFunctions(m, gl_labs[i]->methods) < 0) goto fail;
  if (gl_errors_init(m) < 0 || gl_stream_init(m) < 0 || gl_devarray_init(m) < 0) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
