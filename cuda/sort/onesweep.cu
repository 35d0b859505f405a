// Variant 4: onesweep radix sort (Adinets & Merrill 2022), 8 bits a pass, lowest digit first,
// stable. Two changes to lsd_radix (radix.cu) remove its per-pass histogram's read of the keys
// and make its writes coalesced:
//  onesweep_histogram  ONE read of the keys counts the digits of every pass at once;
//  onesweep_offsets    each pass's counts scanned into where its digits start, and each pass's
//                      route: a pass where every key has the same digit is skipped (below);
//  onesweep_pass       a pass in one kernel: a block takes the next tile id, counts its tile's
//                      digits (per-warp counters) and publishes the counts, sorts the tile by
//                      digit in shared memory (a ballot a digit bit for the warp's peers), finds
//                      per digit how many keys of the earlier tiles precede it by a decoupled
//                      look-back (one thread a digit) and writes the tile out: neighbouring
//                      threads write neighbouring addresses of one digit's run;
//  onesweep_copy       the inputs copied to the outputs when every pass is skipped.
// A pass where one digit's count is n would leave every key where it is (the sort is stable), so
// it is skipped, as CUB skips it, and decided on the device: the host never waits for the
// histogram (a sort of device arrays is asynchronous). The passes that run alternate between the
// spare buffers and the outputs, the first reading the inputs, so that the last writes the outputs.
// A pass reads the keys once and writes them once: 8 B a 4-byte key, plus 8 B a pass for 4-byte
// values; with the histogram's read, 4 + 4 x 8 = 36 B a key for int32 (its figures and profiles:
// docs/labs/sort.md).
#include <cuda/atomic>

#include <algorithm>
#include <type_traits>

#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "families.cuh"
#include "passes.cuh"

