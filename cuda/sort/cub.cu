// Variant 2: CUB's DeviceRadixSort from the toolkit (CCCL), the reference the ladder is measured
// against (cupy.sort calls it too). Integer keys go to it as they are: its order of them is
// NumPy's. Float keys do not: CUB puts -0.0 before +0.0 and NaNs with the sign bit set first, so
// they are sorted as their ordered bits (sort.h) with their indices, and the keys and values are
// then gathered through the sorted indices -- 8 more bytes a key each way than cupy.sort moves for
// floats. Every launch here is CUB's (DeviceRadixSort, DeviceTransform).
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_transform.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>

#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"

namespace {

template <int Dtype>
struct ordered_bits {
  bool descending;
  __host__ __device__ typename glc_sort_key<Dtype>::bits operator()(
      typename glc_sort_key<Dtype>::bits key) const {
    return glc_sort_key<Dtype>::order(key, descending);
  }
};

struct same {
  template <typename T>
  __host__ __device__ T operator()(T v) const {
    return v;
  }
};

// out[i] = in[i] through CUB's transform (a copy, or the indices from a counting iterator).
template <typename In, typename Out>
int transform_copy(In in, Out *out, long long n, cudaStream_t stream) {
  return GLC_CUDA(cub::DeviceTransform::Transform, in, out, n, same{}, stream);
}

// Keys (and values) as CUB sorts them: its own order, ascending or descending.
template <typename Key, typename Value>
int cub_sort_native(const glc_sort_call &call, const Key *keys, Key *keys_out, const Value *values,
                    Value *values_out) {
  const long long n = static_cast<long long>(call.n);
  cudaStream_t s = call.stream;
  return glc_with_cub_scratch(
      [&](void *temp, size_t &bytes) {
        if (values_out == nullptr)
          return call.descending ? GLC_CUDA(cub::DeviceRadixSort::SortKeysDescending, temp, bytes,
                                            keys, keys_out, n, 0, int(8 * sizeof(Key)), s)
                                 : GLC_CUDA(cub::DeviceRadixSort::SortKeys, temp, bytes, keys,
                                            keys_out, n, 0, int(8 * sizeof(Key)), s);
        return call.descending
                   ? GLC_CUDA(cub::DeviceRadixSort::SortPairsDescending, temp, bytes, keys,
                              keys_out, values, values_out, n, 0, int(8 * sizeof(Key)), s)
                   : GLC_CUDA(cub::DeviceRadixSort::SortPairs, temp, bytes, keys, keys_out, values,
                              values_out, n, 0, int(8 * sizeof(Key)), s);
      },
      s);
}

// Integer keys: straight to CUB; argsort's values are the indices, written first.
template <typename Key, typename Value>
int cub_sort_integers(const glc_sort_call &call) {
  cudaStream_t s = call.stream;
  GlcDeviceBuffer indices, keys_result;
  int code = cudaSuccess;
  const Value *values = static_cast<const Value *>(call.values);
  if (call.argsort()) {
    GLC_TRY(code, indices.allocate(call.n * sizeof(Value), s));
    GLC_TRY(code, transform_copy(thrust::counting_iterator<Value>(0), indices.as<Value>(),
                                 static_cast<long long>(call.n), s));
    values = indices.as<Value>();
  }
  Key *keys_out = static_cast<Key *>(call.keys_out);
  if (keys_out == nullptr) {
    GLC_TRY(code, keys_result.allocate(call.n * sizeof(Key), s));
    keys_out = keys_result.as<Key>();
  }
  GLC_TRY(code, cub_sort_native(call, static_cast<const Key *>(call.keys), keys_out,
                                call.value_bytes ? values : nullptr,
                                static_cast<Value *>(call.values_out)));
  return code;
}

// Float keys: their ordered bits sorted with the indices, then everything gathered.
template <int Dtype, typename Value>
int cub_sort_floats(const glc_sort_call &call) {
  using Key = typename glc_sort_key<Dtype>::bits;
  using Index = unsigned long long;
  cudaStream_t s = call.stream;
  const long long n = static_cast<long long>(call.n);
  const Key *keys = static_cast<const Key *>(call.keys);
  GlcDeviceBuffer ordered, ordered_sorted, indices, indices_sorted;
  int code = ordered.allocate(call.n * sizeof(Key), s);
  GLC_TRY(code, ordered_sorted.allocate(call.n * sizeof(Key), s));
  GLC_TRY(code, indices.allocate(call.n * sizeof(Index), s));
  Index *sorted = static_cast<Index *>(call.values_out);  // argsort: the result itself
  if (!call.argsort()) {
    GLC_TRY(code, indices_sorted.allocate(call.n * sizeof(Index), s));
    sorted = indices_sorted.as<Index>();
  }
  GLC_TRY(code, GLC_CUDA(cub::DeviceTransform::Transform, keys, ordered.as<Key>(), n,
                         ordered_bits<Dtype>{call.descending}, s));
  GLC_TRY(code, transform_copy(thrust::counting_iterator<Index>(0), indices.as<Index>(), n, s));
  glc_sort_call ascending = call;
  ascending.descending = false;  // the order bits already hold the direction
  GLC_TRY(code, (cub_sort_native<Key, Index>(ascending, ordered.as<Key>(), ordered_sorted.as<Key>(),
                                             indices.as<Index>(), sorted)));
  if (call.keys_out != nullptr)
    GLC_TRY(code, transform_copy(thrust::make_permutation_iterator(keys, sorted),
                                 static_cast<Key *>(call.keys_out), n, s));
  if (call.value_bytes != 0 && !call.argsort())
    GLC_TRY(code, transform_copy(thrust::make_permutation_iterator(
                                     static_cast<const Value *>(call.values), sorted),
                                 static_cast<Value *>(call.values_out), n, s));
  return code;
}

template <typename Value>
int cub_sort(const glc_sort_call &call) {
  switch (call.dtype) {
    case GLC_I32:
      return cub_sort_integers<int, Value>(call);
    case GLC_U32:
      return cub_sort_integers<unsigned, Value>(call);
    case GLC_I64:
      return cub_sort_integers<long long, Value>(call);
    case GLC_F32:
      return cub_sort_floats<GLC_F32, Value>(call);
    case GLC_F64:
      return cub_sort_floats<GLC_F64, Value>(call);
    default:
      return glc_fail(cudaErrorInvalidValue, "glc_sort");
  }
}

}  // namespace

int glc_sort_cub(const glc_sort_call &call) {
  return call.value_bytes == 4 ? cub_sort<unsigned>(call) : cub_sort<unsigned long long>(call);
}
