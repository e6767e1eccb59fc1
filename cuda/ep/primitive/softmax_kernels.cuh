// The CUDA softmax kernel family behind the "softmax" and "log_softmax" primitives.
//
// A row-wise softmax moves the bytes of a copy (x read once, y written once), so the goal of
// every path is the device's copy bandwidth. Which path runs depends on the row length:
//
//   warp          the row lives in the registers of one warp, or of a smaller group of lanes
//                 for short rows; max and sum are butterfly shuffles. Reads x once.
//   block_smem    one block per row, the row cached in shared memory (up to the opt-in limit,
//                 about 227 KiB on Hopper), copied there asynchronously so the next row's copy
//                 overlaps this row's arithmetic. Reads x once.
//   block_online  one block per row for rows longer than shared memory: as much of the row as
//                 fits is cached, the rest is read twice, the second time usually from L2.
//
// Both block paths are one kernel (BlockSoftmaxKernel). Its first pass keeps a running
// (max, sum) pair per thread (the online normalizer), so a block needs one reduction, not two,
// and never reads x a third time. NOTES.md beside this file explains each choice.
//
// All global accesses are 16-byte packs (4 floats, 8 halves or bfloat16s, 2 doubles). A row need
// not start on a 16-byte boundary (odd cols, or a view with a storage offset), so each row is
// seen through its *window*: the 16-byte-aligned packs that cover it. Packs wholly inside the
// row move as one vector; the (at most two) packs that stick out of the row are read and
// written element by element. Everything outside the row reads as -inf, which never wins the
// max and adds exp(-inf) = 0 to the sum.
//
// One decision function, PlanSoftmax, picks the path and its configuration; Launch runs the
// plan and Describe prints it, so the two can never disagree.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include <algorithm>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <memory>
#include <string>
#include <type_traits>

#include "ep/cuda_stream.h"
#include "oneflite/ep/primitive/softmax.h"

namespace oneflite::ep::primitive::cuda_softmax {

enum class Algorithm { kSoftmax, kLogSoftmax };

// ---- Element types -------------------------------------------------------------------------

// 16-bit types compute in float; double computes in double.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
constexpr bool kIs16Bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

constexpr int kPackBytes = 16;

// Elements per 16-byte pack: 4 floats, 8 halves or bfloat16s, 2 doubles.
template <typename T>
struct PackSize {
  static constexpr int value = kPackBytes / static_cast<int>(sizeof(T));
};

template <typename T>
struct alignas(kPackBytes) Pack {
  T elem[PackSize<T>::value];
};

template <typename T>
__device__ __forceinline__ ComputeType<T> ToCompute(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

// Narrows P computed values into a pack, rounding to nearest even as PyTorch does. 16-bit types
// convert in pairs, one instruction for two elements.
template <typename T>
__device__ __forceinline__ Pack<T> MakePack(const ComputeType<T>* v) {
  constexpr int P = PackSize<T>::value;
  Pack<T> pack;
  if constexpr (std::is_same_v<T, __half>) {
    auto* pairs = reinterpret_cast<__half2*>(pack.elem);
#pragma unroll
    for (int j = 0; j < P / 2; ++j) { pairs[j] = __floats2half2_rn(v[2 * j], v[2 * j + 1]); }
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    auto* pairs = reinterpret_cast<__nv_bfloat162*>(pack.elem);
#pragma unroll
    for (int j = 0; j < P / 2; ++j) { pairs[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]); }
  } else {
#pragma unroll
    for (int j = 0; j < P; ++j) { pack.elem[j] = v[j]; }
  }
  return pack;
}

template <typename T>
__device__ __forceinline__ T NegativeInfinity() {
  if constexpr (std::is_same_v<T, __half>) {
    return __ushort_as_half(0xfc00);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __ushort_as_bfloat16(0xff80);
  } else if constexpr (std::is_same_v<T, double>) {
    return -CUDART_INF;
  } else {
    return -CUDART_INF_F;
  }
}

template <typename T>
__device__ __forceinline__ Pack<T> NegativeInfinityPack() {
  Pack<T> pack;
#pragma unroll
  for (int j = 0; j < PackSize<T>::value; ++j) { pack.elem[j] = NegativeInfinity<T>(); }
  return pack;
}

// fmax ignores a NaN operand, so a NaN never becomes the row max; it still reaches every output
// through the sum, since exp(NaN - max) is NaN. A row of all -inf has max -inf, and
// exp(-inf - -inf) = NaN gives the NaN row PyTorch gives.
template <typename C>
__device__ __forceinline__ C Max(C a, C b) {
  if constexpr (std::is_same_v<C, double>) {
    return fmax(a, b);
  } else {
    return fmaxf(a, b);
  }
}

// The max of a pack's elements. 16-bit packs are reduced in pairs by the packed max
// instructions (which also drop a NaN operand) and widened once.
template <typename T>
__device__ __forceinline__ ComputeType<T> PackMax(const Pack<T>& pack) {
  constexpr int P = PackSize<T>::value;
  if constexpr (kIs16Bit<T>) {
    using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    const auto* pairs = reinterpret_cast<const Pair*>(pack.elem);
    Pair m = pairs[0];
#pragma unroll
    for (int j = 1; j < P / 2; ++j) { m = __hmax2(m, pairs[j]); }
    return Max(ToCompute(m.x), ToCompute(m.y));
  } else {
    ComputeType<T> m = pack.elem[0];
#pragma unroll
    for (int j = 1; j < P; ++j) { m = Max(m, pack.elem[j]); }
    return m;
  }
}

// float and double use the accurate library exp (float: within 2 ulp). The 16-bit types use
// the hardware exp2 (__expf: a multiply and MUFU.EX2, a few ulp for the arguments softmax
// feeds it, x - max <= 0): its error is far below half and bfloat16 rounding, and those types
// move the fewest bytes per element, so their kernels are the ones closest to being bound by
// instruction issue rather than by memory.
template <typename T>
__device__ __forceinline__ ComputeType<T> Exp(ComputeType<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    return exp(v);
  } else if constexpr (std::is_same_v<T, float>) {
    return expf(v);
  } else {
    return __expf(v);
  }
}

