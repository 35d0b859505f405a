// Probe: the one-tile kernel with the tile staged in shared memory (cp.async) instead of held in
// registers across the look-back: scanned a round (one 16-byte vector a thread) at a time, twice
// (totals, then the writes), so that a thread holds ~30 registers and a SM ~1.6x the tiles.
// Look-back: warp 0, 32 predecessors a read, CUB's delays (INITIAL_NS after publishing, RETRY_NS
// between reads).
#include <algorithm>
#include <cstdio>
#include <vector>
#include "cand2_head.inc"

namespace {

__device__ unsigned long long probe_trips;

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(unsigned long long *bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void bulk_load(void *dst, const void *src, unsigned bytes,
                                          unsigned long long *bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned long long *bar) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
      " @!p bra WAIT_%=;\n}\n" ::"r"(smem_addr(bar))
      : "memory");
}
#ifndef THROTTLE_NS
#define THROTTLE_NS 200
#endif
__device__ unsigned sm_loading[256 * 32];  // per-SM count of tiles whose loads are in flight
#ifdef TIMING
constexpr int kMaxTiles = 1 << 18;
__device__ unsigned long long t_rec[9][kMaxTiles];  // id, landed, prefix, stored, smid, read
                                                    // issued, read back, polls, windows
__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

#ifndef WIDE
#define WIDE 1
#endif
template <typename Op, typename Acc, typename Status>
__device__ Acc look_back(const Status &status, size_t tile, Acc aggregate) {
  const unsigned lane = threadIdx.x % 32;
  const Acc identity = Op::template identity<Acc>();
#ifndef EARLY_AGG
  if (tile == 0) {
    if (lane == 0) status.publish(0, glc_status_prefix, aggregate);
    return identity;
  }
  if (lane == 0) status.publish(tile, glc_status_aggregate, aggregate);
#else
  if (tile == 0) return identity;
#endif
  __nanosleep(INITIAL_NS);
  Acc exclusive = identity;
  long long nearest = static_cast<long long>(tile) - 1;
  unsigned long long reads = 0, windows = 0;
  int width = 1;  // windows of 32 read at once: the nearest alone, then WIDE further back
  for (;;) {
    unsigned flag[WIDE];
    Acc value[WIDE];
    bool retry = false;
    for (;;) {
#ifdef TIMING
      if (reads == 0 && lane == 0 && tile < kMaxTiles) t_rec[5][tile] = now_ns();
#endif
      ++reads;
#pragma unroll
      for (int k = 0; k < WIDE; ++k) {
        const long long pred = nearest - 32 * k - static_cast<long long>(lane);
#ifdef EMPTY_ONLY
        // a retry re-reads only the statuses still empty: the others cannot go back to empty
        if (retry && flag[k] != glc_status_empty) continue;
#endif
        flag[k] = glc_status_prefix;
        value[k] = identity;
        if (k < width && pred >= 0) status.read(static_cast<size_t>(pred), flag[k], value[k]);
      }
      const bool any_empty = __any_sync(0xffffffffu, flag[0] == glc_status_empty);
#ifdef TIMING
      if (reads == 1 && lane == 0 && tile < kMaxTiles) t_rec[6][tile] = now_ns();
#endif
      if (!any_empty) break;
      retry = true;
      __nanosleep(RETRY_NS);
    }
    bool done = false;
    int used = 0;
#pragma unroll
    for (int k = 0; k < WIDE; ++k) {
      if (k >= width) break;
      if (k > 0 && __any_sync(0xffffffffu, flag[k] == glc_status_empty)) break;
      const unsigned prefix_lanes = __ballot_sync(0xffffffffu, flag[k] == glc_status_prefix);
      const unsigned last = prefix_lanes ? __ffs(prefix_lanes) - 1 : 31;
      Acc window = lane <= last ? value[k] : identity;
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        window = Op::apply(window, __shfl_xor_sync(0xffffffffu, window, offset));
      exclusive = Op::apply(window, exclusive);
      ++used;
      ++windows;
      if (prefix_lanes) {
        done = true;
        break;
      }
    }
    if (done) break;
    nearest -= 32 * used;
    width = WIDE;
  }
#ifdef TIMING
  if (lane == 0 && tile < kMaxTiles) {
    t_rec[7][tile] = reads;
    t_rec[8][tile] = windows;
  }
#endif
  (void)reads;
  (void)windows;
  if (lane == 0) status.publish(tile, glc_status_prefix, Op::apply(exclusive, aggregate));
  return exclusive;
}

