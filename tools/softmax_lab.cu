// softmax_lab: times the CUDA softmax kernels directly, next to a device copy of the same bytes,
// with or without one of the planner's choices undone. This is how the departures from the
// reference design in docs/_static/bench/departures.md were measured: each variant is the
// production plan with one decision changed, run by the production kernels.
//
//   tools/softmax_lab.sh [options]          (builds this file with nvcc, then runs it)
//
//   --dtype half|bfloat16|float|double   repeatable; default half, bfloat16, float
//   --algo softmax|log_softmax           default softmax
//   --cols N ...                         default the benchmark's sweep
//   --variant NAME ...                   default, or the variants below (several after one
//                                        flag, or the flag repeated, run side by side;
//                                        smem=48k runs alone)
//   --reps N                             timed calls per shape (default 20, the median is kept)
//   --rows N                             rows of every shape (default the benchmark's: 98304 up
//                                        to 2048 cols, 2^27 / cols beyond)
//   --triton DIR                         where the variant triton finds its kernels
//   --interleave                         time the copy and the variants round by round, one
//                                        call of each a round, as python -m oneflite.bench
//                                        takes its providers, instead of each one's calls in a
//                                        row
//   --drain                              end each timed call after a second L2 flush, less the
//                                        median time of that flush alone (timed the same way,
//                                        round by round), so that what a kernel leaves dirty
//                                        in L2 and the DRAM takes after it ends is counted too
//   --warm-code                          --interleave only: after each L2 flush, before the
//                                        timed call, the same kernel on one block and one row
//                                        (the copy: 16 bytes), so that the timed call finds its
//                                        code in L2 rather than in DRAM; the untimed call shares
//                                        the timed one's y
//   --y-offset N                         y starts N elements past an aligned address (x stays
//                                        aligned), to run the kernels' store fallbacks; the N
//                                        elements before y and after it must stay untouched
//
//   default     the plan PlanSoftmax makes
//   grid=tiles       one block per tile of rows, never a persistent grid
//   grid=persistent  always a persistent grid: the resident blocks stride over the tiles
//   grid=Nx     a persistent grid of N blocks an SM (at most the resident ones)
//   path=block  a shared-memory block path even for rows the warp or block_registers path takes
//   online=N    block_online with N (2 or 4) blocks per SM, each caching 1/N of shared memory
//   block=N     block_smem with N threads a block (64, 128, 256, 512 or 1024), for any row that
//               fits in shared memory (rows the warp path takes too)
//   copy=registers  the block paths fill shared memory through registers, not cp.async
//   passes=3    the block paths find the max and the sum in two passes, not one (online)
//   pack=2      the warp path's rung with packs of 2 elements (as OneFlow's warp path loads
//               half, bfloat16 and float) instead of 16 bytes; the same values a lane
//   smem=48k    planned as if shared memory stopped at the 48 KiB default (no opt-in)
//   cache=float the block paths cache a 16-bit row widened to float (as OneFlow does), through
//               registers, in twice the shared memory; what no longer fits is re-read
//   path=registers  block_registers by the planner's rule (PlanBlockRegisters), for any dtype
//               but double: the shape whose range of windows takes the row, if one does
//   registers=BxN[/whole|/one]   block_registers with B threads of N packs (/whole: by its
//               kernel for rows of whole 16-byte packs, where the row is; /one: by its kernel of
//               a block a row, for rows that fill the shape): 128x2, 128x4, 256x2, 256x4,
//               512x2, 512x4, 512x8 or 1024x8, float's 64x3, 192x2, 224x2 and 1024x4 (for the
//               other dtypes the lab's), or the lab's 64x2, 64x3, 64x6, 96x2, 96x4, 128x1, 128x3,
//               160x2, 160x3, 192x1, 256x1, 256x3, 256x8, 384x1, 512x1, 1024x1 or 1024x2 (at
//               most 32 values a thread)
//   rows=N      the warp path's rung with each group taking N (1, 2 or 4) rows at once (rungs
//               of up to 4 packs a lane)
//   tail=BxN    block_registers with B threads of N register packs, the rest of the row cached
//               in shared memory: 256x2, 512x2, 512x4, 512x8, 1024x2, 1024x4 or 1024x8 (at most
//               32 values a thread)
//   held=0      block_online without its uncached packs held in registers (all read twice)
//   ragged=on   block_registers (without a tail) by its kernel for rows of any alignment;
//   ragged=off  by its kernel for rows of whole 16-byte packs (PlansWholeRowsKernel picks)
//   stagger=off  no stagger of the first wave (StaggerFirstWave), on any of the plans above
//   stagger=U   the first wave's groups a step of U microseconds apart, on any block path
//   ahead=off   the plan on its kernel's copy that does not read x ahead into L2 (ReadAhead), or
//   ahead=on    on the one that does, where it has one: a warp rung of kWarpReadAheadShape, a
//               block_registers shape (float's below 1024 threads, kReadAheadShape, and the
//               cached-tail shapes), or block_smem's plain kernel; the planner never reads ahead
//               on the cached tails, and on block_smem only for 16-bit softmax rows of up to
//               37632 columns (PlanBlockSmemReadAhead). occ=, wocc=, hold=off and carve= know only
//               the copies that do not, so put ahead=off before them. Built with
//               -DONEFLITE_LAB_READ_AHEAD_KIB=N, the copies ask for the bytes N KiB on, not 4 MiB
//               on (and the planner then reads ahead only where the L2 holds ten times that)
//   warp=WxN[xB]  a warp rung the ladder does not have: W lanes a row, N packs of B bytes
//               (default 16) a lane; one of ForEachLabWarpShape's below
//   tile=WxN[xT[xM]]  warp_tile with W lanes a row, N words a lane and T tiles a warp (default
//               1), compiled for M blocks an SM (__launch_bounds__; 1 no bound; default the
//               planner's TileMinBlocks); one of ForEachLabTileShape's below
//   occ=N       block_registers (no tail) held to N blocks an SM by shared memory
//               (HoldBlocksPerSmSmem), as the planner holds float 512 x 4; after registers=BxN
//               (below), that shape held
//   occ=NxC     the same in a carve-out of C KiB, counting the reserve the device reports
//   wocc=NxC    the planned warp rung held to N blocks an SM in a carve-out of C KiB
//   carve=P     the plan, its block_registers kernel preferring a carve-out of P percent (-1:
//               none); the preference stays with the kernel for later variants
//   shared=off  the planner's largest carve-out for rows on 128-byte lines undone
//               (PreferMaxShared): the kernel's default copy
//   hold=off    the planner's hold undone: the blocks registers allow (float 512 x 4 and 128 x 4,
//               many rows)
//   pair=N      not a plan: N (1, 2 or 4) rows a block of N x 128 threads, one 16-byte pack a
//               thread, each row's threads reducing behind their own named barrier; rows of
//               exactly 128 packs (half and bfloat16 1024, float 512). pair=1m, pair=1l and
//               pair=1ml: one row a block with Triton's arithmetic (m: exp2 without ftz, a
//               division an element), its loads and barriers (l), or both (softmax only).
//               pair=1x2 (and pair=1x2m, ...): one row a block, two packs a thread (packs t
//               and t + 128, as Triton lays them out), rows of exactly 256 packs (float 1024);
//               pair=1x3 (...): three packs a thread, rows of exactly 384 packs (float 1536).
//               Suffixes o, r and f (pair=1x2orf, any of them; not with m or l) add
//               block_registers' row loop, run-time columns and store fallback (PairRowsKernel)
//   one=off     a one-row warp plan (PlanWarpOneRow) on its rung's kernel with the row loop
//               (where block_registers' 128 x 1 would take the rows without the rule, 16-bit
//               1024 columns from 384 rows an SM, registers=128x1 is that plan)
//   one=N[/16]  the warp path's one-row kernel (kOneRow) on rows of exactly 32 x N 16-byte
//               packs (N of 1 to 4), or with /16 of 16 x N (N of 1 or 2; two rows a warp), any
//               dtype, where the planner takes them or not
//   warprow=NxB[p][/W]  not a plan: one row a warp, 4 warps a block, the grid the rows / 4 (the
//               warp path's launch shape) with no row loop, no alignment test and the columns a
//               constant: rows of exactly 32 x N packs of B bytes (1x16, 2x16, 3x16, 4x16, 4x4,
//               8x4, 2x8, 4x8). Lane l holds packs l + 32 k: warprow=8x4 at float 256 is one scalar
//               load a lane per 128 bytes of the row. p: plain ld.global, not ld.global.nc.
//               /16: 16 lanes a row, two rows a warp, the grid the rows / 8, rows of exactly
//               16 x N packs (1x16 and 2x16: float 64 and 128, 16-bit 128 and 256)
//   bulk=MODE[/THREADS]  not a plan: one row a block of THREADS threads (32, 64, 128, 256 or
//               512; default 128) and the fewest packs a thread that hold it (LaunchBulk lists
//               the shapes), rows of whole packs, moved by the bulk copy engine: load (the row
//               into shared memory by one cp.async.bulk), store (out by one), both, none
//               (neither: a one-row kernel), or copy (both, and no arithmetic: y is x; its
//               max_error is not a softmax's)
//   triton      not a plan: the benchmark's Triton kernel (python -m oneflite.bench's peer), from
//               the cubin tools/triton_cubins.py compiled for this dtype and row length into
//               --triton DIR, run on the same x and y as the plans (softmax only). The same
//               buffers matter: where a tensor lies in memory moves a copy by up to 0.9% (item 55
//               of cuda/ep/primitive/NOTES.md), more than the margins measured against Triton.
//   triton=DIR  the same, from the cubins in DIR instead of --triton's (say, Triton's PTX assembled
//               by another ptxas), to run beside the variant triton
//
// Every timed call follows an L2 flush (a read of four times the L2 size), as in the benchmark.
//
// Variants joined by '+' apply left to right, each to the plan the one before it made:
// registers=192x2/whole+occ=9x100 is 192 x 2 held to 9 blocks an SM.
//
// Each line: dtype algo variant cols rows plan copy_GB/s GB/s fraction_of_copy max_error,
// where GB/s counts bytes read plus written, and max_error compares rows with a float64 softmax
// computed on the host: every row of tensors up to 2^25 elements, else 64 spread over it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// The planner's lab-only shapes (PlanRegistersTail).
#define ONEFLITE_SOFTMAX_LAB 1
#include "ep/primitive/softmax_kernels.cuh"

namespace {

using namespace oneflite::ep;
using namespace oneflite::ep::primitive::cuda_softmax;

#define LAB_CHECK(expr)                                                    \
  do {                                                                     \
    const cudaError_t status = (expr);                                     \
    if (status != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(status)); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

// -DLAB_DTYPE=1 (half), 2 (bfloat16), 3 (float) or 4 (double) builds a binary for one dtype;
// the script builds the dtypes in parallel.
#ifdef LAB_DTYPE
#define LAB_HAS(code) (LAB_DTYPE == (code))
#else
#define LAB_HAS(code) 1
#endif

const std::vector<int64_t> kSweep = {32,   64,   100,   128,   256,   512,  768,
                                     1000, 1024, 1025,  1536,  2048,  3072, 4096,
                                     5000, 8192, 12345, 16384, 32768, 65536};

struct Options {
  std::vector<std::string> dtypes;
  std::vector<int64_t> cols;
  Algorithm algo = Algorithm::kSoftmax;
  std::vector<std::string> variants;
  int reps = 20;
  int64_t rows = 0;  // 0: the benchmark's rows for each cols
  std::string triton_dir;
  int64_t y_offset = 0;
  bool interleave = false;
  bool drain = false;
  bool warm_code = false;
};

[[maybe_unused]] float ToFloat(__half v) { return __half2float(v); }
[[maybe_unused]] float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
[[maybe_unused]] float ToFloat(float v) { return v; }
[[maybe_unused]] double ToFloat(double v) { return v; }
template <typename T>
T FromFloat(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return static_cast<T>(v);
  }
}

// Reads n 16-byte words; stores only if they hash to a value they never do (the buffer is
// zeros), so that the loads stay.
__global__ void ReadAll(const uint4* words, int64_t n, unsigned* sink) {
  unsigned hash = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 w = words[i];
    hash ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (hash == 0x9E3779B9u) { *sink = hash; }
}

// Evicts L2 before a timed call, as python -m oneflite.bench does: reads (not writes, which would
// leave dirty lines for the timed call to write back) four times the L2 size, at least 256 MiB.
class L2Flush {
 public:
  explicit L2Flush(const CudaDeviceInfo& info)
      : words_(std::max<int64_t>(4 * static_cast<int64_t>(info.l2_cache_bytes), 256 << 20) / 16),
        grid_(info.sm_count * 8) {
    LAB_CHECK(cudaMalloc(&buffer_, words_ * 16 + sizeof(unsigned)));
    LAB_CHECK(cudaMemset(buffer_, 0, words_ * 16 + sizeof(unsigned)));
  }
  ~L2Flush() { cudaFree(buffer_); }
  void operator()(cudaStream_t stream) const {
    ReadAll<<<grid_, 256, 0, stream>>>(buffer_, words_,
                                       reinterpret_cast<unsigned*>(buffer_ + words_));
  }