template <typename C>
__device__ __forceinline__ C Log(C v) {
  if constexpr (std::is_same_v<C, double>) {
    return log(v);
  } else {
    return logf(v);
  }
}

// ---- Row windows ----------------------------------------------------------------------------

// How many elements the row starting at `row` sits past the 16-byte boundary at or before it.
// The row's window starts there, so window pack k covers row columns [k * P - head, ... + P).
template <typename T>
__device__ __forceinline__ int HeadOffset(const T* row) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(row) % kPackBytes) /
         static_cast<int>(sizeof(T));
}

// Loads the window pack whose first element is row column `c0` (negative for the head pack of
// a row that starts off a 16-byte boundary). Columns outside [0, cols) read as -inf and are
// never touched in memory, so no access strays outside the tensor.
template <typename T, typename Index>
__device__ __forceinline__ Pack<T> LoadPack(const T* row, Index c0, Index cols) {
  constexpr int P = PackSize<T>::value;
  if (c0 >= 0 && c0 + P <= cols) { return *reinterpret_cast<const Pack<T>*>(row + c0); }
  Pack<T> pack;
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const Index c = c0 + j;
    pack.elem[j] = (c >= 0 && c < cols) ? row[c] : NegativeInfinity<T>();
  }
  return pack;
}

// Stores the in-row columns of a window pack one element at a time, reading them back from
// `scratch`, the calling thread's own 16-byte slot of shared memory. Picking elements out of a
// pack in registers would need each element in a register of its own (or local memory), which
// costs every kernel that merely might take this path; this one is taken only by the packs at
// a row's ends, and by every pack when y's alignment differs from x's.
template <typename T, typename Index>
__device__ __forceinline__ void StoreElements(T* row, Index c0, Index cols, const Pack<T>& pack,
                                              Pack<T>* scratch) {
  *scratch = pack;
#pragma unroll 1
  for (int j = 0; j < PackSize<T>::value; ++j) {
    const Index c = c0 + j;
    if (c >= 0 && c < cols) { row[c] = scratch->elem[j]; }
  }
}

// The most window packs any row of a (rows, cols) launch can need. When x is 16-byte aligned
// and cols is a whole number of packs, every row starts on a boundary; otherwise a row may sit
// up to P - 1 elements past one, which can cost one more pack.
template <typename T>
inline int64_t MaxWindowPacks(int64_t cols, bool x_aligned) {
  constexpr int P = PackSize<T>::value;
  if (x_aligned && cols % P == 0) { return cols / P; }
  return (cols + 2 * P - 2) / P;
}

// ---- Path 1: a warp (or a group of lanes) per row --------------------------------------------

constexpr int kWarpSize = 32;
constexpr int kWarpBlockSize = 128;