#ifndef REG_ROUNDS
#define REG_ROUNDS 0
#endif
// Thread t's round-r vector: from the stage (rounds below smem_rounds of a full tile), from the
// registers it loaded (the last REG_ROUNDS rounds of a full tile), or from x (the partial tile).
template <typename Op, typename In, typename Acc, typename S>
__device__ __forceinline__ void round_values(const In *stage, const float4 (&held)[REG_ROUNDS + 1],
                                             const In *x, size_t n, size_t begin, bool full, int r,
                                             Acc (&v)[S::vec]) {
  constexpr int smem_rounds = S::rounds - REG_ROUNDS;
  if (full) {
    using V = typename glc_vec16<In>::type;
    V w;
    if (r < smem_rounds)
      w = *reinterpret_cast<const V *>(stage + glc_tile_index<In, S::threads>(0, r, 0));
    else
      w = *reinterpret_cast<const V *>(&held[r - smem_rounds]);
    const In *e = reinterpret_cast<const In *>(&w);
#pragma unroll
    for (int k = 0; k < S::vec; ++k) v[k] = static_cast<Acc>(e[k]);
    return;
  }
#pragma unroll
  for (int k = 0; k < S::vec; ++k) {
    const size_t i = glc_tile_index<In, S::threads>(begin, r, k);
    v[k] = i < n ? static_cast<Acc>(x[i]) : Op::template identity<Acc>();
  }
}

template <typename Op, typename In, typename Acc, typename Status, typename S>
__global__ void __launch_bounds__(S::threads, MINB)
    staged(const In *x, Acc *y, size_t n, bool inclusive, unsigned *tile_counter, Status status) {
  constexpr int warps = S::threads / 32;
  constexpr int smem_rounds = S::rounds - REG_ROUNDS;
  __shared__ __align__(16) In stage[S::round * smem_rounds];
  __shared__ Acc warp_totals[S::rounds][warps];
  __shared__ unsigned tile_id;
  __shared__ Acc tile_prefix;
  __shared__ __align__(8) unsigned long long bar;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#ifdef BLOCKIDX_IDS
  (void)tile_counter;
  const size_t tile = blockIdx.x, begin = tile * S::tile;
#else
#ifdef THROTTLE
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  unsigned *loading = &sm_loading[(smid % 256) * 32];
  if (threadIdx.x == 0) {
    while (atomicAdd(loading, 1u) >= THROTTLE) {
      atomicSub(loading, 1u);
      __nanosleep(THROTTLE_NS);
    }
    tile_id = atomicAdd(tile_counter, 1u);
  }
#elif defined(TMA_LOAD)
  if (threadIdx.x == 0) {
    const unsigned id = atomicAdd(tile_counter, 1u);
    tile_id = id;
    const size_t b = static_cast<size_t>(id) * S::tile;
    if (b + S::tile <= n) {
      bar_init(&bar);
      bulk_load(stage, x + b, S::round * smem_rounds * sizeof(In), &bar);
    }
  }
#else
  if (threadIdx.x == 0) tile_id = atomicAdd(tile_counter, 1u);
#endif
  __syncthreads();
  const size_t tile = tile_id, begin = tile * S::tile;
#endif
#ifdef TIMING
  if (threadIdx.x == 0 && tile < kMaxTiles) {
    t_rec[0][tile] = now_ns();
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    t_rec[4][tile] = sm;
  }
#endif
  const bool full = begin + S::tile <= n;
  float4 held[REG_ROUNDS + 1];
  if (full) {
#pragma unroll
    for (int j = 0; j < REG_ROUNDS; ++j)
      held[j] = __ldcs(reinterpret_cast<const float4 *>(
          x + glc_tile_index<In, S::threads>(begin, smem_rounds + j, 0)));
  }
#ifdef TMA_LOAD
  if (full) bar_wait(&bar);
  if (false) {
#else
  if (full) {
#endif
    const unsigned long long policy = evict_first_policy();
#pragma unroll
    for (int r = 0; r < smem_rounds; ++r)
#ifdef NO_POLICY
    {
      const unsigned d = static_cast<unsigned>(
          __cvta_generic_to_shared(stage + glc_tile_index<In, S::threads>(0, r, 0)));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d),
                   "l"(x + glc_tile_index<In, S::threads>(begin, r, 0))
                   : "memory");
    }
#else
      copy16(stage + glc_tile_index<In, S::threads>(0, r, 0),
             x + glc_tile_index<In, S::threads>(begin, r, 0), policy);
#endif
    commit();
    wait_groups<0>();
  }
