// Reduce variant 11 (S4's cooperative groups): one kernel for the whole reduction. Every block
// writes its partial, the grid meets at grid.sync(), and block 0 reduces the partials. A grid
// barrier is only safe when every block is resident at once, so the grid is one wave, launched
// with cudaLaunchCooperativeKernel, which refuses a grid that could not be.
#include <cooperative_groups.h>

#include "cuda/core/launch.cuh"
#include "ops.cuh"
#include "families.cuh"

namespace {

namespace cg = cooperative_groups;

template <typename In, typename Acc, typename Op>
__global__ void grid_synced(const In *x, size_t n, Acc *partials, Acc *result) {
  cg::grid_group grid = cg::this_grid();
  Acc v = Op::template identity<Acc>();
  const size_t step = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    v = Op::apply(v, static_cast<Acc>(x[i]));
  v = glc_block_reduce<Op>(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
  grid.sync();
  if (blockIdx.x != 0) return;
  Acc w = Op::template identity<Acc>();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) w = Op::apply(w, partials[b]);
  w = glc_block_reduce<Op>(w);
  if (threadIdx.x == 0) *result = w;
}

template <typename In, typename Op>
int cooperative(int block, size_t n, const In *x, void *result, cudaStream_t stream) {
  using Acc = typename glc_acc_of<In, Op>::type;
  constexpr auto kernel = grid_synced<In, Acc, Op>;
  size_t wave = 0;
  int code = glc_full_wave_blocks<kernel>(block, &wave);
  if (code) return code;
  const size_t cover = glc_blocks_to_cover(n, block);
  const unsigned blocks = static_cast<unsigned>(cover < wave ? cover : wave);
  glc_reduce_scratch scratch(stream);
  void *memory = nullptr;
  if ((code = scratch.get(blocks * sizeof(Acc), &memory))) return code;
  Acc *partials = static_cast<Acc *>(memory), *out = static_cast<Acc *>(result);
  void *args[] = {&x, &n, &partials, &out};
  glc_note_launch_if_noting(reinterpret_cast<const void *>(kernel), dim3(blocks),
                            dim3(static_cast<unsigned>(block)), 0);
  return GLC_CUDA(cudaLaunchCooperativeKernel, reinterpret_cast<const void *>(kernel), dim3(blocks),
                  dim3(static_cast<unsigned>(block)), args, 0, stream);
}

}  // namespace

int glc_reduce_cooperative(int block, int op, int dtype, size_t n, const void *x, void *result,
                           cudaStream_t stream) {
  return glc_dispatch_reduce(op, dtype, "glc_reduce", [&](auto in, auto reduce_op) {
    using In = decltype(in);
    return cooperative<In, decltype(reduce_op)>(block, n, static_cast<const In *>(x), result,
                                                stream);
  });
}