 private:
  uint4* buffer_ = nullptr;
  int64_t words_;
  int grid_;
};

// The median time in ms of each call over `reps` rounds, a round timing every call once in
// order, each between its own pair of events with L2 flushed before it (--interleave). With
// drain, each call's end event follows a second flush, and the median of that flush alone (one
// more call a round, with nothing before it) is taken off every median: the time then counts
// the write-back of the lines a call left dirty in L2 (--drain).
//
// With `warm` (one entry a call), warm[c] runs between the flush and call c's begin event.
std::vector<float> InterleavedMedianMs(cudaStream_t stream, const L2Flush& flush, int reps,
                                       std::vector<std::function<void()>> calls, bool drain = false,
                                       std::vector<std::function<void()>> warm = {}) {
  if (drain) {
    calls.insert(calls.begin(), [] {});
    if (!warm.empty()) {
      warm.insert(warm.begin(), [] {});
    }
  }
  cudaEvent_t begin, end;
  LAB_CHECK(cudaEventCreate(&begin));
  LAB_CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 3; ++i) {
    for (const auto& call : calls) { call(); }
  }
  std::vector<std::vector<float>> times(calls.size());
  for (int i = 0; i < reps; ++i) {
    for (size_t c = 0; c < calls.size(); ++c) {
      flush(stream);
      if (!warm.empty()) { warm[c](); }
      LAB_CHECK(cudaEventRecord(begin, stream));
      calls[c]();
      if (drain) { flush(stream); }
      LAB_CHECK(cudaEventRecord(end, stream));
      LAB_CHECK(cudaEventSynchronize(end));
      float ms = 0;
      LAB_CHECK(cudaEventElapsedTime(&ms, begin, end));
      times[c].push_back(ms);
    }
  }
  LAB_CHECK(cudaEventDestroy(begin));
  LAB_CHECK(cudaEventDestroy(end));
  std::vector<float> medians;
  for (auto& t : times) {
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    medians.push_back(t[t.size() / 2]);
  }
  if (drain) {
    const float flush_ms = medians.front();
    medians.erase(medians.begin());
    for (float& ms : medians) { ms -= flush_ms; }
  }
  return medians;
}

// The median time in ms of `reps` calls of fn, each between its own pair of events, with L2
// flushed before each.
template <typename Fn>
float MedianMs(cudaStream_t stream, const L2Flush& flush, int reps, Fn&& fn, bool drain) {
  return InterleavedMedianMs(stream, flush, reps, {std::function<void()>(fn)}, drain)[0];
}

// Launches the plan's block path through the block kernel of plan.block threads built with the
// given lab-only parameters, and returns that kernel (nullptr, and the plan unchanged, when
// the dtype has no kernel of that size).
template <typename T, bool kAsyncCopy = true, bool kOnlineNormalizer = true, typename Cache = T>
const void* UseBlockKernel(const Options& options, const CudaDeviceInfo& info, Plan& plan) {
  const void* used = nullptr;
  auto try_size = [&](auto block_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    if (kBlock != plan.block) { return; }
    const void* kernel = options.algo == Algorithm::kSoftmax
                             ? reinterpret_cast<const void*>(
                                   &BlockSoftmaxKernel<T, Algorithm::kSoftmax, kBlock, kAsyncCopy,
                                                       kOnlineNormalizer, Cache>)
                             : reinterpret_cast<const void*>(
                                   &BlockSoftmaxKernel<T, Algorithm::kLogSoftmax, kBlock,
                                                       kAsyncCopy, kOnlineNormalizer, Cache>);
    MaxDynamicSmem(kernel, info);  // raises this kernel's limit too
    plan.launch =
        options.algo == Algorithm::kSoftmax
            ? &LaunchBlock<T, Algorithm::kSoftmax, kBlock, kAsyncCopy, kOnlineNormalizer, Cache>
            : &LaunchBlock<T, Algorithm::kLogSoftmax, kBlock, kAsyncCopy, kOnlineNormalizer, Cache>;
    used = kernel;
  };
  try_size(std::integral_constant<int, 64>{});  // lab only: the planner starts at 128
  ForEachBlockSize<T>(try_size);
  return used;
}

// Warp rungs for the warp=WxN[xB] variant: several packs a lane below 32 lanes, and 8-byte packs
// (whole packs with no edges for 16-bit rows that start on 8-byte boundaries, e.g. half 100).
template <typename Fn>
void ForEachLabWarpShape(Fn&& fn) {
  fn(WarpShape<2, 2>{});
  fn(WarpShape<1, 4>{});
  fn(WarpShape<4, 2>{});
  fn(WarpShape<2, 4>{});
  fn(WarpShape<4, 3>{});
  fn(WarpShape<8, 2>{});
  fn(WarpShape<4, 4>{});
  fn(WarpShape<8, 4>{});
  fn(WarpShape<4, 7>{});
  fn(WarpShape<32, 1, 8>{});
  fn(WarpShape<16, 2, 8>{});
  fn(WarpShape<8, 4, 8>{});
  fn(WarpShape<4, 7, 8>{});
  fn(WarpShape<16, 2>{});
  fn(WarpShape<16, 4>{});
  fn(WarpShape<32, 2, 8>{});
  fn(WarpShape<32, 4, 8>{});
  fn(WarpShape<32, 4, 4>{});
  fn(WarpShape<32, 8, 4>{});
  // Rungs of the ladder that a dtype's plan no longer climbs there (float's 32 x 8 and 32 x 12,
  // the 16-bit types' 32 x 4 for aligned rows of 960-1024 columns), to compare against.
  fn(WarpShape<32, 4>{});
  fn(WarpShape<32, 8>{});
  fn(WarpShape<32, 12>{});
}

// warp_tile rungs for the tile=WxN variant: W lanes a row, N words a lane.
template <typename Fn>
void ForEachLabTileShape(Fn&& fn) {
  fn(TileShape<1, 25>{});
  fn(TileShape<2, 25>{});
  fn(TileShape<4, 25>{});
  fn(TileShape<2, 13, 2, 1>{});
  fn(TileShape<4, 13, 2, 1>{});
  fn(TileShape<4, 9, 2, 1>{});
  fn(TileShape<4, 17, 2, 1>{});
  fn(TileShape<1, 25, 2, 1>{});
  fn(TileShape<2, 25, 2, 1>{});
  fn(TileShape<4, 25, 2, 1>{});
  fn(TileShape<8, 25, 2, 1>{});
  fn(TileShape<2, 25, 2, 4>{});
  fn(TileShape<2, 25, 2, 6>{});
  fn(TileShape<2, 25, 2, 7>{});
  fn(TileShape<4, 25, 2, 4>{});
  fn(TileShape<4, 25, 2, 6>{});
  fn(TileShape<4, 25, 2, 7>{});
  fn(TileShape<8, 25, 2, 6>{});
  fn(TileShape<4, 25, 3>{});
}

// A rung variant (warp=, tile=) the lab has no rung for, or whose rung cannot take the row:
// said on stderr, and the plan left unlaunchable, so RunDtype skips it.
void SkipVariant(const std::string& variant, int64_t cols, Plan& plan) {
  std::fprintf(stderr, "softmax_lab: %s: no such lab rung, or it does not apply to %lld columns\n",
               variant.c_str(), static_cast<long long>(cols));
  plan.launch = nullptr;
}

// The warp kernel a plan of the warp path launches (its rung of the ladder, rows per group and
// edges), for the variant wocc=NxC; nullptr if no rung matches or the plan reads ahead.
template <typename T>
const void* WarpKernel(const Options& options, const Plan& plan) {
  const void* kernel = nullptr;
  if (plan.read_ahead) { return nullptr; }
  ForEachWarpShape([&](auto shape) {
    using Shape = decltype(shape);
    if constexpr (kWarpShapeFor<T, Shape>) {
      auto pick = [&](auto ragged_tag) {
        constexpr bool kRagged = decltype(ragged_tag)::value;
        constexpr int kRows =
            kGroupRows<T, Shape::width, Shape::packs, kRagged, Shape::bytes, Shape::rows>;
        if (kernel != nullptr || plan.ragged != kRagged || plan.width != Shape::width ||
            plan.cols_per_thread != Shape::packs * PackSize<T>::value ||
            plan.rows_per_access != kRows) {
          return;
        }
        kernel = options.algo == Algorithm::kSoftmax
                     ? reinterpret_cast<const void*>(
                           &WarpSoftmaxKernel<T, Algorithm::kSoftmax, Shape::width, Shape::packs,
                                              kRagged, Shape::bytes, Shape::rows>)
                     : reinterpret_cast<const void*>(
                           &WarpSoftmaxKernel<T, Algorithm::kLogSoftmax, Shape::width, Shape::packs,
                                              kRagged, Shape::bytes, Shape::rows>);
      };
      pick(std::false_type{});
      pick(std::true_type{});
    }
  });
  return kernel;
}