// Butterfly all-reduce within aligned groups of kWidth lanes: every lane ends with the result.
// All 32 lanes of the warp always take part (rows past the end just carry dummy values).
template <int kWidth, typename C, typename Op>
__device__ __forceinline__ C GroupAllReduce(C v, Op op) {
#pragma unroll
  for (int mask = kWidth / 2; mask > 0; mask /= 2) {
    v = op(v, __shfl_xor_sync(0xffffffffu, v, mask));
  }
  return v;
}

// One rung of the warp ladder: kWidth lanes share a row, each holding kPacks packs of it, and
// each group handles kRows rows at once (more independent loads in flight for short rows).
template <int kWidth, int kPacks, int kRows>
struct WarpShape {
  static constexpr int width = kWidth;
  static constexpr int packs = kPacks;
  static constexpr int rows = kRows;
};

// x, y: (rows, cols) row-major. A warp takes (32 / kWidth) * kRows consecutive rows per step;
// the grid is persistent and strides over those row tiles. The row is cached in registers in
// the compute type, so exp is computed once per element. cols <= 32 * kPacks * P, far below
// 2^31, so in-row positions are int.
template <typename T, Algorithm kAlgorithm, int kWidth, int kPacks, int kRows>
__global__ void __launch_bounds__(kWarpBlockSize)
    WarpSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols,
                      bool y_vector_ok) {
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int kGroups = kWarpSize / kWidth;
  constexpr int kTileRows = kGroups * kRows;
  constexpr int kWarpsPerBlock = kWarpBlockSize / kWarpSize;
  __shared__ Pack<T> scratch[kWarpBlockSize];
  const int lane = threadIdx.x % kWarpSize;
  const int group = lane / kWidth;
  const int lane_in_group = lane % kWidth;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;

  // The loop condition is per warp, not per group, so that every lane reaches every shuffle.
  for (int64_t tile = warp * kTileRows; tile < rows; tile += num_warps * kTileRows) {
    C v[kRows][kPacks * P];
    int head[kRows];
    int row_cols[kRows];  // cols, or 0 for a row past the end: then nothing is read or written
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t row = tile + r * kGroups + group;  // adjacent groups take adjacent rows
      row_cols[r] = row < rows ? cols : 0;
      const T* x_row = x + row * cols;
      head[r] = HeadOffset(x_row);
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int c0 = (n * kWidth + lane_in_group) * P - head[r];
        const Pack<T> pack = LoadPack(x_row, c0, row_cols[r]);
#pragma unroll
        for (int j = 0; j < P; ++j) { v[r][n * P + j] = ToCompute(pack.elem[j]); }
      }
    }

    C row_max[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      C m = v[r][0];
#pragma unroll
      for (int i = 1; i < kPacks * P; ++i) { m = Max(m, v[r][i]); }
      row_max[r] = GroupAllReduce<kWidth>(m, [](C a, C b) { return Max(a, b); });
    }

    C row_sum[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      C s = 0;
#pragma unroll
      for (int i = 0; i < kPacks * P; ++i) {
        if constexpr (kAlgorithm == Algorithm::kSoftmax) {
          v[r][i] = Exp<T>(v[r][i] - row_max[r]);
          s += v[r][i];
        } else {
          v[r][i] -= row_max[r];
          s += Exp<T>(v[r][i]);
        }
      }
      row_sum[r] = GroupAllReduce<kWidth>(s, [](C a, C b) { return a + b; });
    }

#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t row = tile + r * kGroups + group;
      T* y_row = y + row * cols;
      // One division per row; the per-element work is a multiply (within 1 ulp of dividing).
      const C scale = kAlgorithm == Algorithm::kSoftmax ? C(1) / row_sum[r] : Log(row_sum[r]);
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        C out[P];
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const C value = v[r][n * P + j];
          out[j] = kAlgorithm == Algorithm::kSoftmax ? value * scale : value - scale;
        }
        const Pack<T> pack = MakePack<T>(out);
        const int c0 = (n * kWidth + lane_in_group) * P - head[r];
        if (y_vector_ok && c0 >= 0 && c0 + P <= row_cols[r]) {
          *reinterpret_cast<Pack<T>*>(y_row + c0) = pack;
        } else {
          StoreElements(y_row, c0, row_cols[r], pack, &scratch[threadIdx.x]);
        }
      }
    }
  }
}

// ---- Paths 2 and 3: a block per row ----------------------------------------------------------

// The online normalizer's state: the max of the values seen, and the sum of exp(value - max).
template <typename C>
struct MaxSum {
  C max;
  C sum;
};

