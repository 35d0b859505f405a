// The CUDA libraries gpulab calls without linking them (cuBLAS for the linalg lab, cuSPARSE for
// the sparse lab): opened with dlopen on first use, their functions looked up by name, and one
// library handle per device created on first use and kept for the life of the process. `import
// gpulab` and every other variant keep working where a library is missing; only the variants
// that call it fail, naming the library.
#ifndef GPULAB_CUDA_LIBRARY_CUH
#define GPULAB_CUDA_LIBRARY_CUH

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <initializer_list>

#include "errors.cuh"
#include "launch.cuh"

// The library the environment variable `chooser` names (its path, when set and not empty), or
// else the first of `names` that opens. Never closed: the handles made from it live as long as
// the process. *chosen: whether the environment named it (for the error message).
inline void *glc_open_library(const char *chooser, std::initializer_list<const char *> names,
                              bool *chosen) {
  const char *path = std::getenv(chooser);
  *chosen = path != nullptr && *path != '\0';
  if (*chosen) return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  for (const char *name : names) {
    void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) return library;
  }
  return nullptr;
}

// *slot = the function `name` of library; false where it has none.
template <typename F>
bool glc_find_symbol(void *library, const char *name, F *slot) {
  *slot = reinterpret_cast<F>(dlsym(library, name));
  return *slot != nullptr;
}

// The current device's library handle from handles (one slot per device), made by
// create(&handle) -> CUDA error code the first time it is asked for; what names the handle in
// the error for a device past the table. The caller holds the lock that guards handles.
template <typename Handle, typename Create>
int glc_device_handle(Handle (&handles)[glc_cached_devices], const char *what, Create &&create,
                      Handle *handle) {
  int device = 0;
  int code = GLC_CUDA(cudaGetDevice, &device);
  if (code) return code;
  if (device < 0 || device >= glc_cached_devices) return glc_fail(cudaErrorInvalidDevice, what);
  if (handles[device] == nullptr) {
    code = create(&handles[device]);
    if (code) return code;
  }
  *handle = handles[device];
  return cudaSuccess;
}

#endif