// The block_registers kernel (no cached tail) a plan of 128-1024 threads of 2, 4 or 8 packs
// launches, for the variants occ=N and hold=off; nullptr for any other plan, or one that reads
// ahead.
template <typename T>
const void* RegistersKernel(const Options& options, const Plan& plan, int64_t cols) {
  constexpr int P = PackSize<T>::value;
  if (plan.path != Path::kBlockRegisters || plan.cached_packs != 0 || plan.read_ahead) {
    return nullptr;
  }
  const void* found = nullptr;
  auto try_shape = [&](auto block_tag, auto packs_tag, auto algo_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    constexpr int kPacks = decltype(packs_tag)::value;
    constexpr Algorithm kAlgorithm = decltype(algo_tag)::value;
    if constexpr (kPacks * P <= 32) {
      if (kBlock != plan.block || kPacks * P != plan.cols_per_thread ||
          kAlgorithm != options.algo) {
        return;
      }
      if (plan.ragged) {
        found = reinterpret_cast<const void*>(
            BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, true>);
        return;
      }
      if (plan.one_row) {
        found = reinterpret_cast<const void*>(
            BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, false,
                                       StoreFallback::kNone, Carveout::kDefault, false, true>);
        return;
      }
      // The whole-rows kernel the plan took: the planner's fallback for this row.
      WithWholeRowsKernel<T, kBlock, kPacks>(
          WholeRowsFallback<T>(kBlock, kPacks, MaxWindowPacks<T>(cols, true)),
          [&](auto fallback_tag) {
            constexpr StoreFallback kFallback = decltype(fallback_tag)::value;
            found = reinterpret_cast<const void*>(
                BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, false, kFallback>);
          });
    }
  };
  auto try_packs = [&](auto block_tag, auto algo_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    if constexpr (kBlock == 128 || kBlock == 192) {
      try_shape(block_tag, std::integral_constant<int, 1>{}, algo_tag);
    }
    if constexpr (kBlock == 128 || kBlock == 160 || kBlock == 256) {
      try_shape(block_tag, std::integral_constant<int, 3>{}, algo_tag);
    }
    if constexpr (kBlock == 96 || kBlock == 160 || kBlock == 192 || kBlock == 224) {
      try_shape(block_tag, std::integral_constant<int, 2>{}, algo_tag);
      if constexpr (kBlock == 96) {
        try_shape(block_tag, std::integral_constant<int, 4>{}, algo_tag);
      }
      return;
    }
    try_shape(block_tag, std::integral_constant<int, 2>{}, algo_tag);
    try_shape(block_tag, std::integral_constant<int, 4>{}, algo_tag);
    try_shape(block_tag, std::integral_constant<int, 8>{}, algo_tag);
  };
  auto try_blocks = [&](auto algo_tag) {
    try_packs(std::integral_constant<int, 96>{}, algo_tag);
    try_packs(std::integral_constant<int, 128>{}, algo_tag);
    try_packs(std::integral_constant<int, 160>{}, algo_tag);
    try_packs(std::integral_constant<int, 192>{}, algo_tag);
    try_packs(std::integral_constant<int, 224>{}, algo_tag);
    try_packs(std::integral_constant<int, 256>{}, algo_tag);
    try_packs(std::integral_constant<int, 512>{}, algo_tag);
    try_packs(std::integral_constant<int, 1024>{}, algo_tag);
  };
  try_blocks(std::integral_constant<Algorithm, Algorithm::kSoftmax>{});
  try_blocks(std::integral_constant<Algorithm, Algorithm::kLogSoftmax>{});
  return found;
}

// A plan held by the smallest carve-out (HoldFloat128x4) planned again without the hold: the
// same shape on the kernel with the default carve-out, over the same rows. The variants occ=,
// carve= and hold=off start from it.
template <typename T>
void UnholdMaxL1(const Options& options, const CudaDeviceInfo& info, int64_t rows, int64_t cols,
                 Plan& plan) {
  if (!plan.max_l1) { return; }
  constexpr int P = PackSize<T>::value;
  // Planned for one row, too few to hold; then the grid for all of them.
  const bool ok = options.algo == Algorithm::kSoftmax
                      ? PlanBlockRegisters<T, Algorithm::kSoftmax>(info, 1, cols, true, plan.block,
                                                                   plan.cols_per_thread / P, plan)
                      : PlanBlockRegisters<T, Algorithm::kLogSoftmax>(
                            info, 1, cols, true, plan.block, plan.cols_per_thread / P, plan);
  if (!ok || plan.max_l1) {
    std::fprintf(stderr, "softmax_lab: could not undo the carve-out hold\n");
    std::exit(1);
  }
  SetGrid(plan, rows, info, plan.active_per_sm, plan.persistent);
}

// occ=NxC: the dynamic shared memory that holds `kernel` to exactly `blocks` blocks an SM in a
// carve-out of `carve_kib` KiB, counting the per-block reserve the device reports; 0 when no
// size does, or the occupancy calculator disagrees. Sets the kernel's preferred carve-out.
size_t LabHoldSmem(const void* kernel, const CudaDeviceInfo& info, int block_size, int blocks,
                   int carve_kib) {
  cudaFuncAttributes attributes{};
  LAB_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  int reserved = 0;
  LAB_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, info.index));
  const int carve = carve_kib * 1024;
  const int allocated = (carve / blocks - reserved) / 128 * 128;  // static + dynamic, rounded
  const int dynamic = allocated - static_cast<int>(attributes.sharedSizeBytes);
  if (dynamic <= 0 || (blocks + 1) * (allocated + reserved) <= carve) { return 0; }
  const int percent = static_cast<int>(int64_t{carve} * 100 / info.max_shared_memory_per_sm);
  LAB_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent));
  int active = 0;
  LAB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, kernel, block_size, dynamic));
  std::fprintf(stderr, "softmax_lab: hold %d in %d KiB (%d%%): reserve %d, dynamic %d -> %d\n",
               blocks, carve_kib, percent, reserved, dynamic, active);
  return active == blocks ? static_cast<size_t>(dynamic) : 0;
}

// Calls fn(block, packs, algorithm) tags for the cached-tail shapes the planner takes
// (ForEachPlannedTailShape), for both algorithms; none for double, which has no tail.
template <typename T, typename Fn>
void ForEachTailShape(Fn&& fn) {
  if constexpr (!std::is_same_v<T, double>) {
    auto shapes = [&](auto algo_tag) {
      ForEachPlannedTailShape<T>(
          [&](auto block_tag, auto packs_tag) { fn(block_tag, packs_tag, algo_tag); });
    };
    shapes(std::integral_constant<Algorithm, Algorithm::kSoftmax>{});
    shapes(std::integral_constant<Algorithm, Algorithm::kLogSoftmax>{});
  }
}

// The plan on its kernel's copy that reads x ahead (ReadAheadChoice::kOn) or on the other (kOff):
// a block_registers shape or warp rung planned again over the same rows, keeping the plan's
// kernel for rows of whole packs or any rows and its stagger; a cached tail or block_smem's plain
// kernel launched by the other copy as planned. False for other plans.
template <typename T>
bool PlanReadAhead(const Options& options, const CudaDeviceInfo& info, int64_t rows, int64_t cols,
                   ReadAheadChoice choice, Plan& plan) {
  constexpr int P = PackSize<T>::value;
  Plan again = plan;
  bool ok = false;
  const bool on = choice == ReadAheadChoice::kOn;
  // The read-ahead copy's opt-in to the shared memory past 48 KiB, as the planner gives its own.
  auto opt_in = [&](const void* kernel) {
    if (on) { MaxDynamicSmem(kernel, info); }
  };
  if (plan.path == Path::kBlockRegisters && plan.cached_packs > 0) {
    // A cached tail: the same launch on the kernel's copy that reads ahead, or not.
    ForEachTailShape<T>([&](auto block_tag, auto packs_tag, auto algo_tag) {
      constexpr int kBlock = decltype(block_tag)::value;
      constexpr int kPacks = decltype(packs_tag)::value;
      constexpr Algorithm kAlgo = decltype(algo_tag)::value;
      if (ok || kAlgo != options.algo || plan.block != kBlock ||
          plan.cols_per_thread != kPacks * P) {
        return;
      }
      ok = true;
      opt_in(reinterpret_cast<const void*>(
          &BlockRegisterSoftmaxKernel<T, kAlgo, kBlock, kPacks, true, true,
                                      StoreFallback::kElements, Carveout::kDefault, true>));
      again.launch = on ? &LaunchBlockRegisters<T, kAlgo, kBlock, kPacks, true, true,
                                                StoreFallback::kElements, Carveout::kDefault, true>
                        : &LaunchBlockRegisters<T, kAlgo, kBlock, kPacks, true>;
      again.read_ahead = on;
    });
  } else if (plan.path == Path::kBlockSmem) {
    // block_smem's kernel of plan.block threads (the planner's plain copy, or the one that reads
    // ahead), reading ahead or not.
    auto one = [&](auto block_tag, auto algo_tag) {
      constexpr int kBlock = decltype(block_tag)::value;
      constexpr Algorithm kAlgo = decltype(algo_tag)::value;
      if (ok || kAlgo != options.algo || plan.block != kBlock ||
          (plan.launch != &LaunchBlock<T, kAlgo, kBlock> &&
           plan.launch != &LaunchBlock<T, kAlgo, kBlock, true, true, T, 0, true>)) {
        return;
      }
      ok = true;
      opt_in(reinterpret_cast<const void*>(
          &BlockSoftmaxKernel<T, kAlgo, kBlock, true, true, T, 0, true>));
      again.launch = on ? &LaunchBlock<T, kAlgo, kBlock, true, true, T, 0, true>
                        : &LaunchBlock<T, kAlgo, kBlock>;
      again.read_ahead = on;
    };
    auto sizes = [&](auto algo_tag) {
      one(std::integral_constant<int, 64>{}, algo_tag);
      ForEachBlockSize<T>([&](auto block_tag) { one(block_tag, algo_tag); });
    };
    sizes(std::integral_constant<Algorithm, Algorithm::kSoftmax>{});
    sizes(std::integral_constant<Algorithm, Algorithm::kLogSoftmax>{});
  } else if (plan.path == Path::kBlockRegisters && plan.cached_packs == 0 && !plan.bulk_load) {
    const RowsKernel kernel = plan.one_row  ? RowsKernel::kOneRow
                              : plan.ragged ? RowsKernel::kRagged
                                            : RowsKernel::kWhole;
    const int packs = plan.cols_per_thread / P;
    ok = options.algo == Algorithm::kSoftmax
             ? PlanBlockRegisters<T, Algorithm::kSoftmax>(info, rows, cols, true, plan.block, packs,
                                                          again, kernel, choice)
             : PlanBlockRegisters<T, Algorithm::kLogSoftmax>(info, rows, cols, true, plan.block,
                                                             packs, again, kernel, choice);
  } else if (plan.path == Path::kWarp) {
    ForEachWarpShape([&](auto shape) {
      using Shape = decltype(shape);
      if constexpr (kWarpShapeFor<T, Shape>) {
        const int group_rows =
            plan.ragged
                ? kGroupRows<T, Shape::width, Shape::packs, true, Shape::bytes, Shape::rows>
                : kGroupRows<T, Shape::width, Shape::packs, false, Shape::bytes, Shape::rows>;
        if (ok || plan.width != Shape::width || plan.cols_per_thread != Shape::packs * P ||
            plan.rows_per_access != group_rows) {
          return;
        }
        ok = true;
        if (options.algo == Algorithm::kSoftmax) {
          PlanWarp<T, Algorithm::kSoftmax, Shape>(info, rows, plan.ragged, again, choice);
        } else {
          PlanWarp<T, Algorithm::kLogSoftmax, Shape>(info, rows, plan.ragged, again, choice);
        }
      }
    });
  }
  if (ok) { plan = again; }
  return ok;
}