// While the max is still -inf the sum is kept relative to 0 instead, so a row that starts with
// -inf entries never computes exp(-inf - -inf) = NaN; a finite max arriving later scales that
// sum (zero) by exp(-inf) = 0. A +inf max still gives exp(inf - inf) = NaN, as PyTorch does.
template <typename C>
__device__ __forceinline__ C SafeShift(C max) {
  return max == -static_cast<C>(CUDART_INF) ? C(0) : max;
}

template <typename T>
struct MergeMaxSum {
  using C = ComputeType<T>;
  __device__ __forceinline__ MaxSum<C> operator()(const MaxSum<C>& a, const MaxSum<C>& b) const {
    const C max = Max(a.max, b.max);
    const C shift = SafeShift(max);
    return {max, a.sum * Exp<T>(a.max - shift) + b.sum * Exp<T>(b.max - shift)};
  }
};

// Folds packs [0, count) of `packs` into a thread's (max, sum): one rescale for the batch, then
// one exp per element.
template <typename T, int kCount>
__device__ __forceinline__ void FoldPacks(MaxSum<ComputeType<T>>& stats, const Pack<T>* packs,
                                          int count) {
  using C = ComputeType<T>;
  C max = stats.max;
#pragma unroll
  for (int u = 0; u < kCount; ++u) { max = Max(max, PackMax(packs[u])); }
  const C shift = SafeShift(max);
  C sum = stats.sum * Exp<T>(stats.max - shift);
#pragma unroll
  for (int u = 0; u < kCount; ++u) {
    if (u < count) {
#pragma unroll
      for (int j = 0; j < PackSize<T>::value; ++j) {
        sum += Exp<T>(ToCompute(packs[u].elem[j]) - shift);
      }
    }
  }
  stats = {max, sum};
}

// y for one pack, given the row's max and scale (1 / sum for softmax, log(sum) for log_softmax).
// An all -inf row has max -inf, and x - max = NaN gives the NaN row PyTorch gives.
template <typename T, Algorithm kAlgorithm>
__device__ __forceinline__ Pack<T> OutputPack(const Pack<T>& in, ComputeType<T> max,
                                              ComputeType<T> scale) {
  using C = ComputeType<T>;
  C out[PackSize<T>::value];
#pragma unroll
  for (int j = 0; j < PackSize<T>::value; ++j) {
    const C shifted = ToCompute(in.elem[j]) - max;
    out[j] = kAlgorithm == Algorithm::kSoftmax ? Exp<T>(shifted) * scale : shifted - scale;
  }
  return MakePack<T>(out);
}

// Packs a thread takes per step of the passes below. double's exp needs more temporaries, so it
// takes two at a time to stay within the registers below.
template <typename T>
constexpr int kBlockUnroll = std::is_same_v<T, double> ? 2 : 4;
// At most 64 registers a thread, so that a block of 1024 threads fits on an SM.
constexpr int kBlockMinThreadsPerSm = 1024;

// How many of the window packs t, t + kBlock, t + 2 * kBlock, ... below `window` thread t owns.
template <int kBlock, typename Index>
__device__ __forceinline__ int PacksOwned(Index window, int tid) {
  return tid < window ? static_cast<int>((window - 1 - tid) / kBlock) + 1 : 0;
}