namespace {

constexpr int onesweep_bits = 8;
constexpr unsigned onesweep_radix = 1u << onesweep_bits;
// One thread a digit in the look-back and the scans over digits.
constexpr int onesweep_block = static_cast<int>(onesweep_radix);
constexpr int onesweep_warps = onesweep_block / 32;

// Keys a thread ranks: a tile is onesweep_block x items keys, as long as the tile's exchange (its
// keys, then its values) and the rest (11 KiB) fit 48 KiB of static shared memory. Longer tiles pay
// a tile's fixed costs (its id, publication, look-back, barriers) over more keys; CUB's sm_90 tile
// is 7680 keys of 4 bytes. 6144 keys of 4 bytes alone (24 KiB): 10% faster than 5120 at 2^28 int32
// on the H100 (docs/labs/sort.md), with 12 bytes of spill; 5120 with 4-byte values (20 KiB; at 24
// their pass spills 40 bytes, not measured), 3840 for 4-byte keys with 8-byte values (30 KiB), 2304
// for 8-byte keys (18 KiB).
template <typename Key, typename Value, bool HasValues>
struct onesweep_shape {
  static constexpr size_t widest = HasValues && sizeof(Value) > sizeof(Key) ? sizeof(Value)
                                                                            : sizeof(Key);
  static constexpr int items = widest == 4 ? (HasValues ? 20 : 24) : sizeof(Key) == 4 ? 15 : 9;
  static constexpr int tile = items * onesweep_block;
};

constexpr int histogram_block = 512;
// Predecessors a look-back step reads at once: 4 measured 7% faster than 1, 8 no faster (2^26
// int32 keys, H100; docs/labs/sort.md).
constexpr int look_back_window = 4;
// Blocks of onesweep_pass an SM holds. With __match_any_sync, 4 (64 registers a thread) measured
// 8% faster than the 3 that 80 registers allow; with the ballots, 3 is 2% faster than 4, which
// spills (2^26 int32 keys, H100). 11 or 20 keys a thread instead of 15 were no faster.
constexpr int onesweep_min_blocks = 3;

template <typename Key>
constexpr int passes_of = static_cast<int>(8 * sizeof(Key)) / onesweep_bits;

// A pass's route, which onesweep_offsets sets: skipped, or where it reads and where it writes.
constexpr unsigned route_skip = 0;         // every key has the same digit: nothing moves
constexpr unsigned route_from_input = 1;   // reads the inputs (argsort: the indices),
constexpr unsigned route_from_spare = 2;   // the spare buffers
constexpr unsigned route_from_output = 4;  // or the outputs;
constexpr unsigned route_to_output = 8;    // writes the outputs, else the spares

// Every buffer a pass may read or write; its route picks two.
template <typename Key, typename Value>
struct onesweep_buffers {
  const Key *keys;
  Key *key_spare, *keys_out;
  const Value *values;  // null for argsort: the indices
  Value *value_spare, *values_out;
  __device__ __forceinline__ const Key *keys_from(unsigned route) const {
    return route & route_from_input ? keys : route & route_from_spare ? key_spare : keys_out;
  }
  __device__ __forceinline__ Key *keys_to(unsigned route) const {
    return route & route_to_output ? keys_out : key_spare;
  }
  __device__ __forceinline__ const Value *values_from(unsigned route) const {
    return route & route_from_input ? values : route & route_from_spare ? value_spare : values_out;
  }
  __device__ __forceinline__ Value *values_to(unsigned route) const {
    return route & route_to_output ? values_out : value_spare;
  }
};

// A tile's count of one digit and its flag share one word, stored and loaded whole: the count
// in the low bits, the flag (aggregate: this tile's own count; inclusive: the count of this
// tile and every earlier one) in the top two. 32-bit words hold counts below 2^30, which is
// every count when n < 2^30; longer inputs use 64-bit words.
template <typename Word>
struct digit_status {
  static constexpr Word aggregate = Word(1) << (8 * sizeof(Word) - 2);
  static constexpr Word inclusive = Word(2) << (8 * sizeof(Word) - 2);
  static constexpr Word count_mask = aggregate - 1;
  static constexpr Word flags = aggregate | inclusive;
};

template <typename Word>
__device__ __forceinline__ void publish(Word *word, Word value) {
  cuda::atomic_ref<Word, cuda::thread_scope_device>(*word).store(value, cuda::memory_order_relaxed);
}

template <typename Word>
__device__ __forceinline__ Word observe(Word *word) {
  return cuda::atomic_ref<Word, cuda::thread_scope_device>(*word).load(cuda::memory_order_relaxed);
}

template <int Dtype>
__device__ __forceinline__ unsigned digit_at(typename glc_sort_key<Dtype>::bits key, int shift,
                                             bool descending) {
  return static_cast<unsigned>(glc_sort_key<Dtype>::order(key, descending) >> shift) &
         (onesweep_radix - 1);
}

// The lanes of the warp whose digit is d: one ballot a bit of the digit, each lane keeping the
// ballot where its own bit is set and its complement where not. __match_any_sync in its place
// held 58% of the pass's stall samples on the H100 (its result waited for by every item's rank;
// docs/labs/sort.md). Written in PTX for sm_90, because nvcc made 7 instructions a bit of the
// C++ below (it tested each bit twice, once for the ballot and once for the select); the PTX
// takes 3 (the 8 bit tests fold into one R2P), 25 instead of 54 for the 8 bits of an item's
// digit, and the ranking is what the pass issues most of. The C++ is for the host emulation
// (tools/emulate/sort.py) and says the same.
__device__ __forceinline__ unsigned lanes_with_digit(unsigned d) {
  unsigned lanes = 0xffffffffu;
#pragma unroll
  for (int b = 0; b < onesweep_bits; ++b) {
    unsigned agree;
#ifdef __CUDA_ARCH__
    asm("{\n\t.reg .pred bit_set;\n\t"
        "and.b32 %0, %1, %2;\n\t"
        "setp.ne.u32 bit_set, %0, 0;\n\t"
        "vote.sync.ballot.b32 %0, bit_set, 0xffffffff;\n\t"
        "@!bit_set not.b32 %0, %0;\n\t}"
        : "=r"(agree)
        : "r"(d), "r"(1u << b));
#else
    const bool bit_set = (d >> b) & 1u;
    const unsigned set = __ballot_sync(0xffffffffu, bit_set);
    agree = bit_set ? set : ~set;
#endif
    lanes &= agree;
  }
  return lanes;
}

// counts[p * 256 + d] += how many keys have digit d in pass p, for every pass, from one read.
// Each block counts into shared memory (a warp's keys spread over 256 digits), then adds its
// counts to the global ones.
template <int Dtype>
__global__ void __launch_bounds__(histogram_block)
    onesweep_histogram(const typename glc_sort_key<Dtype>::bits *keys, size_t n, bool descending,
                       unsigned long long *counts) {
  using Key = typename glc_sort_key<Dtype>::bits;
  constexpr int passes = passes_of<Key>;
  constexpr int batch = 4;  // loads in flight before their counts
  __shared__ unsigned bins[passes * onesweep_radix];
  for (unsigned i = threadIdx.x; i < passes * onesweep_radix; i += blockDim.x) bins[i] = 0;
  __syncthreads();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t base = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; base < n;
       base += batch * stride) {
    Key batch_keys[batch];
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      const size_t i = base + b * stride;
      batch_keys[b] = i < n ? keys[i] : 0;
    }
#pragma unroll
    for (int b = 0; b < batch; ++b) {
      if (base + b * stride >= n) break;
      const Key ordered = glc_sort_key<Dtype>::order(batch_keys[b], descending);
#pragma unroll
      for (int p = 0; p < passes; ++p)
        atomicAdd(
            &bins[p * onesweep_radix +
                  (static_cast<unsigned>(ordered >> (p * onesweep_bits)) & (onesweep_radix - 1))],
            1u);
    }
  }
  __syncthreads();
  for (unsigned i = threadIdx.x; i < passes * onesweep_radix; i += blockDim.x)
    if (bins[i] != 0) atomicAdd(&counts[i], static_cast<unsigned long long>(bins[i]));
}