// The planner's choice, with the variant's one decision undone; or, from `start`, that plan
// with one more. Variants joined by '+' (registers=192x2/whole+occ=9x100) apply left to right.
template <typename T>
Plan VariantPlan(const Options& options, const std::string& variant, const CudaDeviceInfo& info,
                 int64_t rows, int64_t cols, const Plan* start = nullptr) {
  if (const size_t plus = variant.find('+'); plus != std::string::npos) {
    const Plan first = VariantPlan<T>(options, variant.substr(0, plus), info, rows, cols, start);
    return VariantPlan<T>(options, variant.substr(plus + 1), info, rows, cols, &first);
  }
  const bool allow_registers = variant != "path=block" && variant.rfind("block=", 0) != 0;
  Plan plan = start != nullptr ? *start
              : options.algo == Algorithm::kSoftmax
                  ? PlanSoftmax<T, Algorithm::kSoftmax>(info, rows, cols, true, allow_registers)
                  : PlanSoftmax<T, Algorithm::kLogSoftmax>(info, rows, cols, true, allow_registers);
  const int64_t resident = ResidentBlocks(info, plan.active_per_sm);
  if (variant == "grid=tiles") {
    plan.persistent = false;
    plan.grid = static_cast<int>(std::min<int64_t>(plan.tiles, 0x7fffffff));
  } else if (variant == "grid=persistent") {
    plan.persistent = true;
    plan.grid = static_cast<int>(std::min(plan.tiles, resident));
  } else if (variant.rfind("grid=", 0) == 0 && variant.back() == 'x') {
    // A persistent grid of N blocks an SM (at most what fits).
    const int64_t per_sm = std::min<int64_t>(std::stoi(variant.substr(5)), plan.active_per_sm);
    plan.persistent = true;
    plan.grid = static_cast<int>(std::min(plan.tiles, per_sm * info.sm_count));
  } else if (variant.rfind("block=", 0) == 0 && plan.path == Path::kBlockSmem) {
    // block_smem with a given block size (128, 256, 512 or 1024), one block per row.
    Plan sized = plan;
    sized.block = std::stoi(variant.substr(6));
    if (const void* kernel = UseBlockKernel<T>(options, info, sized)) {
      plan = sized;
      plan.active_per_sm = MaxActiveBlocksPerSm(kernel, info, plan.block, plan.smem);
      plan.grid = static_cast<int>(std::min<int64_t>(rows, 0x7fffffff));
    }
  } else if (variant == "held=0" && plan.path == Path::kBlockOnline) {
    UseBlockKernel<T>(options, info, plan);  // no uncached pack held in registers
  } else if (variant == "copy=registers" && plan.path != Path::kWarp) {
    UseBlockKernel<T, /*kAsyncCopy=*/false>(options, info, plan);
  } else if (variant == "passes=3" && plan.path != Path::kWarp) {
    UseBlockKernel<T, /*kAsyncCopy=*/true, /*kOnlineNormalizer=*/false>(options, info, plan);
  } else if (variant == "pack=2" && plan.path == Path::kWarp) {
    // The planned rung's lanes and values a lane, loaded and stored 2 elements at a time.
    constexpr int P = PackSize<T>::value;
    ForEachWarpShape([&](auto shape) {
      using Shape = decltype(shape);
      if constexpr (kWarpShapeFor<T, Shape> && P > 2) {
        if (Shape::width != plan.width || Shape::packs * P != plan.cols_per_thread ||
            plan.pack != P) {
          return;
        }
        using Narrow = WarpShape<Shape::width, Shape::packs * P / 2, 2 * sizeof(T)>;
        if (options.algo == Algorithm::kSoftmax) {
          PlanWarp<T, Algorithm::kSoftmax, Narrow>(info, rows, cols % 2 != 0, plan);
        } else {
          PlanWarp<T, Algorithm::kLogSoftmax, Narrow>(info, rows, cols % 2 != 0, plan);
        }
      }
    });
  } else if (variant == "cache=float" && kIs16Bit<T> && plan.path != Path::kWarp) {
    // Each cached pack takes 32 bytes instead of 16, and the block size is chosen again by the
    // planner's rule for that cache (128 threads while 4 blocks fit, else the most resident
    // threads); a row that no longer fits caches what fits on the largest block.
    constexpr int kWide = 2 * kPackBytes;
    const int64_t window = MaxWindowPacks<T>(cols, true);
    Plan best = plan;
    int best_active = 0, best_threads = 0;
    for (const int block : {128, 256, 512, 1024}) {
      Plan sized = plan;
      sized.block = block;
      // (Only 16-bit rows get here; for the others this instantiates an unused kernel.)
      using Wide = std::conditional_t<kIs16Bit<T>, float, T>;
      const void* kernel = UseBlockKernel<T, false, true, Wide>(options, info, sized);
      if (kernel == nullptr) { continue; }
      const int64_t fit = static_cast<int64_t>(MaxDynamicSmem(kernel, info)) / kWide;
      sized.cached_packs = static_cast<int>(std::min(window, fit));
      sized.path = sized.cached_packs == window ? Path::kBlockSmem : Path::kBlockOnline;
      sized.smem = static_cast<size_t>(sized.cached_packs) * kWide;
      const int active = MaxActiveBlocksPerSm(kernel, info, block, sized.smem);
      if (active == 0) { continue; }
      if (sized.path == Path::kBlockSmem) {
        const bool settled = best.path == Path::kBlockSmem && best.block == 128 && best_active >= 4;
        if (settled || (best.path == Path::kBlockSmem && active * block <= best_threads)) {
          continue;
        }
      } else if (best_active > 0 && best.path == Path::kBlockSmem) {
        continue;  // a whole row cached beats any partial one
      }
      best = sized;
      best_active = active;
      best_threads = active * block;
    }
    plan = best;
    SetGrid(plan, rows, info, best_active, /*persistent=*/false);
  } else if (variant.rfind("rows=", 0) == 0 && plan.path == Path::kWarp) {
    // The planned rung, with each group taking N rows at once (rungs of up to 4 packs a lane).
    const int n = std::stoi(variant.substr(5));
    ForEachWarpShape([&](auto shape) {
      using Shape = decltype(shape);
      if constexpr (kWarpShapeFor<T, Shape> && Shape::packs <= 4) {
        if (Shape::width != plan.width ||
            Shape::packs * PackSize<T>::value != plan.cols_per_thread) {
          return;
        }
        auto plan_rows = [&](auto rows_tag) {
          constexpr int kRows = decltype(rows_tag)::value;
          using Rows = WarpShape<Shape::width, Shape::packs, kPackBytes, kRows>;
          if (kRows != n) { return; }
          if (options.algo == Algorithm::kSoftmax) {
            PlanWarp<T, Algorithm::kSoftmax, Rows>(info, rows, plan.ragged, plan);
          } else {
            PlanWarp<T, Algorithm::kLogSoftmax, Rows>(info, rows, plan.ragged, plan);
          }
        };
        plan_rows(std::integral_constant<int, 1>{});
        plan_rows(std::integral_constant<int, 2>{});
        plan_rows(std::integral_constant<int, 4>{});
      }
    });
  } else if (variant == "one=off" && plan.path == Path::kWarp && plan.one_row) {
    // The one-row warp plan's rung by its kernel with the row loop (PlanWarpOneRow undone).
    const int packs = plan.cols_per_thread / PackSize<T>::value;
    auto replan = [&](auto width_tag, auto packs_tag) {
      constexpr int kWidth = decltype(width_tag)::value;
      constexpr int kPacks = decltype(packs_tag)::value;
      using Shape = WarpShape<kWidth, kPacks, kPackBytes, 1>;
      if (kWidth != plan.width || kPacks != packs) { return; }
      if (options.algo == Algorithm::kSoftmax) {
        PlanWarp<T, Algorithm::kSoftmax, Shape>(info, rows, false, plan, ReadAheadChoice::kOff);
      } else {
        PlanWarp<T, Algorithm::kLogSoftmax, Shape>(info, rows, false, plan, ReadAheadChoice::kOff);
      }
    };
    ForEachWarpOneRowShape(replan);
  } else if (variant.rfind("one=", 0) == 0 && variant != "one=off") {
    // The library's one-row warp kernel (kOneRow) on rows of exactly W x N 16-byte packs from
    // a 16-byte boundary (W = 32, or 16 with /16), for any dtype and shape of
    // kWarpOneRowShapes, whether the planner takes them or not.
    const int packs = std::stoi(variant.substr(4));
    const int width = variant.find("/16") != std::string::npos ? 16 : kWarpSize;
    bool found = false;
    auto replan = [&](auto width_tag, auto packs_tag) {
      constexpr int kWidth = decltype(width_tag)::value;
      constexpr int kPacks = decltype(packs_tag)::value;
      if (kWidth != width || kPacks != packs ||
          cols != int64_t{kWidth} * kPacks * PackSize<T>::value) {
        return;
      }
      found = true;
      if (options.algo == Algorithm::kSoftmax) {
        PlanWarpOneRowRung<T, Algorithm::kSoftmax, kWidth, kPacks>(info, rows, plan);
      } else {
        PlanWarpOneRowRung<T, Algorithm::kLogSoftmax, kWidth, kPacks>(info, rows, plan);
      }
    };
    ForEachWarpOneRowShape(replan);
    if (!found) {
      std::fprintf(stderr, "softmax_lab: %s takes rows of W x N 16-byte packs\n", variant.c_str());
      std::exit(2);
    }
  } else if (variant.rfind("warp=", 0) == 0) {
    int width = 0, packs = 0, bytes = kPackBytes;
    if (std::sscanf(variant.c_str(), "warp=%dx%dx%d", &width, &packs, &bytes) < 2) {
      std::fprintf(stderr, "softmax_lab: bad variant %s\n", variant.c_str());
      std::exit(2);
    }
    bool found = false;
    ForEachLabWarpShape([&](auto shape) {
      using Shape = decltype(shape);
      constexpr int P = PackSize<T, Shape::bytes>::value;
      // Any rung within the largest budget a dtype has (bfloat16's), not only this dtype's.
      // (No rung of packs narrower than the dtype: double's 4-byte ones have no elements.)
      if constexpr (P > 0 &&
                    Shape::packs * P * sizeof(ComputeType<T>) <= kWarpLaneBytes<__nv_bfloat16>) {
        if (Shape::width != width || Shape::packs != packs || Shape::bytes != bytes) { return; }
        if (int64_t{Shape::width} * Shape::packs < cols / P) { return; }  // too short a rung
        found = true;
        // Rows are ragged unless each starts on a B-byte boundary and holds whole packs (x
        // itself is cudaMalloc-aligned).
        const bool ragged = cols % P != 0;
        if (options.algo == Algorithm::kSoftmax) {
          PlanWarp<T, Algorithm::kSoftmax, Shape>(info, rows, ragged, plan);
        } else {
          PlanWarp<T, Algorithm::kLogSoftmax, Shape>(info, rows, ragged, plan);
        }
      }
    });
    if (!found) { SkipVariant(variant, cols, plan); }
  } else if (variant.rfind("tile=", 0) == 0) {
    int width = 0, words = 0, tiles = 1, min_blocks = 0;
    if (std::sscanf(variant.c_str(), "tile=%dx%dx%dx%d", &width, &words, &tiles, &min_blocks) < 2) {
      std::fprintf(stderr, "softmax_lab: bad variant %s\n", variant.c_str());
      std::exit(2);
    }
    bool found = false;
    if constexpr (!std::is_same_v<T, double>) {
      constexpr int kPerWord = PackSize<T, 4>::value;
      ForEachLabTileShape([&](auto shape) {
        using Shape = decltype(shape);
        // The kernel needs rows of whole words and tiles of whole 16-byte packs.
        const int64_t row_words = cols / kPerWord;
        if (Shape::width != width || Shape::words != words || Shape::tiles != tiles ||
            Shape::min_blocks != min_blocks || cols % kPerWord != 0 ||
            int64_t{Shape::width} * Shape::words < row_words ||
            kTileRows<Shape::width> * row_words % 4 != 0) {
          return;
        }
        found = true;
        if (options.algo == Algorithm::kSoftmax) {
          PlanTile<T, Algorithm::kSoftmax, Shape>(info, rows, cols, plan);
        } else {
          PlanTile<T, Algorithm::kLogSoftmax, Shape>(info, rows, cols, plan);
        }
      });
    }
    if (!found) { SkipVariant(variant, cols, plan); }
  } else if (variant == "path=registers" || variant.rfind("registers=", 0) == 0 ||
             variant.rfind("tail=", 0) == 0) {
    // block_registers: the default shape, or B threads of N packs each (registers=BxN), or B
    // threads of N register packs and the rest of the row in shared memory (tail=BxN).
    const bool tail = variant.rfind("tail=", 0) == 0;
    int block = 0, packs = 0;
    if (variant != "path=registers") {
      const std::string shape = variant.substr(variant.find('=') + 1);
      block = std::stoi(shape.substr(0, shape.find('x')));
      packs = std::stoi(shape.substr(shape.find('x') + 1));
    }
    auto ends_with = [&](const std::string& suffix) {
      return variant.size() > suffix.size() &&
             variant.compare(variant.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    const RowsKernel rows_kernel = ends_with("/whole") ? RowsKernel::kWhole
                                   : ends_with("/one") ? RowsKernel::kOneRow
                                                       : RowsKernel::kPlanned;
    auto plan_for = [&](auto algo_tag, Plan& regs) {
      constexpr Algorithm kAlgorithm = decltype(algo_tag)::value;
      return tail ? PlanRegistersTail<T, kAlgorithm>(info, rows, cols, true, block, packs, regs)
                  : PlanBlockRegisters<T, kAlgorithm>(info, rows, cols, true, block, packs, regs,
                                                      rows_kernel);
    };
    Plan regs = plan;
    const bool ok =
        options.algo == Algorithm::kSoftmax
            ? plan_for(std::integral_constant<Algorithm, Algorithm::kSoftmax>{}, regs)
            : plan_for(std::integral_constant<Algorithm, Algorithm::kLogSoftmax>{}, regs);
    if (ok) {
      plan = regs;
    } else if (variant != "path=registers") {
      SkipVariant(variant, cols, plan);
    }
  } else if ((variant == "ragged=on" || variant == "ragged=off") &&
             plan.path == Path::kBlockRegisters && plan.smem == 0) {
    // The same block_registers shape, by its kernel for rows of any alignment (on) or for rows
    // of whole packs (off).
    constexpr int P = PackSize<T>::value;
    const RowsKernel kernel = variant == "ragged=on" ? RowsKernel::kRagged : RowsKernel::kWhole;
    Plan regs = plan;
    const bool ok =
        options.algo == Algorithm::kSoftmax
            ? PlanBlockRegisters<T, Algorithm::kSoftmax>(info, rows, cols, true, plan.block,
                                                         plan.cols_per_thread / P, regs, kernel)
            : PlanBlockRegisters<T, Algorithm::kLogSoftmax>(info, rows, cols, true, plan.block,
                                                            plan.cols_per_thread / P, regs, kernel);
    if (ok) { plan = regs; }
  } else if (variant == "ahead=off" || variant == "ahead=on") {
    const ReadAheadChoice choice =
        variant == "ahead=on" ? ReadAheadChoice::kOn : ReadAheadChoice::kOff;
    if (!PlanReadAhead<T>(options, info, rows, cols, choice, plan) ||
        plan.read_ahead != (choice == ReadAheadChoice::kOn)) {
      SkipVariant(variant, cols, plan);
    }
  } else if (variant.rfind("wocc=", 0) == 0) {
    // The planned warp rung held to N blocks an SM in a carve-out of C KiB (as occ=NxC).
    const void* kernel = plan.path == Path::kWarp ? WarpKernel<T>(options, plan) : nullptr;
    int blocks = 0, carve_kib = 0;
    const bool parsed = std::sscanf(variant.c_str(), "wocc=%dx%d", &blocks, &carve_kib) == 2;
    const size_t smem = kernel == nullptr || !parsed
                            ? 0
                            : LabHoldSmem(kernel, info, kWarpBlockSize, blocks, carve_kib);
    if (smem == 0) {
      SkipVariant(variant, cols, plan);
    } else {
      plan.smem = smem;
      plan.active_per_sm = blocks;  // LabHoldSmem answers only when the calculator agrees
      cudaFuncAttributes attributes{};
      LAB_CHECK(cudaFuncGetAttributes(&attributes, kernel));
      std::fprintf(stderr, "softmax_lab: %s at %lld columns: %d registers, %d blocks an SM\n",
                   variant.c_str(), static_cast<long long>(cols), attributes.numRegs,
                   plan.active_per_sm);
    }
  } else if (variant.rfind("occ=", 0) == 0 || variant == "hold=off") {
    // block_registers held to N blocks an SM by shared memory, as the planner holds float 512 x
    // 4 (HoldFloat512x4), or the planner's hold undone (either kind).
    const bool was_max_l1 = plan.max_l1;
    UnholdMaxL1<T>(options, info, rows, cols, plan);
    const void* kernel = RegistersKernel<T>(options, plan, cols);
    const size_t x_at = variant.find('x');
    size_t smem = 0;
    if (kernel != nullptr && variant != "hold=off") {
      const int blocks = std::stoi(variant.substr(4));
      smem = x_at == std::string::npos ? HoldBlocksPerSmSmem(kernel, info, plan.block, blocks)
                                       : LabHoldSmem(kernel, info, plan.block, blocks,
                                                     std::stoi(variant.substr(x_at + 1)));
    }
    if (kernel == nullptr || (variant != "hold=off" && smem == 0) ||
        (variant == "hold=off" && plan.held_per_sm == 0 && !was_max_l1)) {
      SkipVariant(variant, cols, plan);
    } else {
      plan.smem = smem;
      plan.held_per_sm = smem > 0 ? std::stoi(variant.substr(4)) : 0;
      plan.active_per_sm = MaxActiveBlocksPerSm(kernel, info, plan.block, smem);
      cudaFuncAttributes attributes{};
      LAB_CHECK(cudaFuncGetAttributes(&attributes, kernel));
      std::fprintf(stderr, "softmax_lab: %s at %lld columns: %d registers, %d blocks an SM\n",
                   variant.c_str(), static_cast<long long>(cols), attributes.numRegs,
                   plan.active_per_sm);
    }
  } else if (variant == "shared=off") {
    // The planner's largest carve-out (PreferMaxShared) undone: the default copy of the kernel.
    if (!plan.max_shared) {
      SkipVariant(variant, cols, plan);
    } else {
      plan.max_shared = false;
    }
  } else if (variant.rfind("carve=", 0) == 0) {
    // The plan as it is, its block_registers kernel (the default copy) preferring a carve-out of
    // P percent (-1: no preference); the preference stays with the kernel for the variants after
    // this one.
    UnholdMaxL1<T>(options, info, rows, cols, plan);
    plan.max_shared = false;
    const void* kernel = RegistersKernel<T>(options, plan, cols);
    if (kernel == nullptr) {
      SkipVariant(variant, cols, plan);
    } else {
      const int percent = std::stoi(variant.substr(6));
      LAB_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, percent));
      int active = 0;
      LAB_CHECK(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&active, kernel, plan.block, plan.smem));
      std::fprintf(stderr, "softmax_lab: %s at %lld columns: %d blocks an SM (smem %zu)\n",
                   variant.c_str(), static_cast<long long>(cols), active, plan.smem);
    }
  } else if (variant.rfind("online=", 0) == 0 && plan.path != Path::kWarp) {
    // block_online with N blocks per SM, each caching 1/N of the SM's shared memory.
    const int n = std::stoi(variant.substr(7));
    const size_t smem = (static_cast<size_t>(info.max_shared_memory_per_sm) / n - 2048) / 16 * 16;
    plan.block = n == 2 ? 512 : 256;
    const void* kernel = UseBlockKernel<T>(options, info, plan);
    plan.active_per_sm = MaxActiveBlocksPerSm(kernel, info, plan.block, smem);
    plan.path = Path::kBlockOnline;
    plan.smem = smem;
    plan.cached_packs = static_cast<int>(smem / kPackBytes);
    plan.persistent = true;
    plan.grid = static_cast<int>(std::min<int64_t>(rows, ResidentBlocks(info, plan.active_per_sm)));
  }
  // The first wave's stagger: the planner's rule for the plan above, or the variant's.
  StaggerFirstWave<T>(info, cols, plan);
  if (variant == "stagger=off") {
    plan.stagger = Stagger{};
  } else if (variant.rfind("stagger=", 0) == 0 && IsBlockPath(plan.path)) {
    plan.stagger.blocks = FirstWaveBlocks(info, plan);
    plan.stagger.cycles = static_cast<int>(std::stod(variant.substr(8)) * info.clock_khz / 1000);
  }
  return plan;
}