// One block per row, persistent over rows. Thread t owns window packs k = t + i * kBlock. The
// first `cached_packs` packs of a row's window go to dynamic shared memory, pack k at index k of
// the row's stage, by asynchronous copies (cp.async): a thread requests its whole share at once,
// holding no registers while the copies fly, and only ever reads back what it copied itself, so
// neither the copies nor the reads need a barrier, and consecutive threads touch consecutive
// 16-byte words (free of bank conflicts). With `stages` = 2 the block copies its next row into
// the other stage while it works on this one. Packs past `cached_packs` (rows longer than shared
// memory) are read from x in pass 1 and again in pass 2, right after the cached part, while they
// are likely still in L2.
//
// Counters of packs are int: a row that fits in memory has fewer than 2^31 * kBlock packs.
// Positions in the row are int64.
template <typename T, Algorithm kAlgorithm, int kBlock>
__global__ void __launch_bounds__(kBlock, kBlockMinThreadsPerSm / kBlock)
    BlockSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols,
                       int cached_packs, int stages, bool y_vector_ok) {
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int U = kBlockUnroll<T>;
  using BlockReduce = cub::BlockReduce<MaxSum<C>, kBlock>;
  __shared__ typename BlockReduce::TempStorage reduce_storage;
  // The row's (max, sum), double-buffered: thread 0 writes row r + 1's after the barrier that
  // follows every thread's read of row r's.
  __shared__ MaxSum<C> row_stats[2];
  extern __shared__ uint4 shared_cache[];
  const int tid = threadIdx.x;
  Pack<T>* const slots = reinterpret_cast<Pack<T>*>(shared_cache) + tid;
  const int cached = PacksOwned<kBlock>(cached_packs, tid);
  const auto x_begin = reinterpret_cast<uintptr_t>(x);
  const auto x_end = reinterpret_cast<uintptr_t>(x + rows * cols);

  // Starts copying this thread's cached packs of `row` into `stage`. A pack that straddles a
  // row boundary is copied whole (the neighbour's elements are masked later); only the tensor's
  // own first and last 16 bytes need care, as they may lie partly outside it.
  auto prefetch = [&](int64_t row, int stage) {
    const T* x_row = x + row * cols;
    const int head = HeadOffset(x_row);
    const int n = min(PacksOwned<kBlock>((head + cols + P - 1) / P, tid), cached);
    const Pack<T>* src = reinterpret_cast<const Pack<T>*>(x_row - head) + tid;
    Pack<T>* dst = slots + stage * cached_packs;
#pragma unroll 4
    for (int i = 0; i < n; ++i) {
      const auto begin = reinterpret_cast<uintptr_t>(src + static_cast<int64_t>(i) * kBlock);
      if (begin < x_begin) {
        dst[i * kBlock] = LoadPack(x_row, static_cast<int64_t>(-head), cols);  // x's first pack
      } else {
        const size_t past_end = begin + kPackBytes > x_end ? begin + kPackBytes - x_end : 0;
        __pipeline_memcpy_async(dst + i * kBlock, src + static_cast<int64_t>(i) * kBlock,
                                kPackBytes, past_end);
      }
    }
    __pipeline_commit();
  };

  int stage = 0;
  if (blockIdx.x < rows) { prefetch(blockIdx.x, 0); }
  int parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t next = row + gridDim.x;
    if (stages == 2 && next < rows) {
      prefetch(next, stage ^ 1);
      __pipeline_wait_prior(1);
    } else {
      __pipeline_wait_prior(0);
    }
    Pack<T>* const buffer = slots + stage * cached_packs;

    const T* x_row = x + row * cols;
    T* y_row = y + row * cols;
    const int head = HeadOffset(x_row);
    const int owned = PacksOwned<kBlock>((head + cols + P - 1) / P, tid);
    const int n_cached = min(owned, cached);
    const auto* x_packs = reinterpret_cast<const Pack<T>*>(x_row - head) + tid;
    auto* y_packs = reinterpret_cast<Pack<T>*>(y_row - head) + tid;  // aligned if y_vector_ok
    // The window's first pack sticks out of the row when head > 0, its last when the row does
    // not end on a pack boundary (they may be one pack). This thread's index i of each, or -1.
    const int64_t last = (head + cols - 1) / P;
    const int head_edge = head > 0 && tid == 0 ? 0 : -1;
    const int tail_edge = (head + cols) % P != 0 && last % kBlock == tid
                              ? static_cast<int>(last / kBlock)
                              : -1;
    auto is_edge = [&](int i) { return i == head_edge || i == tail_edge; };
    auto column = [&](int i) { return (tid + static_cast<int64_t>(i) * kBlock) * P - head; };

    // Cached edge packs hold a neighbouring row's elements (or zero fill) outside the row: make
    // them -inf, so that the passes treat every cached pack alike.
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
      const int i = e == 0 ? head_edge : tail_edge;
      if (i < 0 || i >= n_cached) { continue; }
#pragma unroll 1
      for (int j = 0; j < P; ++j) {
        const int64_t c = column(i) + j;
        if (c < 0 || c >= cols) { buffer[i * kBlock].elem[j] = NegativeInfinity<T>(); }
      }
    }

    // Pass 1: this thread's (max, sum) over its packs.
    MaxSum<C> stats{-static_cast<C>(CUDART_INF), C(0)};
    for (int i0 = 0; i0 < n_cached; i0 += U) {
      Pack<T> packs[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        packs[u] = i0 + u < n_cached ? buffer[(i0 + u) * kBlock] : NegativeInfinityPack<T>();
      }
      FoldPacks<T, U>(stats, packs, n_cached - i0);
    }
    for (int i0 = n_cached; i0 < owned; i0 += U) {
      Pack<T> packs[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u;
        packs[u] = i < owned && !is_edge(i) ? x_packs[static_cast<int64_t>(i) * kBlock]
                                            : NegativeInfinityPack<T>();
      }
      FoldPacks<T, U>(stats, packs, owned - i0);
    }
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
      const int i = e == 0 ? head_edge : tail_edge;
      if (i < n_cached || (e == 1 && i == head_edge)) { continue; }
      const Pack<T> pack = LoadPack(x_row, column(i), cols);
      FoldPacks<T, 1>(stats, &pack, 1);
    }

    const MaxSum<C> block_stats = BlockReduce(reduce_storage).Reduce(stats, MergeMaxSum<T>());
    if (tid == 0) { row_stats[parity] = block_stats; }
    __syncthreads();  // also lets reduce_storage be reused for the next row
    const MaxSum<C> total = row_stats[parity];
    parity ^= 1;
    const C scale = kAlgorithm == Algorithm::kSoftmax ? C(1) / total.sum : Log(total.sum);

    // Pass 2: recompute each element and write y. A pack stored element by element goes
    // through the thread's own slot: the pack's slot once it has been read, or slot 0 (read
    // first, and always present when a row has an uncached part) for the uncached packs.
    auto store = [&](int i, const Pack<T>& out, Pack<T>* scratch) {
      if (y_vector_ok && !is_edge(i)) {
        y_packs[static_cast<int64_t>(i) * kBlock] = out;
      } else {
        StoreElements(y_row, column(i), cols, out, scratch);
      }
    };
    for (int i0 = 0; i0 < n_cached; i0 += U) {
      Pack<T> packs[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (i0 + u < n_cached) { packs[u] = buffer[(i0 + u) * kBlock]; }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u;
        if (i < n_cached) {
          store(i, OutputPack<T, kAlgorithm>(packs[u], total.max, scale), &buffer[i * kBlock]);
        }
      }
    }
    for (int i0 = n_cached; i0 < owned; i0 += U) {
      Pack<T> packs[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u;
        if (i < owned) {
          packs[u] = is_edge(i) ? LoadPack(x_row, column(i), cols)
                                : x_packs[static_cast<int64_t>(i) * kBlock];
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u;
        if (i < owned) { store(i, OutputPack<T, kAlgorithm>(packs[u], total.max, scale), buffer); }
      }
    }

    if (stages == 2) {
      stage ^= 1;
    } else if (next < rows) {
      prefetch(next, 0);  // this thread has read all of its slots
    }
  }
}

