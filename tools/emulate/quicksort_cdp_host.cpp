// Host emulation of the sort lab's quicksort with dynamic parallelism (cuda/sort/quicksort_cdp.cu,
// variant 6), driven by tools/emulate/quicksort_cdp.py, which writes quicksort_cdp_gen.inc: the
// file from its namespace to its end, with each device-side launch `k<<<g, b, s, stream>>>(...)`
// rewritten as `emu_device_launch(k, g, b, s, stream, ...)` -- the only change to the real code.
// The fibers, barriers, poisoned and guarded buffers and the host launch are sort_host.cpp's
// (included without its kernels and checks); this file adds what CDP needs:
//  - device launches: a launch from a kernel queues the child grid, which runs after the block
//    that launched it has returned (the emulated grids have one block) and before the host
//    launch that began the tree returns: CDP2's rule that a grid completes only after its
//    children, which the gather on the same stream relies on. Queued grids run in a random
//    order, so no sibling may rely on another's having run first;
//  - the device runtime's pool of pending launches, which counts a grid from its launch until it
//    is complete, children included (cudaDeviceSetLimit, and a cap the checks lower to make
//    launches fail), and the nesting limit of 24 grids: a launch past either fails, and the
//    launching thread sees it through cudaGetLastError, as on the device;
//  - __ballot_sync, meeting the warp's 32 lanes at a barrier, its mask checked.
// Not emulated: a child grid running while its parent block still runs (the code launches only
// after its last write to the child's range; the emulation cannot catch a parent that writes
// there later), speed, and the memory model.
// The checks compare every result with a stable sort by the order bits, bit for bit: every key
// dtype, keys alone, argsort and 4- and 8-byte values, ascending and descending, on random,
// sorted, reversed, all-equal and few-distinct keys (floats with NaN, -0.0 and inf), at 1, 2, the
// shared-memory sort's limit +-1, a tile +-1 and several tiles; at depth limits 0 to 2 (the
// one-block sort of a long segment) and with the launch pool capped at 0 and 1 (sides sorted by
// the parent whose launch failed).
#define EMU_SORT_RUNTIME_ONLY
#include "sort_host.cpp"

#undef __launch_bounds__  // sort_host.cpp's takes the threads alone; the kernel names 2 blocks
#define __launch_bounds__(...)
#define cudaStreamFireAndForget (reinterpret_cast<cudaStream_t>(0x4))
#define GLC_CUDA(function, ...) glc_fail((function)(__VA_ARGS__), #function)

// ---- the device runtime ----

constexpr int kEmuNestingLimit = 24;  // grids nested, the host's included
size_t emu_pool_slots = 2048;         // cudaLimitDevRuntimePendingLaunchCount's default
size_t emu_pool_cap = ~size_t(0);     // what the checks let cudaDeviceSetLimit give
cudaError_t emu_launch_errors[1024];  // each thread's last error, as cudaGetLastError
std::mt19937 emu_order_rng(5);
long emu_launches = 0, emu_failed_launches = 0;
int emu_deepest = 0;

// A grid of the tree. The limit counts device-launched grids from their launch until they are
// known complete -- their block returned and every grid they launched complete -- so a parent
// holds its slot while its children run.
struct EmuGrid {
  EmuGrid *parent;
  int depth;
  long live_children = 0;
  bool returned = false;
};
std::vector<std::unique_ptr<EmuGrid>> emu_grids;  // the tree of one host launch
std::vector<std::function<void()>> emu_queue;     // launched, not started
EmuGrid *emu_running = nullptr;                   // the grid whose block runs now
size_t emu_outstanding = 0;                       // device-launched grids not complete

extern "C" cudaError_t cudaGetLastError(void) {
  const cudaError_t e = emu_launch_errors[threadIdx.x];
  emu_launch_errors[threadIdx.x] = cudaSuccess;
  return e;
}