// The variant triton's kernel: one program (block) per row, `threads` threads, `smem` bytes of
// dynamic shared memory, and `params` parameters: (y, x, x's row stride, y's row stride, cols),
// then pointers Triton adds for its own scratch space, passed as null (it asks for none).
struct TritonKernel {
  cudaKernel_t kernel = nullptr;
  int threads = 0;
  int smem = 0;
  int params = 0;
};

// Loads DIR/<dtype>_<cols>.cubin and its .txt ("threads smem params"), as
// tools/triton_cubins.py writes them; exits if they are missing.
TritonKernel LoadTriton(const std::string& dir, const char* dtype, int64_t cols) {
  const std::string stem = dir + "/" + dtype + "_" + std::to_string(cols);
  std::ifstream meta(stem + ".txt");
  std::ifstream cubin(stem + ".cubin", std::ios::binary);
  TritonKernel triton;
  if (!(meta >> triton.threads >> triton.smem >> triton.params) || !cubin) {
    std::fprintf(stderr, "no Triton kernel at %s.{cubin,txt}: run tools/triton_cubins.py\n",
                 stem.c_str());
    std::exit(2);
  }
  const std::vector<char> image((std::istreambuf_iterator<char>(cubin)),
                                std::istreambuf_iterator<char>());
  cudaLibrary_t library;
  LAB_CHECK(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  LAB_CHECK(cudaLibraryGetKernel(&triton.kernel, library, "row_softmax"));
  return triton;
}

template <typename T>
void LaunchTriton(const TritonKernel& triton, cudaStream_t stream, int64_t rows, int64_t cols,
                  const T* x, T* y) {
  int stride = static_cast<int>(cols), n_cols = static_cast<int>(cols);
  void* none = nullptr;
  std::vector<void*> args = {&y, &x, &stride, &stride, &n_cols};
  while (static_cast<int>(args.size()) < triton.params) { args.push_back(&none); }
  LAB_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(triton.kernel),
                             dim3(static_cast<unsigned>(rows)), dim3(triton.threads), args.data(),
                             triton.smem, stream));
}

// The variant pair=N's kernel (lab only): N rows a block of N * kRowThreads threads, kPacks
// 16-byte packs a thread (packs tid + k * kRowThreads), rows of exactly kRowThreads * kPacks
// whole packs (aligned). Each row's threads reduce behind their own named barrier (bar.sync id,
// kRowThreads), so the N rows of a block proceed independently; the block retires when all N
// have.
//
// kTriton (softmax, one row a block): 0, the library's instructions; bit 1, Triton's arithmetic
// (ex2.approx.f32 without ftz, and div.full.f32 an element instead of one reciprocal); bit 2,
// Triton's memory and barrier instructions (plain ld.global.v4, bar.sync 0 with no count).
// kTriton's higher bits (one row a block, softmax, alone) add block_registers' machinery to it one
// piece at a time: bit 4 (o), its row loop (`for row = blockIdx.x; row < rows; row += gridDim.x`,
// taken once, as the grid is the rows); bit 8 (r), the columns at run time (rows `cols` apart,
// packs past cols / P loaded as -inf and not stored); bit 16 (f), the store's run-time test of
// y's alignment with an element-by-element fallback (y_vector_ok, always true here).
template <typename T, Algorithm kAlgorithm, int kRowThreads, int kRowsPerBlock, int kTriton = 0,
          int kPacks = 1>