// The exclusive prefix sum of `value` over the block's 256 threads (thread d: digit d).
__device__ unsigned long long digits_exclusive_scan(unsigned long long value,
                                                    unsigned long long *warp_totals) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned long long inclusive = value;
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset <<= 1) {
    const unsigned long long left = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += left;
  }
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  unsigned long long before = 0;
  for (unsigned w = 0; w < warp; ++w) before += warp_totals[w];
  __syncthreads();  // every thread has read warp_totals before it is written again
  return before + inclusive - value;
}

// counts[p * 256 + d] becomes where pass p's keys of digit d start, and routes[p] pass p's route:
// skipped where one digit's count is n; else, of the k passes that run, the first reads the inputs
// and the i-th (from 0) writes the outputs when k - 1 - i is even, the spares when it is odd, and
// the next reads what it wrote. routes[Passes]: 1 when every pass is skipped (onesweep_copy then
// copies the inputs), else 0. One block, thread d for digit d of every pass.
template <int Passes>
__global__ void __launch_bounds__(onesweep_block)
    onesweep_offsets(unsigned long long *counts, size_t n, unsigned *routes) {
  __shared__ unsigned long long warp_totals[onesweep_warps];
  unsigned long long count[Passes];
#pragma unroll
  for (int p = 0; p < Passes; ++p) count[p] = counts[p * onesweep_radix + threadIdx.x];
  unsigned skipped = 0;  // bit p: pass p is skipped
#pragma unroll
  for (int p = 0; p < Passes; ++p) {
    if (__syncthreads_or(count[p] == n)) skipped |= 1u << p;
    counts[p * onesweep_radix + threadIdx.x] = digits_exclusive_scan(count[p], warp_totals);
  }
  if (threadIdx.x != 0) return;
  int later = Passes - __popc(skipped);  // passes that run, from this one on
  unsigned from = route_from_input;
  for (int p = 0; p < Passes; ++p) {
    if ((skipped >> p) & 1u) {
      routes[p] = route_skip;
      continue;
    }
    const unsigned to = --later % 2 == 0 ? route_to_output : 0u;
    routes[p] = from | to;
    from = to ? route_from_output : route_from_spare;
  }
  routes[Passes] = skipped == (1u << Passes) - 1;
}