// ---- Planning and launching ------------------------------------------------------------------

// How many blocks of `kernel` fit on one SM of the current device (info describes it) with
// `dynamic_smem` bytes of dynamic shared memory. Cached per (kernel, device, block, smem): the
// runtime's occupancy calculator costs microseconds, and one launch may ask it several times.
int MaxActiveBlocksPerSm(const void* kernel, const CudaDeviceInfo& info, int block_size,
                         size_t dynamic_smem);
// The most dynamic shared memory one block of `kernel` may use on the current device: the
// opt-in limit less the kernel's static shared memory. The first call for a (kernel, device)
// raises the kernel's dynamic limit to that (the default stops at 48 KiB), so the occupancy
// answers and the launches that follow may use all of it.
size_t MaxDynamicSmem(const void* kernel, const CudaDeviceInfo& info);
// The facts launches are planned from, for the current device: what Describe plans with,
// where Launch has its stream's copy.
const CudaDeviceInfo& CurrentDeviceInfo();

enum class Path { kWarp, kBlockSmem, kBlockOnline };

struct Plan;
using LaunchFn = void (*)(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols,
                          const void* x, void* y);

// Everything Launch decides, and the typed function that launches it.
struct Plan {
  Path path = Path::kBlockOnline;
  int pack = 1;
  // Warp path.
  int width = 0;
  int cols_per_thread = 0;
  int rows_per_access = 0;
  // All paths.
  int block = 0;
  // Block paths.
  int stages = 1;
  int cached_packs = 0;
  size_t smem = 0;
  int grid = 0;
  LaunchFn launch = nullptr;
};

std::string ToString(const Plan& plan);

// y may sit at another offset from a 16-byte boundary than x (say x is a view with a storage
// offset and y is fresh): then stores go element by element.
inline bool SameAlignment(const void* x, const void* y) {
  return ((reinterpret_cast<uintptr_t>(x) ^ reinterpret_cast<uintptr_t>(y)) % kPackBytes) == 0;
}

