// Reduce variant 13: CUB's DeviceReduce from the toolkit (CCCL), the reference the ladder is
// measured against. The operators are the lab's own, so min and max propagate NaN like the
// other variants, and int32 sums accumulate in int64 through an int64 initial value.
#include <cub/device/device_reduce.cuh>

#include "cuda/core/launch.cuh"
#include "ops.cuh"
#include "families.cuh"

namespace {

template <typename In, typename Op>
int cub_reduce(size_t n, const In *x, void *result, cudaStream_t stream) {
  using Acc = typename glc_acc_of<In, Op>::type;
  Acc *out = static_cast<Acc *>(result);
  const Acc init = Op::template identity<Acc>();
  const long long items = static_cast<long long>(n);
  size_t bytes = 0;
  int code = GLC_CUDA(cub::DeviceReduce::Reduce, nullptr, bytes, x, out, items, Op{}, init, stream);
  if (code) return code;
  glc_reduce_scratch scratch(stream);
  void *temp = nullptr;
  if ((code = scratch.get(bytes, &temp))) return code;
  return GLC_CUDA(cub::DeviceReduce::Reduce, temp, bytes, x, out, items, Op{}, init, stream);
}

}  // namespace

int glc_reduce_cub(int op, int dtype, size_t n, const void *x, void *result, cudaStream_t stream) {
  return glc_dispatch_reduce(op, dtype, "glc_reduce", [&](auto in, auto reduce_op) {
    using In = decltype(in);
    return cub_reduce<In, decltype(reduce_op)>(n, static_cast<const In *>(x), result, stream);
  });
}