__global__ void __launch_bounds__(kRowThreads* kRowsPerBlock)
    PairRowsKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int run_cols,
                   bool y_vector_ok) {
  static_assert(kTriton == 0 || (kRowsPerBlock == 1 && kAlgorithm == Algorithm::kSoftmax));
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int kWarps = kRowThreads / kWarpSize;
  constexpr bool kLoop = (kTriton & 4) != 0;
  constexpr bool kRunCols = (kTriton & 8) != 0;
  constexpr bool kFallback = (kTriton & 16) != 0;
  const int cols = kRunCols ? run_cols : kRowThreads * P * kPacks;
  const int window = cols / P;
  __shared__ C posts[kRowsPerBlock][2][kWarps];
  const int group = threadIdx.x / kRowThreads;
  const int tid = threadIdx.x % kRowThreads;
  const int64_t first_row = blockIdx.x * int64_t{kRowsPerBlock} + group;
  for (int64_t row = first_row; row < rows; row += kLoop ? gridDim.x : rows) {
    Pack<T> packs[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const T* at = x + row * cols + (tid + k * kRowThreads) * P;
      if constexpr (kRunCols) {
        packs[k] = tid + k * kRowThreads < window ? *reinterpret_cast<const Pack<T>*>(at)
                                                  : NegativeInfinityPack<T>();
      } else if constexpr ((kTriton & 2) != 0) {
        uint4 w;
        asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
                     : "l"(at));
        memcpy(&packs[k], &w, sizeof(w));
      } else {
        packs[k] = LoadPackOrNegativeInfinity(at, true);
      }
    }
    C v[kPacks * P];
    const C m = WidenWithMax<T, kPacks>(packs, v);
    const int lane = threadIdx.x % kWarpSize;
    const int warp = tid / kWarpSize;
    auto reduce = [&](C value, C* slots, auto op) {
      value = GroupAllReduce<kWarpSize>(value, op);
      if (lane == 0) { slots[warp] = value; }
      // Immediate barrier ids 0 to kRowsPerBlock - 1: with the id in a register ptxas reserves all
      // 16 of the block's barriers, which held the SM to half the blocks (0.54x copy at half 1024).
      if constexpr ((kTriton & 2) != 0) {
        asm volatile("bar.sync 0;" ::: "memory");
      } else if (group == 0) {
        asm volatile("bar.sync 0, %0;" ::"n"(kRowThreads) : "memory");
      } else if constexpr (kRowsPerBlock > 1) {
        if (group == 1) {
          asm volatile("bar.sync 1, %0;" ::"n"(kRowThreads) : "memory");
        } else if constexpr (kRowsPerBlock > 2) {
          if (group == 2) {
            asm volatile("bar.sync 2, %0;" ::"n"(kRowThreads) : "memory");
          } else {
            asm volatile("bar.sync 3, %0;" ::"n"(kRowThreads) : "memory");
          }
        }
      }
      return GroupAllReduce<kWarps>(slots[lane % kWarps], op);
    };
    const C row_max = reduce(m, posts[group][0], MaxOp<C>());
    C out[kPacks * P];
    if constexpr ((kTriton & 1) != 0) {
      float sum = 0;
#pragma unroll
      for (int j = 0; j < kPacks * P; ++j) {
        asm("ex2.approx.f32 %0, %1;" : "=f"(v[j]) : "f"((v[j] - row_max) * 1.4426950408889634f));
        sum += v[j];
      }
      const float total = reduce(sum, posts[group][1], SumOp<C>());
#pragma unroll
      for (int j = 0; j < kPacks * P; ++j) {
        asm("div.full.f32 %0, %1, %2;" : "=f"(out[j]) : "f"(v[j]), "f"(total));
      }
    } else {
      C sum = 0;
#pragma unroll
      for (int j = 0; j < kPacks * P; ++j) { Shift<T, kAlgorithm>(v[j], row_max, sum); }
      const ShiftedOutput<T, kAlgorithm> output(reduce(sum, posts[group][1], SumOp<C>()));
#pragma unroll
      for (int j = 0; j < kPacks * P; ++j) { out[j] = output(v[j]); }
    }
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      const int c0 = (tid + k * kRowThreads) * P;
      if (kRunCols && c0 >= cols) { continue; }
      T* at = y + row * cols + c0;
      if (!kFallback || y_vector_ok) {
        *reinterpret_cast<Pack<T>*>(at) = MakePack<T>(out + k * P);
      } else {
#pragma unroll
        for (int j = 0; j < P; ++j) {
          if (c0 + j < cols) { at[j] = FromCompute<T>(out[k * P + j]); }
        }
      }
    }
  }
}

// Calls fn(std::integral_constant<int, i>) for the run-time i in [0, N).
template <typename Fn, int... kIs>
void WithIndexOf(int i, Fn&& fn, std::integer_sequence<int, kIs...>) {
  ((i == kIs ? (fn(std::integral_constant<int, kIs>{}), 0) : 0), ...);
}
template <int N, typename Fn>
void WithIndex(int i, Fn&& fn) {
  WithIndexOf(i, fn, std::make_integer_sequence<int, N>{});
}

template <typename T, int kRowsPerBlock, int kPacks = 1>
void LaunchPairRows(Algorithm algo, cudaStream_t stream, int64_t rows, const T* x, T* y,
                    int triton_bits = 0) {
  constexpr int kRowThreads = 128;
  constexpr int kCols = kRowThreads * kPacks * PackSize<T>::value;
  const dim3 grid(static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock));
  auto launch = [&](auto kernel) {
    kernel<<<grid, kRowThreads * kRowsPerBlock, 0, stream>>>(x, y, rows, kCols, true);
  };
  if constexpr (kRowsPerBlock == 1 && std::is_same_v<ComputeType<T>, float>) {
    if (triton_bits != 0 && algo == Algorithm::kSoftmax) {
      // Triton's arithmetic and instructions (bits 1 and 2), or block_registers' pieces (4 to
      // 16), not both.
      bool known = false;
      WithIndex<32>(triton_bits, [&](auto bits_tag) {
        constexpr int kBits = decltype(bits_tag)::value;
        if constexpr (kBits != 0 && (kBits < 4 || (kBits & 3) == 0)) {
          launch(PairRowsKernel<T, Algorithm::kSoftmax, kRowThreads, 1, kBits, kPacks>);
          known = true;
        }
      });
      if (!known) { std::fprintf(stderr, "softmax_lab: pair bits %d not built\n", triton_bits); }
      LAB_CHECK(cudaGetLastError());
      return;
    }
  }
  if (algo == Algorithm::kSoftmax) {
    launch(PairRowsKernel<T, Algorithm::kSoftmax, kRowThreads, kRowsPerBlock, 0, kPacks>);
  } else {
    launch(PairRowsKernel<T, Algorithm::kLogSoftmax, kRowThreads, kRowsPerBlock, 0, kPacks>);
  }
  LAB_CHECK(cudaGetLastError());
}

// The variant warprow=NxB's kernel (lab only): one row a warp, the warp path's launch shape (4
// warps a block of 128 threads, the grid the rows / 4) with nothing else: no row loop, the
// columns a constant (32 * N packs of B bytes, aligned rows), no test of y's alignment and no
// edge columns. Lane l holds packs l + 32 k, so with 4-byte packs (warprow=8x4 at float 256) it
// holds elements l + 32 k, the layout of one scalar load a lane. kPlainLoads (suffix p): plain
// ld.global rather than ld.global.nc. kWidth = 16 (suffix /16): 16 lanes a row and two rows a
// warp, the grid the rows / 8; a group past the last row reads the last row again, so that
// every lane reaches every shuffle, and stores nothing.
template <typename T, Algorithm kAlgorithm, int kPacks, int kBytes, bool kPlainLoads,
          int kWidth = kWarpSize>
__global__ void __launch_bounds__(kWarpBlockSize)
    WarpRowKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows) {
  using C = ComputeType<T>;
  using RowPack = Pack<T, kBytes>;
  constexpr int P = PackSize<T, kBytes>::value;
  constexpr int kCols = kWidth * kPacks * P;
  constexpr int kGroups = kWarpSize / kWidth;
  const int lane = threadIdx.x % kWidth;
  const int64_t warp =
      static_cast<int64_t>(blockIdx.x) * (kWarpBlockSize / kWarpSize) + threadIdx.x / kWarpSize;
  if (warp * kGroups >= rows) { return; }  // the whole warp leaves together
  const int64_t group_row = warp * kGroups + static_cast<int>(threadIdx.x % kWarpSize) / kWidth;
  const bool in_range = kGroups == 1 || group_row < rows;
  const int64_t row = in_range ? group_row : rows - 1;
  const T* x_row = x + row * kCols;
  RowPack packs[kPacks];
#pragma unroll
  for (int n = 0; n < kPacks; ++n) {
    const T* at = x_row + (n * kWidth + lane) * P;
    if constexpr (kPlainLoads) {
      packs[n] = *reinterpret_cast<const RowPack*>(at);
    } else {
      packs[n] = LoadPackOrNegativeInfinity<T, kBytes>(at, true);
    }
  }
  C v[kPacks * P];
#pragma unroll
  for (int i = 0; i < kPacks * P; ++i) { v[i] = ToCompute(packs[i / P].elem[i % P]); }
  const C row_max =
      GroupAllReduce<kWidth>(PackMax<T, kBytes, kPacks>(packs), [](C a, C b) { return Max(a, b); });
  C sum = 0;
#pragma unroll
  for (int i = 0; i < kPacks * P; ++i) { Shift<T, kAlgorithm>(v[i], row_max, sum); }
  const ShiftedOutput<T, kAlgorithm> output(
      GroupAllReduce<kWidth>(sum, [](C a, C b) { return a + b; }));
  if (!in_range) { return; }
  T* y_row = y + row * kCols;
#pragma unroll
  for (int n = 0; n < kPacks; ++n) {
    C out[P];
#pragma unroll
    for (int j = 0; j < P; ++j) { out[j] = output(v[n * P + j]); }
    StorePack(y_row + (n * kWidth + lane) * P, MakePack<T, kBytes>(out));
  }
}

// Launches warprow=NxB[p][/W] on the first `rows` rows of `cols` columns; false where the lab
// has no such kernel for T or the columns are not W * N packs.
template <typename T>
bool LaunchWarpRow(int packs, int bytes, bool plain, int width, Algorithm algo, cudaStream_t stream,
                   int64_t rows, int64_t cols, const T* x, T* y) {
  bool launched = false;
  auto try_shape = [&](auto packs_tag, auto bytes_tag, auto width_tag) {
    constexpr int kPacks = decltype(packs_tag)::value;
    constexpr int kBytes = decltype(bytes_tag)::value;
    constexpr int kWidth = decltype(width_tag)::value;
    constexpr int P = PackSize<T, kBytes>::value;
    if constexpr (P > 0) {
      if (kPacks != packs || kBytes != bytes || kWidth != width ||
          cols != int64_t{kWidth} * kPacks * P) {
        return;
      }
      launched = true;
      if (rows == 0) { return; }  // a check only
      constexpr int64_t kRowsPerBlock = kWarpBlockSize / kWidth;
      const dim3 grid(static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock));
      auto launch = [&](auto kernel) { kernel<<<grid, kWarpBlockSize, 0, stream>>>(x, y, rows); };
      if (algo == Algorithm::kSoftmax) {
        plain ? launch(WarpRowKernel<T, Algorithm::kSoftmax, kPacks, kBytes, true, kWidth>)
              : launch(WarpRowKernel<T, Algorithm::kSoftmax, kPacks, kBytes, false, kWidth>);
      } else {
        plain ? launch(WarpRowKernel<T, Algorithm::kLogSoftmax, kPacks, kBytes, true, kWidth>)
              : launch(WarpRowKernel<T, Algorithm::kLogSoftmax, kPacks, kBytes, false, kWidth>);
      }
      LAB_CHECK(cudaGetLastError());
    }
  };
  using I1 = std::integral_constant<int, 1>;
  using I2 = std::integral_constant<int, 2>;
  using I4 = std::integral_constant<int, 4>;
  using I8 = std::integral_constant<int, 8>;
  using I16 = std::integral_constant<int, 16>;
  using I32 = std::integral_constant<int, kWarpSize>;
  try_shape(I1{}, I16{}, I32{});
  try_shape(I2{}, I16{}, I32{});
  try_shape(std::integral_constant<int, 3>{}, I16{}, I32{});
  try_shape(I4{}, I16{}, I32{});
  try_shape(I4{}, I4{}, I32{});
  try_shape(I8{}, I4{}, I32{});
  try_shape(I2{}, I8{}, I32{});
  try_shape(I4{}, I8{}, I32{});
  try_shape(I1{}, I16{}, I16{});  // 16 lanes a row
  try_shape(I2{}, I16{}, I16{});
  return launched;
}