#ifdef EARLY_AGG
  // the tile's total first, published before the rounds' scans, so that successors wait less
  __shared__ Acc early_totals[warps];
  __shared__ Acc early_aggregate;
  {
    Acc t = Op::template identity<Acc>();
#pragma unroll
    for (int r = 0; r < S::rounds; ++r) {
      Acc v[S::vec];
      round_values<Op, In, Acc, S>(stage, held, x, n, begin, full, r, v);
#pragma unroll
      for (int k = 0; k < S::vec; ++k) t = Op::apply(t, v[k]);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      t = Op::apply(t, __shfl_xor_sync(0xffffffffu, t, offset));
    if (lane == 0) early_totals[warp] = t;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    Acc a = Op::template identity<Acc>();
#pragma unroll
    for (int w = 0; w < warps; ++w) a = Op::apply(a, early_totals[w]);
    early_aggregate = a;
    status.publish(tile, tile == 0 ? glc_status_prefix : glc_status_aggregate, a);
  }
#endif
  // pass 1: each round's thread total, its warp scan (this lane's exclusive part) and warp total
  Acc lane_exclusive[S::rounds];
#pragma unroll
  for (int r = 0; r < S::rounds; ++r) {
    Acc v[S::vec];
    round_values<Op, In, Acc, S>(stage, held, x, n, begin, full, r, v);
    Acc inclusive_sum = v[0];
#pragma unroll
    for (int k = 1; k < S::vec; ++k) inclusive_sum = Op::apply(inclusive_sum, v[k]);
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
      const Acc up = __shfl_up_sync(0xffffffffu, inclusive_sum, offset);
      if (lane >= offset) inclusive_sum = Op::apply(up, inclusive_sum);
    }
    const Acc before = __shfl_up_sync(0xffffffffu, inclusive_sum, 1);
    lane_exclusive[r] = lane == 0 ? Op::template identity<Acc>() : before;
    if (lane == 31) warp_totals[r][warp] = inclusive_sum;
  }
  __syncthreads();
#ifdef THROTTLE
  if (threadIdx.x == 0) atomicSub(loading, 1u);
#endif
#ifdef TIMING
  if (threadIdx.x == 0 && tile < kMaxTiles) t_rec[1][tile] = now_ns();
#endif
  Acc running = Op::template identity<Acc>();
#pragma unroll
  for (int r = 0; r < S::rounds; ++r) {
    Acc before_warp = Op::template identity<Acc>(), round_total = before_warp;
#pragma unroll
    for (int w = 0; w < warps; ++w) {
      const Acc total = warp_totals[r][w];
      if (w < static_cast<int>(warp)) before_warp = Op::apply(before_warp, total);
      round_total = Op::apply(round_total, total);
    }
    lane_exclusive[r] = Op::apply(Op::apply(running, before_warp), lane_exclusive[r]);
    running = Op::apply(running, round_total);
  }
  if (threadIdx.x < 32) {
#ifdef NO_LOOKBACK
    const Acc exclusive = 0;
#else
#ifdef EARLY_AGG
    const Acc exclusive = look_back<Op>(status, tile, early_aggregate);
#else
    const Acc exclusive = look_back<Op>(status, tile, running);
#endif
#endif
    if (threadIdx.x == 0) tile_prefix = exclusive;
#ifdef TIMING
    if (threadIdx.x == 0 && tile < kMaxTiles) t_rec[2][tile] = now_ns();
#endif
  }
  __syncthreads();
  const Acc prefix = tile_prefix;
  // pass 2: the writes