// One pass: moves the keys (and values) of one tile to their places for the digit at `shift`,
// stably, from and to the buffers its route names (*route, onesweep_offsets'), or nothing when
// the route skips it. digit_start: where this pass's keys of each digit start (onesweep_offsets);
// status: tiles x 256 words, zeroed; tile_counter: zeroed; both the pass's own. Iota (argsort):
// a pass that reads the inputs writes each key's index instead of reading a value.
template <int Dtype, typename Word, typename Value, bool HasValues, bool Iota>
__global__ void __launch_bounds__(onesweep_block, onesweep_min_blocks)
    onesweep_pass(onesweep_buffers<typename glc_sort_key<Dtype>::bits, Value> buffers, size_t n,
                  int shift, bool descending, const unsigned long long *digit_start, Word *status,
                  unsigned *tile_counter, const unsigned *route) {
  using Key = typename glc_sort_key<Dtype>::bits;
  using Flags = digit_status<Word>;
  constexpr int items = onesweep_shape<Key, Value, HasValues>::items;
  constexpr int tile = onesweep_shape<Key, Value, HasValues>::tile;
  constexpr size_t exchange_bytes =
      tile * (sizeof(Key) > sizeof(Value) || !HasValues ? sizeof(Key) : sizeof(Value));
  // the tile sorted by digit: first its keys, then (after they are written) its values
  __shared__ __align__(16) unsigned char exchange[exchange_bytes];
  // per warp and digit: the warp's count, then where its keys of the digit go in the tile
  __shared__ unsigned warp_digits[onesweep_warps][onesweep_radix];
  // per digit: its destination minus its position in the sorted tile (modulo 2^32 for 32-bit
  // words)
  __shared__ Word digit_shift[onesweep_radix];
  __shared__ unsigned long long warp_totals[onesweep_warps];
  __shared__ unsigned tile_id_of_block;
  Key *tile_keys = reinterpret_cast<Key *>(exchange);
  Value *tile_values = reinterpret_cast<Value *>(exchange);

  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // The route is read while thread 0 takes a tile id, one L2 round trip for both, and a skipped
  // pass's blocks leave here: its tile counter, taken from and never read again, is its own.
  const unsigned pass_route = *route;
  // Tile ids in the order blocks start: a tile waits only for tiles whose blocks are running.
  if (threadIdx.x == 0) tile_id_of_block = atomicAdd(tile_counter, 1u);
  if (pass_route == route_skip) return;
  const Key *keys = buffers.keys_from(pass_route);
  Key *keys_out = buffers.keys_to(pass_route);
  for (int w = 0; w < onesweep_warps; ++w) warp_digits[w][threadIdx.x] = 0;
  __syncthreads();
  const size_t tile_id = tile_id_of_block;
  const size_t tile_begin = tile_id * tile;
  const size_t tile_size = n - tile_begin < tile ? n - tile_begin : tile;
  // A warp's keys are one contiguous run of 32 x items, read a lane apart: item j of lane l is
  // key warp_begin + 32 j + l, so ranking item by item, lane by lane, follows the input order.
  const size_t warp_begin = tile_begin + static_cast<size_t>(warp) * 32 * items;

  // Full: every key of the tile exists, so no item tests its index against n (every tile but
  // the last; the tests and the ballot of valid lanes were 8 of the ~146 instructions a key).
  auto sort_tile = [&](auto full) {
    constexpr bool Full = decltype(full)::value;
    auto exists = [&](int j) { return Full || warp_begin + 32 * j + lane < n; };
    Key key[items];
#pragma unroll
    for (int j = 0; j < items; ++j) {
      key[j] = exists(j) ? keys[warp_begin + 32 * j + lane] : 0;
    }
    // The warp's digit counts before its ranks (CUB's early counts): atomics whose results
    // nobody waits for, so the tile's counts are published before the ranking's serial chain,
    // and the ranking then claims places in the sorted tile directly.
#pragma unroll
    for (int j = 0; j < items; ++j)
      if (exists(j)) atomicAdd(&warp_digits[warp][digit_at<Dtype>(key[j], shift, descending)], 1u);
    __syncthreads();

    // Thread d: digit d's count in the tile, published; then where each warp's keys of digit d
    // start in the sorted tile.
    const unsigned d = threadIdx.x;
    unsigned count = 0;
    for (int w = 0; w < onesweep_warps; ++w) {
      const unsigned c = warp_digits[w][d];
      warp_digits[w][d] = count;
      count += c;
    }
    Word *mine = status + tile_id * onesweep_radix + d;
    publish(mine, (tile_id == 0 ? Flags::inclusive : Flags::aggregate) | static_cast<Word>(count));
    const unsigned start_in_tile = static_cast<unsigned>(digits_exclusive_scan(count, warp_totals));
    for (int w = 0; w < onesweep_warps; ++w) warp_digits[w][d] += start_in_tile;
    __syncthreads();

    // The tile sorted by digit in shared memory (written out in that order after the look-back:
    // a digit's keys are neighbours there and at their destination), before the look-back as
    // CUB's onesweep does it: the earlier tiles have that much longer to publish their counts.
    // Item by item, lane by lane, in the input order: the leader of an item's lanes of one digit
    // claims their places, the next ones of its warp's run of that digit.
    const unsigned lanes_before = (1u << lane) - 1;
    unsigned place[items];
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const unsigned dj = digit_at<Dtype>(key[j], shift, descending);
      unsigned peers = lanes_with_digit(dj);
      if (!Full) peers &= __ballot_sync(0xffffffffu, exists(j));
      const int leader = 31 - __clz(peers);  // the last of them (any lane, when peers is empty)
      unsigned first = 0;
      if (exists(j) && static_cast<int>(lane) == leader)
        first = atomicAdd(&warp_digits[warp][dj], __popc(peers));
      place[j] = __shfl_sync(0xffffffffu, first, leader) + __popc(peers & lanes_before);
      if (exists(j)) tile_keys[place[j]] = key[j];
      __syncwarp();  // the next item's leader claims after this item's
    }

    Word earlier = 0;  // keys of digit d in the earlier tiles
    if (tile_id > 0) {
      // The walk back reads look_back_window predecessors at once (their loads overlap): a walk
      // over aggregates costs one L2 round trip per window, not per tile.
      long long next = static_cast<long long>(tile_id) - 1;  // the nearest tile not yet counted
      for (bool found = false; !found;) {
        Word words[look_back_window];
#pragma unroll
        for (int k = 0; k < look_back_window; ++k)
          words[k] = next - k >= 0 ? observe(status + (next - k) * onesweep_radix + d)
                                   : Flags::inclusive;  // before tile 0: nothing, counted
        bool waiting = false;
#pragma unroll
        for (int k = 0; k < look_back_window; ++k) {
          if (found || waiting) break;
          if ((words[k] & Flags::flags) == 0) {
            waiting = true;  // not published yet: read again from this tile
            break;
          }
          earlier += words[k] & Flags::count_mask;
          found = (words[k] & Flags::inclusive) != 0;
          --next;
        }
        if (waiting) __nanosleep(20);
      }
      publish(mine, Flags::inclusive | (earlier + count));
    }
    // Word-wide arithmetic (wrapping for 32-bit words): the destination it gives, shift plus a
    // place in the tile, is below n, which a Word holds.
    digit_shift[d] = static_cast<Word>(digit_start[d]) + earlier - start_in_tile;
    __syncthreads();  // the sorted tile and every digit's shift are in place
    unsigned out_digit[items];
#pragma unroll
    for (int j = 0; j < items; ++j) {
      const unsigned at = j * onesweep_block + threadIdx.x;
      if (Full || at < tile_size) {
        const Key k = tile_keys[at];
        out_digit[j] = digit_at<Dtype>(k, shift, descending);
        keys_out[static_cast<Word>(digit_shift[out_digit[j]] + at)] = k;
      }
    }
    if constexpr (HasValues) {
      __syncthreads();  // every key has left the exchange
#pragma unroll
      for (int j = 0; j < items; ++j) {
        const size_t i = warp_begin + 32 * j + lane;
        if (exists(j))
          tile_values[place[j]] = Iota && (pass_route & route_from_input)
                                      ? static_cast<Value>(i)
                                      : buffers.values_from(pass_route)[i];
      }
      __syncthreads();
#pragma unroll
      for (int j = 0; j < items; ++j) {
        const unsigned at = j * onesweep_block + threadIdx.x;
        if (Full || at < tile_size)
          buffers.values_to(pass_route)[static_cast<Word>(digit_shift[out_digit[j]] + at)] =
              tile_values[at];
      }
    }
  };
  if (tile_size == tile)
    sort_tile(std::true_type{});
  else
    sort_tile(std::false_type{});
}