template <typename T, Algorithm kAlgorithm, typename Shape>
void LaunchWarp(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                void* y) {
  WarpSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::packs, Shape::rows>
      <<<plan.grid, kWarpBlockSize, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                 rows, static_cast<int>(cols),
                                                 SameAlignment(x, y));
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

template <typename T, Algorithm kAlgorithm, int kBlock>
void LaunchBlock(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                 void* y) {
  BlockSoftmaxKernel<T, kAlgorithm, kBlock><<<plan.grid, kBlock, plan.smem, stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), rows, cols, plan.cached_packs, plan.stages,
      SameAlignment(x, y));
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

// The warp ladder, shortest rows first. Rungs below 32 lanes hold one pack per lane; with 32
// lanes the packs per lane grow in steps that keep the padding small. Short rows take two rows
// per group, so each lane has at least two loads in flight. A dtype uses the rungs that keep
// its row within 64 registers a lane (float: 2048 cols, half: 2048, double: 1024).
template <typename Fn>
void ForEachWarpShape(Fn&& fn) {
  fn(WarpShape<1, 1, 2>{});
  fn(WarpShape<2, 1, 2>{});
  fn(WarpShape<4, 1, 2>{});
  fn(WarpShape<8, 1, 2>{});
  fn(WarpShape<16, 1, 2>{});
  fn(WarpShape<32, 1, 2>{});
  fn(WarpShape<32, 2, 2>{});
  fn(WarpShape<32, 3, 1>{});
  fn(WarpShape<32, 4, 1>{});
  fn(WarpShape<32, 6, 1>{});
  fn(WarpShape<32, 8, 1>{});
  fn(WarpShape<32, 12, 1>{});
  fn(WarpShape<32, 16, 1>{});
}

template <typename T, typename Shape>
constexpr bool kWarpShapeFits = Shape::packs * PackSize<T>::value * sizeof(ComputeType<T>) <= 256;

template <typename T>
int64_t MaxWarpWindowPacks() {
  int64_t most = 0;
  ForEachWarpShape([&](auto shape) {
    using Shape = decltype(shape);
    if constexpr (kWarpShapeFits<T, Shape>) {
      most = std::max<int64_t>(most, Shape::width * Shape::packs);
    }
  });
  return most;
}

// A persistent grid: as many blocks as fit on the device at once, or fewer if the rows run out.
inline int PersistentGrid(int64_t blocks_needed, const CudaDeviceInfo& info, int active_per_sm) {
  const int64_t resident = static_cast<int64_t>(info.sm_count) * std::max(active_per_sm, 1);
  return static_cast<int>(std::min(blocks_needed, resident));
}