#pragma unroll
  for (int r = 0; r < S::rounds; ++r) {
    Acc v[S::vec];
    round_values<Op, In, Acc, S>(stage, held, x, n, begin, full, r, v);
    Acc run = Op::apply(prefix, lane_exclusive[r]);
    Acc out[S::vec];
#pragma unroll
    for (int k = 0; k < S::vec; ++k) {
      const Acc next = Op::apply(run, v[k]);
      out[k] = inclusive ? next : run;
      run = next;
    }
    if (full) {
#ifdef TMA_STORE
      *reinterpret_cast<float4 *>(stage + glc_tile_index<In, S::threads>(0, r, 0)) =
          *reinterpret_cast<const float4 *>(out);
#elif defined(PLAIN_STORES)
      *reinterpret_cast<float4 *>(y + glc_tile_index<In, S::threads>(begin, r, 0)) =
          *reinterpret_cast<const float4 *>(out);
#else
    glc_store16<Acc, S::vec>(y + glc_tile_index<In, S::threads>(begin, r, 0), out);
#endif
    } else {
#pragma unroll
      for (int k = 0; k < S::vec; ++k) {
        const size_t i = glc_tile_index<In, S::threads>(begin, r, k);
        if (i < n) y[i] = out[k];
      }
    }
  }
#ifdef TMA_STORE
  if (full) {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(y + begin),
                   "r"(smem_addr(stage)), "r"(static_cast<unsigned>(S::tile * sizeof(Acc)))
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    }
  }
#endif
#ifdef TIMING
  __syncthreads();
  if (threadIdx.x == 0 && tile < kMaxTiles) t_rec[3][tile] = now_ns();
#endif
}

#ifdef TIMING
void stats(const char *what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double mean = 0;
  for (double d : v) mean += d;
  mean /= v.size();
  auto q = [&](double f) { return v[std::min(v.size() - 1, size_t(f * v.size()))] / 1000.0; };
  printf("timing: %-22s mean %7.2f us  p10 %7.2f  p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f\n",
         what, mean / 1000.0, q(0.1), q(0.5), q(0.9), q(0.99), v.back() / 1000.0);
}
void timing(size_t tiles) {
  static int calls = 0;
  if (++calls != 3 || tiles > size_t(kMaxTiles) || tiles < 1000) return;
  cudaDeviceSynchronize();
  std::vector<unsigned long long> h(9 * size_t(kMaxTiles));
  cudaMemcpyFromSymbol(h.data(), t_rec, h.size() * 8);
  auto at = [&](int k, size_t i) { return static_cast<double>(h[k * size_t(kMaxTiles) + i]); };
  std::vector<double> load, wait, store, life, behind, start_gap;
  double t_min = 1e30, t_max = 0, landed_max = 0;
  for (size_t i = 0; i < tiles; ++i) {
    load.push_back(at(1, i) - at(0, i));
    wait.push_back(at(2, i) - at(1, i));
    store.push_back(at(3, i) - at(2, i));
    life.push_back(at(3, i) - at(0, i));
    // how long after this tile's own landing the last predecessor landed
    behind.push_back(std::max(0.0, landed_max - at(1, i)));
    landed_max = std::max(landed_max, at(1, i));
    t_min = std::min(t_min, at(0, i));
    t_max = std::max(t_max, at(3, i));
  }
  printf("timing: %zu tiles in %.1f us (first id to last store)\n", tiles, (t_max - t_min) / 1000);
  stats("id -> landed", load);
  stats("landed -> prefix", wait);
  stats("prefix -> stored", store);
  stats("id -> stored", life);
  stats("last pred. landed after", behind);
  // the spread of load latency across SMs: each SM's mean
  std::vector<double> sum(256, 0), cnt(256, 0);
  for (size_t i = 0; i < tiles; ++i) {
    const int sm = static_cast<int>(at(4, i)) % 256;
    sum[sm] += at(1, i) - at(0, i);
    cnt[sm] += 1;
  }
  std::vector<double> per_sm;
  for (int k = 0; k < 256; ++k)
    if (cnt[k] > 0) per_sm.push_back(sum[k] / cnt[k]);
  stats("per-SM mean load", per_sm);
  std::vector<double> rtt, polls, wins, over;
  double m = 0;
  for (size_t i = 0; i < tiles; ++i) {
    if (i > 0) {
      rtt.push_back(at(6, i) - at(5, i));
      polls.push_back(at(7, i) * 1000.0);
      wins.push_back(at(8, i) * 1000.0);
      // prefix known after the later of its own landing and every predecessor's
      over.push_back(at(2, i) - std::max(at(1, i), m));
    }
    m = std::max(m, at(1, i));
  }
  stats("first read's round trip", rtt);
  stats("reads a tile (x1000)", polls);
  stats("windows a tile (x1000)", wins);
  stats("prefix after all landed", over);
}
#endif