constexpr int copy_block = 256;
constexpr int copy_items = 4;  // loads a thread has in flight

// When every pass is skipped (*every_pass_skipped, onesweep_offsets'), the inputs are in order:
// copies them to the outputs (keys_out null: argsort's keys, which nobody reads; argsort's values
// are the indices). Else every block leaves at once.
template <typename Key, typename Value, bool HasValues, bool Iota>
__global__ void __launch_bounds__(copy_block)
    onesweep_copy(const Key *keys, Key *keys_out, const Value *values, Value *values_out, size_t n,
                  const unsigned *every_pass_skipped) {
  if (*every_pass_skipped == 0) return;
  constexpr size_t chunk = static_cast<size_t>(copy_items) * copy_block;
  for (size_t begin = blockIdx.x * chunk; begin < n; begin += gridDim.x * chunk) {
    auto at = [&](int j) { return begin + static_cast<size_t>(j) * copy_block + threadIdx.x; };
    auto exists = [&](int j) { return at(j) < n; };
    Key key[copy_items];
    Value value[copy_items];
#pragma unroll
    for (int j = 0; j < copy_items && exists(j); ++j) {
      if (keys_out != nullptr) key[j] = keys[at(j)];
      if constexpr (HasValues) value[j] = Iota ? static_cast<Value>(at(j)) : values[at(j)];
    }
#pragma unroll
    for (int j = 0; j < copy_items && exists(j); ++j) {
      if (keys_out != nullptr) keys_out[at(j)] = key[j];
      if constexpr (HasValues) values_out[at(j)] = value[j];
    }
  }
}