extern "C" cudaError_t cudaDeviceGetLimit(size_t *value, cudaLimit limit) {
  if (limit != cudaLimitDevRuntimePendingLaunchCount) return cudaErrorInvalidValue;
  *value = emu_pool_slots;
  return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value) {
  if (limit != cudaLimitDevRuntimePendingLaunchCount) return cudaErrorInvalidValue;
  emu_pool_slots = std::min(value, emu_pool_cap);
  return cudaSuccess;
}

// After grid's block returned or a child of it completed: grid and its ancestors complete in turn
// while nothing of theirs is left.
void emu_settle(EmuGrid *grid) {
  while (grid != nullptr && grid->returned && grid->live_children == 0 && grid->parent) {
    --emu_outstanding;
    --grid->parent->live_children;
    grid = grid->parent;
  }
}

// Runs the block(s) of one grid of the tree.
template <typename... Params, typename... Args>
int emu_run_grid(EmuGrid *grid, void (*kernel)(Params...), const char *name, dim3 blocks,
                 dim3 threads, Args... args) {
  emu_running = grid;
  emu_deepest = std::max(emu_deepest, grid->depth);
  const int code = glc_launch(kernel, name, blocks, threads, cudaStream_t(), args...);
  grid->returned = true;
  emu_settle(grid);
  return code;
}

// A launch from a kernel: the child grid is queued, or the launch fails.
template <typename... Params, typename... Args>
void emu_device_launch(void (*kernel)(Params...), dim3 blocks, dim3 threads, unsigned shared_bytes,
                       cudaStream_t stream, Args... args) {
  cudaError_t &error = emu_launch_errors[threadIdx.x];
  if (stream != cudaStreamFireAndForget || shared_bytes != 0) {
    error = cudaErrorInvalidValue;  // not what the emulation knows how to run
  } else if (emu_running->depth + 1 >= kEmuNestingLimit) {
    error = cudaErrorLaunchMaxDepthExceeded;
  } else if (emu_outstanding >= emu_pool_slots) {
    error = cudaErrorLaunchPendingCountExceeded;
  } else {
    emu_grids.push_back(std::make_unique<EmuGrid>(EmuGrid{emu_running, emu_running->depth + 1}));
    EmuGrid *child = emu_grids.back().get();
    ++emu_running->live_children;
    ++emu_outstanding;
    ++emu_launches;
    emu_queue.push_back(
        [=] { emu_run_grid(child, kernel, "device launch", blocks, threads, args...); });
    return;
  }
  ++emu_failed_launches;
}

// A host launch: the grid, then every grid it launched and they launched, in a random order;
// the tree must be complete when it returns, as the next launch on the stream finds it.
template <typename... Params, typename... Args>
int emu_host_launch(void (*kernel)(Params...), const char *name, dim3 blocks, dim3 threads,
                    cudaStream_t, Args... args) {
  emu_grids.clear();
  emu_grids.push_back(std::make_unique<EmuGrid>(EmuGrid{nullptr, 0}));
  const int code = emu_run_grid(emu_grids.back().get(), kernel, name, blocks, threads, args...);
  while (!emu_queue.empty()) {
    const size_t pick = emu_order_rng() % emu_queue.size();
    std::function<void()> child = std::move(emu_queue[pick]);
    emu_queue.erase(emu_queue.begin() + pick);
    child();
  }
  if (emu_outstanding != 0 || emu_grids.front()->live_children != 0) {
    printf("FAIL: %s: %zu grids of its tree never completed\n", name, emu_outstanding);
    exit(1);
  }
  return code;
}
#define glc_launch emu_host_launch

#include "quicksort_cdp_gen.inc"

#undef glc_launch

// ---- the checks ----

int emu_max_depth = quicksort_cdp::kMaxDepth;

// Keys of one kind; random and few-distinct ones from sort_host.cpp's make_keys.
template <typename Bits>
std::vector<Bits> keys_of(const std::string &kind, size_t n, int dtype, std::mt19937_64 &rng) {
  std::vector<Bits> keys = make_keys<Bits>(n, dtype, kind == "few", rng);
  const auto by_order = [&](Bits a, Bits b) {
    return order_of(a, dtype, false) < order_of(b, dtype, false);
  };
  if (kind == "sorted") std::stable_sort(keys.begin(), keys.end(), by_order);
  if (kind == "reversed") std::stable_sort(keys.rbegin(), keys.rend(), by_order);
  if (kind == "equal") std::fill(keys.begin(), keys.end(), keys[0]);
  return keys;
}