// The one decision function. `x_aligned`: x starts on a 16-byte boundary (Describe, which has
// no pointers, assumes it does).
template <typename T, Algorithm kAlgorithm>
Plan PlanSoftmax(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned) {
  constexpr int P = PackSize<T>::value;
  const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
  Plan plan;
  plan.pack = P;

  if (window <= MaxWarpWindowPacks<T>()) {
    bool chosen = false;
    ForEachWarpShape([&](auto shape) {
      using Shape = decltype(shape);
      if constexpr (kWarpShapeFits<T, Shape>) {
        if (chosen || Shape::width * Shape::packs < window) { return; }
        chosen = true;
        plan.path = Path::kWarp;
        plan.width = Shape::width;
        plan.cols_per_thread = Shape::packs * P;
        plan.rows_per_access = Shape::rows;
        plan.block = kWarpBlockSize;
        plan.launch = &LaunchWarp<T, kAlgorithm, Shape>;
        const auto* kernel = reinterpret_cast<const void*>(
            &WarpSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::packs, Shape::rows>);
        const int64_t rows_per_block =
            (kWarpBlockSize / kWarpSize) * (kWarpSize / Shape::width) * Shape::rows;
        plan.grid = PersistentGrid((rows + rows_per_block - 1) / rows_per_block, info,
                                   MaxActiveBlocksPerSm(kernel, info, kWarpBlockSize, 0));
      }
    });
    return plan;
  }

  // A block per row with the whole row cached: two stages when they fit, so that copying the
  // next row overlaps the work on this one. Take the block size that keeps the most blocks
  // resident, and of those the largest (more threads to share the row).
  const size_t row_smem = static_cast<size_t>(window) * kPackBytes;
  for (int stages = 2; stages >= 1; --stages) {
    int best_active = 0;
    auto consider = [&](auto block_tag) {
      constexpr int kBlock = decltype(block_tag)::value;
      const auto* kernel =
          reinterpret_cast<const void*>(&BlockSoftmaxKernel<T, kAlgorithm, kBlock>);
      const size_t smem = stages * row_smem;
      if (smem > MaxDynamicSmem(kernel, info)) { return; }
      const int active = MaxActiveBlocksPerSm(kernel, info, kBlock, smem);
      if (active > 0 && active >= best_active) {
        best_active = active;
        plan.path = Path::kBlockSmem;
        plan.block = kBlock;
        plan.stages = stages;
        plan.cached_packs = static_cast<int>(window);
        plan.smem = smem;
        plan.launch = &LaunchBlock<T, kAlgorithm, kBlock>;
      }
    };
    consider(std::integral_constant<int, 128>{});
    consider(std::integral_constant<int, 256>{});
    consider(std::integral_constant<int, 512>{});
    consider(std::integral_constant<int, 1024>{});
    if (best_active > 0) {
      plan.grid = PersistentGrid(rows, info, best_active);
      return plan;
    }
  }

  // The row is longer than shared memory: one block of 1024 threads per SM caches as much of it
  // as fits, and re-reads only the rest. Keeping to one row per SM keeps that re-read close
  // behind the first read, so it usually hits L2.
  constexpr int kBlock = 1024;
  const auto* kernel = reinterpret_cast<const void*>(&BlockSoftmaxKernel<T, kAlgorithm, kBlock>);
  plan.path = Path::kBlockOnline;
  plan.block = kBlock;
  plan.stages = 1;
  plan.cached_packs = static_cast<int>(MaxDynamicSmem(kernel, info) / kPackBytes);
  plan.smem = static_cast<size_t>(plan.cached_packs) * kPackBytes;
  plan.launch = &LaunchBlock<T, kAlgorithm, kBlock>;
  plan.grid = PersistentGrid(rows, info, MaxActiveBlocksPerSm(kernel, info, kBlock, plan.smem));
  return plan;
}

inline bool IsPackAligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % kPackBytes == 0;
}

// The primitive: T is the CUDA element type (__half, __nv_bfloat16, float, double); Base is
// Softmax or LogSoftmax, which share one contract.
template <typename T, Algorithm kAlgorithm, typename Base>
class SoftmaxImpl final : public Base {
 public:
  void Launch(Stream* stream, int64_t rows, int64_t cols, const void* x, void* y) override {
    if (rows <= 0 || cols <= 0) { return; }
    auto* cuda_stream = static_cast<CudaStream*>(stream);
    const Plan plan =
        PlanSoftmax<T, kAlgorithm>(cuda_stream->device_info(), rows, cols, IsPackAligned(x));
    plan.launch(plan, cuda_stream->cuda_stream(), rows, cols, x, y);
  }

  std::string Describe(int64_t rows, int64_t cols) const override {
    if (rows <= 0 || cols <= 0) { return "empty"; }
    return ToString(PlanSoftmax<T, kAlgorithm>(CurrentDeviceInfo(), rows, cols, true));
  }
};

// Defined, one dtype per file, in softmax_<dtype>.cu, so the dtypes compile in parallel; the
// extern declarations keep softmax.cu from instantiating any kernel.
template <typename T>
std::unique_ptr<Softmax> NewSoftmax() {
  return std::make_unique<SoftmaxImpl<T, Algorithm::kSoftmax, Softmax>>();
}
template <typename T>
std::unique_ptr<LogSoftmax> NewLogSoftmax() {
  return std::make_unique<SoftmaxImpl<T, Algorithm::kLogSoftmax, LogSoftmax>>();
}

#define ONEFLITE_SOFTMAX_DECLARE_DTYPE(T)                    \
  extern template std::unique_ptr<Softmax> NewSoftmax<T>(); \
  extern template std::unique_ptr<LogSoftmax> NewLogSoftmax<T>();
ONEFLITE_SOFTMAX_DECLARE_DTYPE(__half)
ONEFLITE_SOFTMAX_DECLARE_DTYPE(__nv_bfloat16)
ONEFLITE_SOFTMAX_DECLARE_DTYPE(float)
ONEFLITE_SOFTMAX_DECLARE_DTYPE(double)
#undef ONEFLITE_SOFTMAX_DECLARE_DTYPE

}  // namespace oneflite::ep::primitive::cuda_softmax