// The scratch of a sort: the digit counts of every pass, the passes' routes (onesweep_offsets),
// then each pass's tile counter and status words; all of it starts zeroed.
template <typename Key, typename Word>
struct onesweep_scratch {
  size_t tiles;
  static constexpr int passes = passes_of<Key>;
  size_t counts_bytes() const { return passes * onesweep_radix * sizeof(unsigned long long); }
  size_t routes_bytes() const { return 16 * sizeof(unsigned); }  // a route a pass, and the copy's
  static_assert(passes + 1 <= 16, "onesweep_scratch: a route a pass and the copy's");
  size_t counters_bytes() const { return 16 * passes; }
  size_t status_words() const { return tiles * onesweep_radix; }
  size_t bytes() const {
    return counts_bytes() + routes_bytes() + counters_bytes() +
           passes * status_words() * sizeof(Word);
  }
};

// Iota: argsort, whose values are the indices, written by the first pass that runs.
template <int Dtype, typename Word, typename Value, bool HasValues, bool Iota>
int onesweep(const glc_sort_call &call) {
  using Key = typename glc_sort_key<Dtype>::bits;
  constexpr int passes = passes_of<Key>;  // even: 4 or 8
  cudaStream_t s = call.stream;
  const size_t n = call.n;
  const onesweep_scratch<Key, Word> layout{
      glc_blocks_to_cover(n, onesweep_shape<Key, Value, HasValues>::tile)};
  GlcDeviceBuffer scratch;
  glc_sort_passes<Key, Value, HasValues> buffers;
  int code = scratch.allocate(layout.bytes(), s);
  GLC_TRY(code, buffers.allocate(call));
  GLC_TRY(code, GLC_CUDA(cudaMemsetAsync, scratch.ptr, 0, layout.bytes(), s));
  if (code) return code;
  char *base = static_cast<char *>(scratch.ptr);
  auto *counts = reinterpret_cast<unsigned long long *>(base);
  auto *routes = reinterpret_cast<unsigned *>(base + layout.counts_bytes());
  auto *counters =
      reinterpret_cast<unsigned *>(base + layout.counts_bytes() + layout.routes_bytes());
  auto *status = reinterpret_cast<Word *>(base + layout.counts_bytes() + layout.routes_bytes() +
                                          layout.counters_bytes());
  const onesweep_buffers<Key, Value> passes_buffers = {static_cast<const Key *>(call.keys),
                                                       buffers.key_spare.template as<Key>(),
                                                       buffers.keys_out,
                                                       static_cast<const Value *>(call.values),
                                                       buffers.value_spare.template as<Value>(),
                                                       buffers.values_out};
  size_t wave = 0;
  GLC_TRY(code, glc_full_wave_blocks<onesweep_histogram<Dtype>>(histogram_block, &wave));
  const size_t histogram_grid = std::min(wave, glc_blocks_to_cover(n, histogram_block));
  GLC_TRY(code, glc_launch(onesweep_histogram<Dtype>, "onesweep_histogram", histogram_grid,
                           histogram_block, s, passes_buffers.keys, n, call.descending, counts));
  GLC_TRY(code, glc_launch(onesweep_offsets<passes>, "onesweep_offsets", 1, onesweep_block, s,
                           counts, n, routes));
  // Every pass is launched; the skipped ones' blocks leave at once.
  for (int pass = 0; pass < passes && !code; ++pass)
    GLC_TRY(code,
            glc_launch(onesweep_pass<Dtype, Word, Value, HasValues, Iota>, "onesweep_pass",
                       layout.tiles, onesweep_block, s, passes_buffers, n, pass * onesweep_bits,
                       call.descending,
                       static_cast<const unsigned long long *>(counts) + pass * onesweep_radix,
                       status + pass * layout.status_words(), counters + 4 * pass,
                       static_cast<const unsigned *>(routes) + pass));
  constexpr auto copy = onesweep_copy<Key, Value, HasValues, Iota>;
  GLC_TRY(code, glc_full_wave_blocks<copy>(copy_block, &wave));
  const size_t copy_grid =
      std::min(wave, glc_blocks_to_cover(n, static_cast<int>(copy_items * copy_block)));
  GLC_TRY(code,
          glc_launch(copy, "onesweep_copy", copy_grid, copy_block, s, passes_buffers.keys,
                     static_cast<Key *>(call.keys_out), passes_buffers.values,
                     passes_buffers.values_out, n, static_cast<const unsigned *>(routes) + passes));
  return code;
}

template <int Dtype, typename Word>
int onesweep_values(const glc_sort_call &call) {
  return glc_dispatch_sort_values(call, [&](auto values) {
    using V = decltype(values);
    return onesweep<Dtype, Word, typename V::Value, V::has_values, V::iota>(call);
  });
}

}  // namespace

int glc_sort_onesweep(const glc_sort_call &call) {
  return glc_dispatch_sort_key(call.dtype, "glc_sort", [&](auto dtype) {
    constexpr int Dtype = decltype(dtype)::value;
    // 32-bit status words count up to 2^30 - 1 keys of a digit
    return call.n < (size_t(1) << 30) ? onesweep_values<Dtype, unsigned>(call)
                                      : onesweep_values<Dtype, unsigned long long>(call);
  });
}