// The bits of output position i: the key, or the value (argsort: the index; pairs: i * 7 + 3,
// truncated to 4 bytes for 4-byte values).
unsigned long long read_bits(const void *buffer, size_t bytes, size_t i) {
  unsigned long long bits = 0;
  memcpy(&bits, static_cast<const char *>(buffer) + i * bytes, bytes);
  return bits;
}

void emu_copy_in(GlcDeviceBuffer &buffer, const void *from, size_t bytes) {
  buffer.allocate(bytes, nullptr);
  memcpy(buffer.ptr, from, bytes);
}

// One sort of `input` by quicksort_cdp::sort at emu_max_depth against std::stable_sort.
template <typename Bits>
bool sorted_right(const std::vector<Bits> &input, int dtype, int values_kind, bool descending) {
  const size_t n = input.size();
  const bool argsort = values_kind == -1;
  const int value_bytes = argsort ? 8 : values_kind;
  std::vector<unsigned long long> wide(n);  // pairs' values, each naming its key's position
  std::vector<unsigned> narrow(n);
  for (size_t i = 0; i < n; ++i) narrow[i] = static_cast<unsigned>(wide[i] = i * 7 + 3);
  emu_buffers.clear();
  GlcDeviceBuffer keys, keys_out, values, values_out;
  emu_copy_in(keys, input.data(), n * sizeof(Bits));
  if (value_bytes && !argsort)
    emu_copy_in(values, value_bytes == 4 ? (const void *)narrow.data() : wide.data(),
                n * value_bytes);
  if (!argsort) keys_out.allocate(n * sizeof(Bits), nullptr);
  if (value_bytes) values_out.allocate(n * value_bytes, nullptr);
  const glc_sort_call call = {dtype,      descending,     n,
                              keys.ptr,   keys_out.ptr,   value_bytes,
                              values.ptr, values_out.ptr, nullptr};
  const int code = glc_dispatch_sort_key(dtype, "emulation", [&](auto d) {
    return quicksort_cdp::sort<decltype(d)::value>(call, emu_max_depth);
  });
  std::vector<size_t> want(n);
  std::iota(want.begin(), want.end(), size_t(0));
  std::stable_sort(want.begin(), want.end(), [&](size_t a, size_t b) {
    return order_of(input[a], dtype, descending) < order_of(input[b], dtype, descending);
  });
  const unsigned long long value_mask = value_bytes == 4 ? 0xffffffffull : ~0ull;
  size_t wrong = n;
  for (size_t i = 0; i < n && wrong == n; ++i) {
    const size_t from = want[i];
    const bool key_ok = argsort || keys_out.as<Bits>()[i] == input[from];
    const bool value_ok = !value_bytes || read_bits(values_out.ptr, value_bytes, i) ==
                                              (argsort ? from : (from * 7 + 3) & value_mask);
    if (!key_ok || !value_ok) wrong = i;
  }
  const bool guards = std::all_of(emu_buffers.begin(), emu_buffers.end(),
                                  [](const auto &b) { return b->guard_intact(); });
  if (code == cudaSuccess && wrong == n && guards) return true;
  printf("FAIL dtype %d n %zu values %d descending %d depth limit %d pool %zu: ", dtype, n,
         values_kind, descending, emu_max_depth, emu_pool_slots);
  if (code != cudaSuccess)
    printf("error %d\n", code);
  else if (wrong != n)
    printf("position %zu wrong\n", wrong);
  else
    printf("a write past a buffer\n");
  return false;
}

struct Tally {
  long sorts = 0, failures = 0;
  bool stop_at_first = false;  // a planted bug's run: its first wrong sort is enough
  void add(bool ok) {
    ++sorts;
    failures += !ok;
    if (!ok && stop_at_first) {
      printf("stopped at the first failure, after %ld sorts\n", sorts);
      exit(1);
    }
  }
};