// The variant bulk=MODE's kernel (lab only, sm_90): one row a block of kThreads threads of up to
// kPacks 16-byte packs each, rows of whole packs (aligned, cols a multiple of P, at most
// kThreads * kPacks packs), moved by the bulk copy engine (TMA's non-tensor copies) instead of
// the threads' own loads and stores. kMode bit 1: the row comes into shared memory by one
// cp.async.bulk, waited on through an mbarrier (else each thread loads its packs); bit 2: the
// outputs go to shared memory and out by one cp.async.bulk store (else each thread stores its
// packs); bit 4: no arithmetic, the row is copied as it is (a bulk copy, to compare with
// cudaMemcpy).
template <typename T, Algorithm kAlgorithm, int kThreads, int kPacks, int kMode>
__global__ void __launch_bounds__(kThreads)
    BulkRowKernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int kWarps = kThreads / kWarpSize;
  constexpr bool kBulkLoad = (kMode & 1) != 0, kBulkStore = (kMode & 2) != 0;
  constexpr bool kCopyOnly = (kMode & 4) != 0;
  __shared__ alignas(128) Pack<T> staged[kThreads * kPacks];
  __shared__ alignas(8) uint64_t arrived;
  __shared__ C posts[2][kWarps];
  const int window = cols / P;
  const unsigned bytes = static_cast<unsigned>(cols) * sizeof(T);
  const T* from = x + blockIdx.x * int64_t{cols};
  T* to = y + blockIdx.x * int64_t{cols};
  const unsigned staged_at = static_cast<unsigned>(__cvta_generic_to_shared(staged));
  const unsigned arrived_at = static_cast<unsigned>(__cvta_generic_to_shared(&arrived));
  if constexpr (kBulkLoad) {
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(arrived_at) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(arrived_at),
                   "r"(bytes)
                   : "memory");
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];" ::"r"(staged_at),
          "l"(from), "r"(bytes), "r"(arrived_at)
          : "memory");
    }
    __syncthreads();  // the mbarrier's initialization, before anyone waits on it
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
        "@!done bra WAIT;\n"
        "}\n" ::"r"(arrived_at)
        : "memory");
  }
  Pack<T> packs[kPacks];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const int at = threadIdx.x + k * kThreads;
    if constexpr (kBulkLoad) {
      packs[k] = at < window ? staged[at] : NegativeInfinityPack<T>();
    } else {
      packs[k] = LoadPackOrNegativeInfinity(from + at * P, at < window);
    }
  }
  if constexpr (!kCopyOnly) {
    C v[kPacks][P];
    C m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < P; ++j) {
        v[k][j] = ToCompute(packs[k].elem[j]);
        m = Max(m, v[k][j]);
      }
    }
    const C row_max = BlockAllReduce<kThreads>(m, posts[0], MaxOp<C>());
    C sum = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
      for (int j = 0; j < P; ++j) { Shift<T, kAlgorithm>(v[k][j], row_max, sum); }
    }
    const ShiftedOutput<T, kAlgorithm> output(BlockAllReduce<kThreads>(sum, posts[1], SumOp<C>()));
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
      C out[P];
#pragma unroll
      for (int j = 0; j < P; ++j) { out[j] = output(v[k][j]); }
      packs[k] = MakePack<T>(out);
    }
  }
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const int at = threadIdx.x + k * kThreads;
    if (at >= window) { continue; }
    if constexpr (kBulkStore) {
      staged[at] = packs[k];
    } else {
      *reinterpret_cast<Pack<T>*>(to + at * P) = packs[k];
    }
  }
  if constexpr (kBulkStore) {
    // The threads' shared-memory writes, made visible to the copy engine's proxy, then one store.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(to),
                   "r"(staged_at), "r"(bytes)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      // The block's shared memory must outlive the store's reads of it.
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
  }
}

template <typename T, int kThreads, int kPacks>
void LaunchBulkRows(Algorithm algo, int mode, cudaStream_t stream, int64_t rows, int cols,
                    const T* x, T* y) {
  const dim3 grid(static_cast<unsigned>(rows));
  auto launch = [&](auto mode_constant) {
    constexpr int kMode = decltype(mode_constant)::value;
    if (algo == Algorithm::kSoftmax) {
      BulkRowKernel<T, Algorithm::kSoftmax, kThreads, kPacks, kMode>
          <<<grid, kThreads, 0, stream>>>(x, y, cols);
    } else {
      BulkRowKernel<T, Algorithm::kLogSoftmax, kThreads, kPacks, kMode>
          <<<grid, kThreads, 0, stream>>>(x, y, cols);
    }
  };
  // The modes as template arguments: 0 none, 1 load, 2 store, 3 both, 7 copy (LaunchBulk).
  auto launch_mode = [&](auto... modes) {
    ((mode == decltype(modes)::value ? launch(modes) : void()), ...);
  };
  using std::integral_constant;
  launch_mode(integral_constant<int, 0>(), integral_constant<int, 1>(), integral_constant<int, 2>(),
              integral_constant<int, 3>(), integral_constant<int, 7>());
  LAB_CHECK(cudaGetLastError());
}

// bulk=MODE[/THREADS]: the modes of BulkRowKernel (none, load, store, both, copy) on THREADS
// threads (32, 64, 128, 256 or 512; default 128) of the fewest packs each that hold the row
// (1, 2, 3, 4 or 8 on 128 threads, 1, 2 or 4 on 256, 2 on 512 and on 64, 4 on 32), for rows
// of whole packs. Launches it over the rows, or with rows 0 only says whether the variant takes
// a row of cols.
template <typename T>
bool LaunchBulk(const std::string& variant, Algorithm algo, cudaStream_t stream, int64_t rows,
                int64_t cols, const T* x, T* y) {
  const size_t slash = variant.find('/');
  const std::string mode_name = variant.substr(0, slash);
  const int mode = mode_name == "none"    ? 0
                   : mode_name == "load"  ? 1
                   : mode_name == "store" ? 2
                   : mode_name == "both"  ? 3
                   : mode_name == "copy"  ? 7
                                          : -1;
  const int64_t packs = cols % PackSize<T>::value == 0 ? cols / PackSize<T>::value : 0;
  const int threads = slash == std::string::npos ? 128 : std::stoi(variant.substr(slash + 1));
  bool taken = false;
  auto shape = [&](auto threads_constant, auto packs_constant) {
    constexpr int kThreads = decltype(threads_constant)::value;
    constexpr int kPacks = decltype(packs_constant)::value;
    if (taken || mode < 0 || threads != kThreads || packs == 0 ||
        packs > int64_t{kThreads} * kPacks) {
      return;
    }
    taken = true;
    if (rows > 0) {
      LaunchBulkRows<T, kThreads, kPacks>(algo, mode, stream, rows, static_cast<int>(cols), x, y);
    }
  };
  using std::integral_constant;
  shape(integral_constant<int, 128>(), integral_constant<int, 1>());
  shape(integral_constant<int, 128>(), integral_constant<int, 2>());
  shape(integral_constant<int, 128>(), integral_constant<int, 3>());
  shape(integral_constant<int, 128>(), integral_constant<int, 4>());
  shape(integral_constant<int, 128>(), integral_constant<int, 8>());
  shape(integral_constant<int, 256>(), integral_constant<int, 1>());
  shape(integral_constant<int, 256>(), integral_constant<int, 2>());
  shape(integral_constant<int, 256>(), integral_constant<int, 4>());
  shape(integral_constant<int, 512>(), integral_constant<int, 2>());
  shape(integral_constant<int, 64>(), integral_constant<int, 2>());
  shape(integral_constant<int, 32>(), integral_constant<int, 4>());
  return taken;
}