void report(size_t tiles) {
#ifdef TIMING
  timing(tiles);
#endif
#ifdef PROBE_COUNT
  static bool done = false;
  if (done) return;
  done = true;
  unsigned long long trips = 0;
  cudaDeviceSynchronize();
  cudaMemcpyFromSymbol(&trips, probe_trips, sizeof trips);
  printf("probe: %zu tiles, %.2f look-back round trips a tile\n", tiles, double(trips) / tiles);
#else
  (void)tiles;
#endif
}

template <typename Op, typename In>
int scan(bool inclusive, size_t n, const In *x, void *out, cudaStream_t stream) {
  using Acc = typename glc_scan_acc<In, Op>::type;
  using S = glc_tile_shape<In, THREADS, ROUNDS>;
  Acc *y = static_cast<Acc *>(out);
  if (!glc_all_aligned(16, x, y)) return cudaErrorInvalidValue;
  const size_t tiles = glc_blocks_to_cover(n, static_cast<int>(S::tile));
  using Status = glc_tile_status<Acc>;
  using Scratch = glc_look_back_scratch<Status>;
  GlcDeviceBuffer scratch;
  int code = scratch.allocate(Scratch::bytes(tiles), stream);
  GLC_TRY(code, GLC_CUDA(cudaMemsetAsync, scratch.ptr, 0, Scratch::zeroed_bytes(tiles), stream));
  if (code) return code;
#ifdef PROBE_COUNT
  unsigned long long zero = 0;
  cudaMemcpyToSymbol(probe_trips, &zero, sizeof zero);
#endif
  auto kernel = staged<Op, In, Acc, Status, S>;
  static bool once = false;
  if (!once) {
    once = true;
    int per_sm = 0;
    cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                         cudaSharedmemCarveoutMaxShared);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, S::threads, 0);
    printf("probe: %d blocks a SM\n", per_sm);
  }
  code = glc_launch(kernel, "staged", tiles, S::threads, stream, x, y, n, inclusive,
                    Scratch::counter(scratch.ptr), Scratch::status(scratch.ptr, tiles));
  report(tiles);
  return code;
}

}  // namespace

int glc_scan_shuffle(int variant, int op, int inclusive, int dtype, size_t n, const void *x,
                     void *y, cudaStream_t stream) {
  (void)variant;
  if (op != GLC_SCAN_SUM || dtype != GLC_F32) return cudaErrorInvalidValue;
  return scan<glc_scan_sum, float>(inclusive != 0, n, static_cast<const float *>(x), y, stream);
}
