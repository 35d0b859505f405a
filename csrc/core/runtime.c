/* Lazy CUDA start-up: nothing touches the driver until the first GPU use. */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

static int start_attempted = 0;
static int start_code = 0;
static glc_stream library_stream = NULL;
static glc_device_props props;

static int start_cuda(void) {
  if (!glc_cuda_built || !glc_cuda_built()) return GLC_NOT_BUILT;
  int count = 0;
  int code = glc_device_count(&count);
  if (code) return code;
  if (count == 0) return 100; /* cudaErrorNoDevice */
  if ((code = glc_set_device(0))) return code;
  if ((code = glc_device_props_get(0, &props))) return code;
  if ((code = glc_pool_init(0))) return code;
  /* Non-blocking, so that the library's work never serialises with the legacy default stream
   * that other libraries may use. */
  return glc_stream_create(&library_stream, 1, 0);
}

int gl_gpu_ready(void) {
  if (!start_attempted) {
    start_attempted = 1;
    start_code = start_cuda();
  }
  return start_code == 0;
}

int gl_gpu_start_code(void) {
  gl_gpu_ready();
  return start_code;
}

int gl_require_gpu(const char *op) {
  if (gl_gpu_ready()) return 0;
  gl_raise_no_device(start_code, op);
  return -1;
}

glc_stream gl_library_stream(void) { return library_stream; }

const glc_device_props *gl_device_props(void) { return &props; }

static int exact_alloc = 0;

void gl_exact_alloc_init(void) {
  const char *value = getenv(GL_EXACT_ALLOC_ENV);
  exact_alloc = value != NULL && *value != '\0' && strcmp(value, "0") != 0;
}

int gl_exact_alloc(void) { return exact_alloc; }
