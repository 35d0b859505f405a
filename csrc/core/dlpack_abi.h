/* The DLPack ABI (https://dmlc.github.io/dlpack), as the Python array API exchanges it. Written
 * from the specification: only the fields gpulab reads and writes. */
#ifndef GL_DLPACK_ABI_H
#define GL_DLPACK_ABI_H

#include <stdint.h>

enum { GL_DL_CPU = 1, GL_DL_CUDA = 2, GL_DL_CUDA_HOST = 3, GL_DL_CUDA_MANAGED = 13 };
enum {
  GL_DL_INT = 0,
  GL_DL_UINT = 1,
  GL_DL_FLOAT = 2,
  GL_DL_BFLOAT = 4,
  GL_DL_COMPLEX = 5,
  GL_DL_BOOL = 6
};

#define GL_DL_FLAG_READ_ONLY (1ull << 0)
#define GL_DL_MAJOR 1
#define GL_DL_MINOR 0

typedef struct {
  int32_t device_type;
  int32_t device_id;
} gl_DLDevice;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} gl_DLDataType;

typedef struct {
  void *data;
  gl_DLDevice device;
  int32_t ndim;
  gl_DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* in elements; NULL means C-contiguous */
  uint64_t byte_offset;
} gl_DLTensor;

typedef struct gl_DLManagedTensor {
  gl_DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct gl_DLManagedTensor *self);
} gl_DLManagedTensor;

typedef struct {
  uint32_t major;
  uint32_t minor;
} gl_DLPackVersion;

typedef struct gl_DLManagedTensorVersioned {
  gl_DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct gl_DLManagedTensorVersioned *self);
  uint64_t flags;
  gl_DLTensor dl_tensor;
} gl_DLManagedTensorVersioned;

#endif
