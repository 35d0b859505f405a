/* A scalar result's copy in mapped pinned host memory, written by the kernel that computes the
 * result, so that item() reads it with no copy and no stream wait (csrc/core/mirror.c). The kernel
 * writes tag_before, the value, then tag_after, each after a system-wide fence; the host reads
 * tag_after, the value, then tag_before, and takes the value only when both are its call's tag,
 * so that an earlier kernel of a reused slot, still running, cannot pass off its own value. */
#ifndef GPULAB_CUDA_CORE_SCALAR_MIRROR_H
#define GPULAB_CUDA_CORE_SCALAR_MIRROR_H

typedef struct {
  unsigned tag_before;
  unsigned unused;
  unsigned long long value; /* the result's bytes (up to 8), little-endian from the first */
  unsigned tag_after;
  unsigned padding[3];
} glc_scalar_mirror;

#ifdef __CUDACC__
/* The writes of one thread: tag, value, tag, each visible to the host before the next. */
template <typename T>
__device__ __forceinline__ void glc_write_mirror(glc_scalar_mirror *m, unsigned tag, T value) {
  static_assert(sizeof(T) <= sizeof(unsigned long long), "a mirror holds up to 8 bytes");
  volatile glc_scalar_mirror *v = m;
  v->tag_before = tag;
  __threadfence_system();
  unsigned long long bits = 0;
  memcpy(&bits, &value, sizeof(T));
  v->value = bits;
  __threadfence_system();
  v->tag_after = tag;
}
#endif

#endif