template <typename Bits>
void every_kind(int dtype, size_t n, Tally &tally, std::mt19937_64 &rng, bool all_values) {
  for (const char *kind : {"random", "sorted", "reversed", "equal", "few"}) {
    const std::vector<Bits> keys = keys_of<Bits>(kind, n, dtype, rng);
    for (int values_kind : {0, 4, -1, 8}) {
      if (!all_values && values_kind != 0) continue;
      for (bool descending : {false, true})
        if (values_kind == 0 || !descending)
          tally.add(sorted_right(keys, dtype, values_kind, descending));
    }
  }
}

template <typename Bits>
void every_size(int dtype, Tally &tally, std::mt19937_64 &rng) {
  using quicksort_cdp::kSmall;
  using quicksort_cdp::kTile;
  // 1, 2, odd; the shared sort's limit +-1 (the host's grid sorts it, or partitions once); a
  // tile +-1; several tiles with a last one partly filled, two levels of launches
  const size_t sizes[] = {1, 2, 3, kSmall - 1, kSmall, kSmall + 1, kTile - 1, kTile + 1, 13001};
  for (size_t n : sizes) every_kind<Bits>(dtype, n, tally, rng, n == kTile + 1 || n == 2);
}

// body(bits, dtype) for the five key dtypes, bits a zero of their width.
template <typename Body>
void for_each_dtype(Body body) {
  for (int dtype : {GLC_I32, GLC_U32, GLC_F32}) body(0u, dtype);
  for (int dtype : {GLC_I64, GLC_F64}) body(0ull, dtype);
}

// argv[1] "first": stop at the first wrong sort.
int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each line out before a wild access can end the run
  std::mt19937_64 rng(6);
  Tally tally;
  tally.stop_at_first = argc > 1 && std::string(argv[1]) == "first";
  for_each_dtype([&](auto bits, int dtype) { every_size<decltype(bits)>(dtype, tally, rng); });
  const long launches = emu_launches;
  const int deepest = emu_deepest;
  printf("default limits: %ld sorts, %ld device launches, nesting depth up to %d\n", tally.sorts,
         launches, deepest);

  // the depth limit: 0 (the host's grid sorts all by itself), 1 and 2 (grids at the limit sort
  // segments of thousands alone)
  const long depth_sorts = tally.sorts;
  for (int limit : {0, 1, 2}) {
    emu_max_depth = limit;
    for (size_t n : {size_t(quicksort_cdp::kSmall + 1), size_t(13001)})
      for_each_dtype([&](auto bits, int dtype) {  // the values at one dtype of each width
        every_kind<decltype(bits)>(dtype, n, tally, rng, dtype == GLC_I32 || dtype == GLC_F64);
      });
  }
  emu_max_depth = quicksort_cdp::kMaxDepth;
  printf("depth limits 0-2: %ld sorts\n", tally.sorts - depth_sorts);

  // a launch pool of 0 and 1 slots: every launch fails, or each parent's second one does
  const long failed_before = emu_failed_launches, pool_sorts = tally.sorts;
  for (size_t cap : {0, 1}) {
    emu_pool_cap = cap;
    emu_pool_slots = cap;
    for_each_dtype([&](auto bits, int dtype) {
      every_kind<decltype(bits)>(dtype, 13001, tally, rng, dtype == GLC_F32);
    });
  }
  const long failed = emu_failed_launches - failed_before;
  printf("pool of 0 and 1: %ld sorts, %ld launches failed and sorted by their parents\n",
         tally.sorts - pool_sorts, failed);

  bool covered = true;
  if (deepest < 2 || failed == 0) {
    printf("FAIL: a path was not taken (nesting depth %d, failed launches %ld)\n", deepest, failed);
    covered = false;
  }
  if (emu_errors) printf("FAIL: %ld warp intrinsics with a partial mask\n", emu_errors);
  printf("%ld sorts, %ld failed\n", tally.sorts, tally.failures);
  const bool ok = tally.failures == 0 && emu_errors == 0 && covered;
  if (ok) printf("all ok\n");
  return ok ? 0 : 1;
}