template <typename T>
void RunDtype(const Options& options, const char* name, const CudaDeviceInfo& info,
              cudaStream_t stream) {
  const L2Flush flush(info);
  for (const int64_t cols : options.cols) {
    const int64_t rows = options.rows > 0 ? options.rows
                         : cols <= 2048   ? 98304
                                          : (int64_t{1} << 27) / cols;
    const int64_t n = rows * cols;
    // Uniform in [-8, 8) from a hash of the index: cheap enough for 100M elements.
    std::vector<T> host_x(n);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t h = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
      h *= 0xBF58476D1CE4E5B9ull;
      h ^= h >> 32;
      host_x[i] = FromFloat<T>((static_cast<float>(h & 0xFFFFFF) / 16777216.f - 0.5f) * 16.f);
    }
    T *x = nullptr, *y_block = nullptr, *copy = nullptr;
    const size_t bytes = n * sizeof(T);
    const int64_t guard = options.y_offset;  // untouched elements on either side of y
    const size_t y_block_bytes = (n + 2 * guard) * sizeof(T);
    LAB_CHECK(cudaMalloc(&x, bytes));
    LAB_CHECK(cudaMalloc(&y_block, y_block_bytes));
    T* const y = y_block + guard;
    LAB_CHECK(cudaMalloc(&copy, bytes));
    LAB_CHECK(cudaMemcpy(x, host_x.data(), bytes, cudaMemcpyHostToDevice));

    const std::function<void()> copy_call = [&] {
      LAB_CHECK(cudaMemcpyAsync(copy, x, bytes, cudaMemcpyDeviceToDevice, stream));
    };
    struct Run {
      std::string variant;
      Plan plan;
      TritonKernel triton;
      std::function<void()> call;
      std::function<void()> warm;  // --warm-code's untimed call: one block, one row
    };
    std::vector<Run> runs;
    for (const std::string& variant : options.variants) {
      const bool triton_variant = variant == "triton" || variant.rfind("triton=", 0) == 0;
      const Plan plan =
          VariantPlan<T>(options,
                         triton_variant || variant.rfind("pair=", 0) == 0 ||
                                 variant.rfind("bulk=", 0) == 0 || variant.rfind("warprow=", 0) == 0
                             ? "default"
                             : variant,
                         info, rows, cols);
      if (plan.launch == nullptr) { continue; }  // a warp=WxN rung that does not fit the row
      const TritonKernel triton = !triton_variant       ? TritonKernel{}
                                  : variant == "triton" ? LoadTriton(options.triton_dir, name, cols)
                                                        : LoadTriton(variant.substr(7), name, cols);
      const int pair = variant.rfind("pair=", 0) == 0 ? std::stoi(variant.substr(5)) : 0;
      // pair=1m, pair=1l, pair=1ml: the one-row kernel with Triton's arithmetic (m), its memory
      // and barrier instructions (l), or both (softmax only).
      // pair=1x2, pair=1x2m, ...: two packs a thread.
      std::string suffix = pair == 1 ? variant.substr(6) : "";
      const int pair_packs = suffix.rfind("x2", 0) == 0 ? 2 : suffix.rfind("x3", 0) == 0 ? 3 : 1;
      if (pair_packs > 1) { suffix = suffix.substr(2); }
      const int triton_bits = (suffix.find('m') != std::string::npos ? 1 : 0) |
                              (suffix.find('l') != std::string::npos ? 2 : 0) |
                              (suffix.find('o') != std::string::npos ? 4 : 0) |
                              (suffix.find('r') != std::string::npos ? 8 : 0) |
                              (suffix.find('f') != std::string::npos ? 16 : 0);
      if (triton_bits != 0 &&
          (options.algo != Algorithm::kSoftmax || !std::is_same_v<ComputeType<T>, float>)) {
        std::fprintf(stderr, "softmax_lab: %s is for softmax in float arithmetic only\n",
                     variant.c_str());
        continue;
      }
      if (pair > 0 && (cols != 128 * pair_packs * PackSize<T>::value ||
                       (pair != 1 && pair != 2 && pair != 4))) {
        std::fprintf(
            stderr,
            "softmax_lab: %s takes rows of 128 packs only (pair=1x2: 256, 1x3: 384), N 1, 2 or 4\n",
            variant.c_str());
        continue;
      }
      const Algorithm algo = options.algo;
      const std::string bulk = variant.rfind("bulk=", 0) == 0 ? variant.substr(5) : "";
      // warprow=NxB[p][/W]: one row a warp (or W lanes), N packs of B bytes a lane (p: plain
      // loads).
      int warprow_packs = 0, warprow_bytes = 0;
      const bool warprow =
          variant.rfind("warprow=", 0) == 0 &&
          std::sscanf(variant.c_str(), "warprow=%dx%d", &warprow_packs, &warprow_bytes) == 2;
      const size_t warprow_slash = variant.find('/');
      const int warprow_width = warprow && warprow_slash != std::string::npos
                                    ? std::atoi(&variant[warprow_slash + 1])
                                    : kWarpSize;
      const bool warprow_plain =
          warprow && variant[std::min(warprow_slash, variant.size()) - 1] == 'p';
      if (variant.rfind("warprow=", 0) == 0 &&
          (!warprow || !LaunchWarpRow<T>(warprow_packs, warprow_bytes, warprow_plain, warprow_width,
                                         options.algo, stream, 0, cols, x, y))) {
        std::fprintf(stderr, "softmax_lab: %s takes rows of W x N packs of B bytes only\n",
                     variant.c_str());
        continue;
      }
      if (!bulk.empty() && !LaunchBulk<T>(bulk, algo, stream, 0, cols, x, y)) {
        std::fprintf(stderr,
                     "softmax_lab: %s takes rows of whole packs that its block holds only\n",
                     variant.c_str());
        continue;
      }
      // Launches the variant on the first n rows: all of them for the timed call, one for
      // --warm-code's (the plan then on one block, not its grid).
      const auto launch = [=, &stream](int64_t n) {
        if (!bulk.empty()) {
          LaunchBulk<T>(bulk, algo, stream, n, cols, x, y);
        } else if (warprow) {
          LaunchWarpRow<T>(warprow_packs, warprow_bytes, warprow_plain, warprow_width, algo, stream,
                           n, cols, x, y);
        } else if (triton_variant) {
          LaunchTriton(triton, stream, n, cols, x, y);
        } else if (pair == 1 && pair_packs == 2) {
          LaunchPairRows<T, 1, 2>(algo, stream, n, x, y, triton_bits);
        } else if (pair == 1 && pair_packs == 3) {
          LaunchPairRows<T, 1, 3>(algo, stream, n, x, y, triton_bits);
        } else if (pair == 1) {
          LaunchPairRows<T, 1>(algo, stream, n, x, y, triton_bits);
        } else if (pair == 2) {
          LaunchPairRows<T, 2>(algo, stream, n, x, y);
        } else if (pair == 4) {
          LaunchPairRows<T, 4>(algo, stream, n, x, y);
        } else if (n == rows) {
          plan.launch(plan, stream, rows, cols, x, y);
        } else {
          Plan one = plan;
          one.grid = 1;
          one.launch(one, stream, n, cols, x, y);
        }
      };
      runs.push_back({variant, plan, triton, [=] { launch(rows); }, [=] { launch(1); }});
    }
    // The copy's time and each run's: round by round (--interleave), or each call's in a row.
    std::vector<float> times;
    if (options.interleave) {
      std::vector<std::function<void()>> calls = {copy_call};
      std::vector<std::function<void()>> warm;
      if (options.warm_code) {
        warm.push_back(
            [&] { LAB_CHECK(cudaMemcpyAsync(copy, x, 16, cudaMemcpyDeviceToDevice, stream)); });
      }
      for (const Run& run : runs) {
        calls.push_back(run.call);
        if (options.warm_code) { warm.push_back(run.warm); }
      }
      times = InterleavedMedianMs(stream, flush, options.reps, calls, options.drain, warm);
    } else {
      times.push_back(MedianMs(stream, flush, options.reps, copy_call, options.drain));
      for (const Run& run : runs) {
        times.push_back(MedianMs(stream, flush, options.reps, run.call, options.drain));
      }
    }
    const float copy_ms = times[0];
    for (size_t v = 0; v < runs.size(); ++v) {
      const std::string& variant = runs[v].variant;
      const bool triton_variant = variant == "triton" || variant.rfind("triton=", 0) == 0;
      const Plan& plan = runs[v].plan;
      const TritonKernel& triton = runs[v].triton;
      const float ms = times[v + 1];
      // The checked output is this run's own: y set to NaN (a row the kernel skipped cannot
      // pass), then one more call.
      LAB_CHECK(cudaMemset(y_block, 0xff, y_block_bytes));
      runs[v].call();
      LAB_CHECK(cudaStreamSynchronize(stream));
      LAB_CHECK(cudaGetLastError());

      // Every row, or 64 spread over the tensor (the first and the last included), against
      // float64.
      const int64_t checked = n <= (int64_t{1} << 25) ? rows : 64;
      std::vector<T> host_y(checked == rows ? n : cols);
      double max_error = 0;
      for (int64_t s = 0; s < checked; ++s) {
        const int64_t row = checked == rows ? s : s * (rows - 1) / 63;
        const T* out = host_y.data();
        if (checked == rows) {
          if (s == 0) { LAB_CHECK(cudaMemcpy(host_y.data(), y, bytes, cudaMemcpyDeviceToHost)); }
          out += row * cols;
        } else {
          LAB_CHECK(
              cudaMemcpy(host_y.data(), y + row * cols, cols * sizeof(T), cudaMemcpyDeviceToHost));
        }
        const T* in = host_x.data() + row * cols;
        double max = -INFINITY, sum = 0;
        for (int64_t c = 0; c < cols; ++c) { max = std::max<double>(max, ToFloat(in[c])); }
        for (int64_t c = 0; c < cols; ++c) { sum += std::exp(ToFloat(in[c]) - max); }
        for (int64_t c = 0; c < cols; ++c) {
          const double shifted = ToFloat(in[c]) - max;
          const double want = options.algo == Algorithm::kSoftmax ? std::exp(shifted) / sum
                                                                  : shifted - std::log(sum);
          const double err = std::abs(ToFloat(out[c]) - want) / std::max(1.0, std::abs(want));
          if (!(err <= max_error)) { max_error = err; }  // NaN sticks
        }
      }
      if (guard > 0) {  // a store outside y shows as an infinite error
        std::vector<unsigned char> edge(guard * sizeof(T));
        for (const T* at : {y_block, y + n}) {
          LAB_CHECK(cudaMemcpy(edge.data(), at, edge.size(), cudaMemcpyDeviceToHost));
          for (const unsigned char b : edge) {
            if (b != 0xff) { max_error = INFINITY; }
          }
        }
      }
      const double gbps = 2.0 * bytes / (ms * 1e6), copy_gbps = 2.0 * bytes / (copy_ms * 1e6);
      std::printf("%-8s %-11s %-8s %6lld %6lld  %-90s %7.1f %7.1f %6.3f %.2e\n", name,
                  options.algo == Algorithm::kSoftmax ? "softmax" : "log_softmax", variant.c_str(),
                  static_cast<long long>(cols), static_cast<long long>(rows),
                  triton_variant ? ("triton: threads=" + std::to_string(triton.threads)).c_str()
                  : variant.rfind("bulk=", 0) == 0 ? ("bulk: " + variant.substr(5)).c_str()
                  : variant.rfind("warprow=", 0) == 0
                      ? ("warprow: one row a warp, " + variant.substr(8)).c_str()
                  : variant.rfind("pair=", 0) == 0
                      ? ("pair: " + variant.substr(5) + " rows a block of 128 threads each").c_str()
                      : ToString(plan).c_str(),
                  copy_gbps, gbps, gbps / copy_gbps, max_error);
      std::fflush(stdout);
    }
    LAB_CHECK(cudaFree(x));
    LAB_CHECK(cudaFree(y_block));
    LAB_CHECK(cudaFree(copy));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    // Flags that take several values read on to the next flag.
    auto another_value = [&] { return i + 1 < argc && argv[i + 1][0] != '-'; };
    if (arg == "--dtype") {
      options.dtypes.push_back(value());
    } else if (arg == "--algo") {
      options.algo = value() == "log_softmax" ? Algorithm::kLogSoftmax : Algorithm::kSoftmax;
    } else if (arg == "--variant") {
      options.variants.push_back(value());
      while (another_value()) { options.variants.push_back(argv[++i]); }
    } else if (arg == "--reps") {
      options.reps = std::stoi(value());
    } else if (arg == "--rows") {
      options.rows = std::stoll(value());
    } else if (arg == "--triton") {
      options.triton_dir = value();
    } else if (arg == "--interleave") {
      options.interleave = true;
    } else if (arg == "--drain") {
      options.drain = true;
    } else if (arg == "--warm-code") {
      options.warm_code = true;
    } else if (arg == "--y-offset") {
      options.y_offset = std::stoll(value());
    } else if (arg == "--cols") {
      while (another_value()) { options.cols.push_back(std::stoll(argv[++i])); }
    } else {
      std::fprintf(stderr, "unknown option %s (see the comment at the top of softmax_lab.cu)\n",
                   arg.c_str());
      return 2;
    }
  }
  if (options.dtypes.empty()) { options.dtypes = {"half", "bfloat16", "float"}; }
  if (options.cols.empty()) { options.cols = kSweep; }
  if (options.variants.empty()) { options.variants = {"default"}; }
  const auto& variants = options.variants;
  const bool small_smem = std::find(variants.begin(), variants.end(), "smem=48k") != variants.end();
  const bool has_triton = std::find(variants.begin(), variants.end(), "triton") != variants.end();
  if (has_triton && (options.triton_dir.empty() || options.algo != Algorithm::kSoftmax)) {
    std::fprintf(stderr, "the variant triton needs --triton DIR and --algo softmax\n");
    return 2;
  }
  const bool has_triton_dir = std::any_of(variants.begin(), variants.end(),
                                          [](const auto& v) { return v.rfind("triton=", 0) == 0; });
  if (has_triton_dir && options.algo != Algorithm::kSoftmax) {
    std::fprintf(stderr, "the variant triton=DIR needs --algo softmax\n");
    return 2;
  }
  if (options.warm_code && !options.interleave) {
    std::fprintf(stderr, "--warm-code times round by round: it needs --interleave\n");
    return 2;
  }
  if (small_smem && options.variants.size() > 1) {
    std::fprintf(stderr, "smem=48k changes the whole process's plans: run it alone\n");
    return 2;
  }

  CudaDeviceInfo info = CurrentDeviceInfo();
  if (small_smem) {
    // The planner asks MaxDynamicSmem, which reads the opt-in limit from the device info.
    info.max_shared_memory_per_block_optin = info.max_shared_memory_per_block;
  }
  cudaDeviceProp prop;
  LAB_CHECK(cudaGetDeviceProperties(&prop, info.index));
  std::printf("# %s, %d SMs\n", prop.name, info.sm_count);
  cudaStream_t stream;
  LAB_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const std::string& dtype : options.dtypes) {
#if LAB_HAS(1)
    if (dtype == "half") {
      RunDtype<__half>(options, "half", info, stream);
      continue;
    }
#endif
#if LAB_HAS(2)
    if (dtype == "bfloat16") {
      RunDtype<__nv_bfloat16>(options, "bfloat16", info, stream);
      continue;
    }
#endif
#if LAB_HAS(3)
    if (dtype == "float") {
      RunDtype<float>(options, "float", info, stream);
      continue;
    }
#endif
#if LAB_HAS(4)
    if (dtype == "double") {
      RunDtype<double>(options, "double", info, stream);
      continue;
    }
#endif
    {
      std::fprintf(stderr, "dtype %s is unknown or not in this build\n", dtype.c_str());
      return 2;
    }
  }
  return 0;
}
