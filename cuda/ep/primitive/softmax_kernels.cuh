// The CUDA softmax kernel family behind the "softmax" and "log_softmax" primitives.
//
// A row-wise softmax moves the bytes of a copy (x read once, y written once), so the goal of
// every path is the device's copy bandwidth. Which path runs depends on the row length:
//
//   warp          the row lives in the registers of one warp, or of a smaller group of lanes
//                 for short rows; max and sum are butterfly shuffles. Reads x once.
//   block_smem    one block per row, the row cached in shared memory (up to the opt-in limit,
//                 about 227 KiB on Hopper). Reads x once.
//   block_online  one block per row for rows longer than shared memory: as much of the row as
//                 fits is cached, the rest is read twice, the second time usually from L2.
//
// Both block paths are one kernel (BlockSoftmaxKernel): pass 1 reads the row once and keeps a
// running (max, sum) pair per thread (the online normalizer), so a block needs one reduction,
// not two, and never a third read of x. NOTES.md beside this file explains each choice.
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

// Rounds to nearest, ties to even, as PyTorch does when it narrows its float result.
template <typename T>
__device__ __forceinline__ T FromCompute(ComputeType<T> v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
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

template <typename T>
__device__ __forceinline__ Pack<T> NegativeInfinityPack() {
  Pack<T> pack;
#pragma unroll
  for (int j = 0; j < PackSize<T>::value; ++j) { pack.elem[j] = NegativeInfinity<T>(); }
  return pack;
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

// Stores the in-row columns of a window pack. `vector_ok` says y sits at the same offset from
// a 16-byte boundary as x, so y's window packs are aligned too; otherwise every element is
// stored alone (correct at any alignment, just more store instructions).
template <typename T, typename Index>
__device__ __forceinline__ void StorePack(T* row, Index c0, Index cols, const Pack<T>& pack,
                                          bool vector_ok) {
  constexpr int P = PackSize<T>::value;
  if (vector_ok && c0 >= 0 && c0 + P <= cols) {
    *reinterpret_cast<Pack<T>*>(row + c0) = pack;
    return;
  }
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const Index c = c0 + j;
    if (c >= 0 && c < cols) { row[c] = pack.elem[j]; }
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

// The max of a pack's elements. 16-bit packs are reduced in pairs by the packed max
// instructions and widened once, rather than widening all eight elements.
template <typename T>
__device__ __forceinline__ ComputeType<T> PackMax(const Pack<T>& pack) {
  constexpr int P = PackSize<T>::value;
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    const auto* pairs = reinterpret_cast<const Pair*>(pack.elem);
    Pair m = pairs[0];
#pragma unroll
    for (int j = 1; j < P / 2; ++j) { m = __hmax2(m, pairs[j]); }  // like fmax: NaN loses
    return Max(ToCompute(m.x), ToCompute(m.y));
  } else {
    ComputeType<T> m = pack.elem[0];
#pragma unroll
    for (int j = 1; j < P; ++j) { m = Max(m, pack.elem[j]); }
    return m;
  }
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
// the compute type, so exp is computed once per element.
template <typename T, Algorithm kAlgorithm, int kWidth, int kPacks, int kRows>
__global__ void __launch_bounds__(kWarpBlockSize)
    WarpSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols,
                      bool y_vector_ok) {
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int kGroups = kWarpSize / kWidth;
  constexpr int kTileRows = kGroups * kRows;
  constexpr int kWarpsPerBlock = kWarpBlockSize / kWarpSize;
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
        Pack<T> pack;
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const C out = kAlgorithm == Algorithm::kSoftmax ? v[r][n * P + j] * scale
                                                          : v[r][n * P + j] - scale;
          pack.elem[j] = FromCompute<T>(out);
        }
        const int c0 = (n * kWidth + lane_in_group) * P - head[r];
        StorePack(y_row, c0, row_cols[r], pack, y_vector_ok);
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
  constexpr int P = PackSize<T>::value;
  C max = stats.max;
#pragma unroll
  for (int u = 0; u < kCount; ++u) { max = Max(max, PackMax(packs[u])); }
  const C shift = SafeShift(max);
  C sum = stats.sum * Exp<T>(stats.max - shift);
#pragma unroll
  for (int u = 0; u < kCount; ++u) {
    if (u < count) {
#pragma unroll
      for (int j = 0; j < P; ++j) { sum += Exp<T>(ToCompute(packs[u].elem[j]) - shift); }
    }
  }
  stats = {max, sum};
}

// y for one pack, given the row's max and scale (1 / sum for softmax, log(sum) for log_softmax).
// An all -inf row has max -inf, and x - max = NaN gives the NaN row PyTorch gives.
template <typename T, Algorithm kAlgorithm>
__device__ __forceinline__ Pack<T> OutputPack(const Pack<T>& in, ComputeType<T> max,
                                              ComputeType<T> scale) {
  Pack<T> out;
#pragma unroll
  for (int j = 0; j < PackSize<T>::value; ++j) {
    const ComputeType<T> shifted = ToCompute(in.elem[j]) - max;
    out.elem[j] = FromCompute<T>(kAlgorithm == Algorithm::kSoftmax ? Exp<T>(shifted) * scale
                                                                  : shifted - scale);
  }
  return out;
}

// Packs each thread keeps in flight: 4 x 16 bytes. A block of 1024 threads, alone on an SM when
// it caches a long row, then still has 64 KiB of loads outstanding, and the kernel stays within
// 64 registers, which lets 1024 threads share an SM. double's exp needs more temporaries, so it
// takes two packs at a time to stay within the same registers.
template <typename T>
constexpr int kBlockUnroll = std::is_same_v<T, double> ? 2 : 4;
constexpr int kBlockMinThreadsPerSm = 1024;

// One block per row, persistent over rows. Thread t owns window packs k = t + i * kBlock; the
// first `cached_packs` packs of the window are kept in dynamic shared memory at index k, so a
// thread only ever reads back what it wrote itself (no barrier needed, and consecutive threads
// touch consecutive 16-byte words: free of bank conflicts). Packs past `cached_packs` are read
// again from global memory, in reverse order so that the most recently loaded come first.
//
// In-row counters are int: i < window / kBlock stays far below 2^31 for any row that fits in
// memory. Positions in the row are int64.
template <typename T, Algorithm kAlgorithm, int kBlock>
__global__ void __launch_bounds__(kBlock, kBlockMinThreadsPerSm / kBlock)
    BlockSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols,
                       int cached_packs, bool y_vector_ok) {
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  using BlockReduce = cub::BlockReduce<MaxSum<C>, kBlock>;
  __shared__ typename BlockReduce::TempStorage reduce_storage;
  // The row's (max, sum), double-buffered: thread 0 writes row r + 1's after the barrier that
  // follows every thread's read of row r's.
  __shared__ MaxSum<C> row_stats[2];
  extern __shared__ uint4 shared_cache[];
  Pack<T>* cache = reinterpret_cast<Pack<T>*>(shared_cache) + threadIdx.x;
  const int tid = threadIdx.x;
  const int cached = tid < cached_packs ? (cached_packs - 1 - tid) / kBlock + 1 : 0;

  int parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x_row = x + row * cols;
    T* y_row = y + row * cols;
    const int head = HeadOffset(x_row);
    const int64_t window = (head + cols + P - 1) / P;
    const int owned = tid < window ? static_cast<int>((window - 1 - tid) / kBlock) + 1 : 0;
    // The window's first pack sticks out of the row when head > 0, its last when the row does
    // not end on a pack boundary (they may be one pack). This thread's index i of each, or -1.
    // The unrolled loops below skip them; they are done element by element after each loop.
    const int head_edge = head > 0 && tid == 0 ? 0 : -1;
    const int tail_edge = (head + cols) % P != 0 && (window - 1) % kBlock == tid
                              ? static_cast<int>((window - 1) / kBlock)
                              : -1;
    auto is_edge = [&](int i) { return i == head_edge || i == tail_edge; };
    auto column = [&](int i) { return (tid + static_cast<int64_t>(i) * kBlock) * P - head; };
    const auto* x_packs = reinterpret_cast<const Pack<T>*>(x_row - head) + tid;

    // Pass 1: read the row once, cache it, and fold it into this thread's (max, sum).
    MaxSum<C> stats{-static_cast<C>(CUDART_INF), C(0)};
    for (int i0 = 0; i0 < owned; i0 += kBlockUnroll<T>) {
      Pack<T> packs[kBlockUnroll<T>];
#pragma unroll
      for (int u = 0; u < kBlockUnroll<T>; ++u) {
        const int i = i0 + u;
        packs[u] = i < owned && !is_edge(i) ? x_packs[static_cast<int64_t>(i) * kBlock]
                                            : NegativeInfinityPack<T>();
      }
#pragma unroll
      for (int u = 0; u < kBlockUnroll<T>; ++u) {
        if (i0 + u < cached) { cache[(i0 + u) * kBlock] = packs[u]; }
      }
      FoldPacks<T, kBlockUnroll<T>>(stats, packs, owned - i0);
    }
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
      const int i = e == 0 ? head_edge : tail_edge;
      if (i < 0 || (e == 1 && i == head_edge)) { continue; }
      const Pack<T> pack = LoadPack(x_row, column(i), cols);
      if (i < cached) { cache[i * kBlock] = pack; }
      FoldPacks<T, 1>(stats, &pack, 1);
    }

    const MaxSum<C> block_stats = BlockReduce(reduce_storage).Reduce(stats, MergeMaxSum<T>());
    if (tid == 0) { row_stats[parity] = block_stats; }
    __syncthreads();  // also lets reduce_storage be reused for the next row
    const MaxSum<C> total = row_stats[parity];
    parity ^= 1;
    const C scale = kAlgorithm == Algorithm::kSoftmax ? C(1) / total.sum : Log(total.sum);

    // Pass 2: recompute from the cache (or from x, for the uncached tail) and write y.
    for (int i_end = owned; i_end > 0; i_end -= kBlockUnroll<T>) {
      Pack<T> packs[kBlockUnroll<T>];
#pragma unroll
      for (int u = 0; u < kBlockUnroll<T>; ++u) {
        const int i = i_end - 1 - u;
        if (i >= 0 && !is_edge(i)) {
          packs[u] = i < cached ? cache[i * kBlock] : x_packs[static_cast<int64_t>(i) * kBlock];
        }
      }
#pragma unroll
      for (int u = 0; u < kBlockUnroll<T>; ++u) {
        const int i = i_end - 1 - u;
        if (i < 0 || is_edge(i)) { continue; }
        const Pack<T> out = OutputPack<T, kAlgorithm>(packs[u], total.max, scale);
        if (y_vector_ok) {
          reinterpret_cast<Pack<T>*>(y_row - head)[tid + static_cast<int64_t>(i) * kBlock] = out;
        } else {
          StorePack(y_row, column(i), cols, out, false);
        }
      }
    }
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
      const int i = e == 0 ? head_edge : tail_edge;
      if (i < 0 || (e == 1 && i == head_edge)) { continue; }
      const Pack<T> in = i < cached ? cache[i * kBlock] : LoadPack(x_row, column(i), cols);
      StorePack(y_row, column(i), cols, OutputPack<T, kAlgorithm>(in, total.max, scale), false);
    }
  }
}

// ---- Planning and launching ------------------------------------------------------------------

// How many blocks of `kernel` fit on one SM of the current device (info describes it) with
// `dynamic_smem` bytes of dynamic shared memory. Cached per (kernel, device, block, smem): the
// runtime's occupancy calculator costs microseconds, and one launch may ask it five times.
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
  size_t smem = 0;
  int64_t cached_packs = 0;
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
      static_cast<const T*>(x), static_cast<T*>(y), rows, cols,
      static_cast<int>(plan.cached_packs), SameAlignment(x, y));
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
    if constexpr (kWarpShapeFits<T, Shape>) { most = std::max<int64_t>(most, Shape::width * Shape::packs); }
  });
  return most;
}

inline int CappedGrid(int64_t blocks_needed, const CudaDeviceInfo& info, int active_per_sm) {
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
        plan.grid = CappedGrid((rows + rows_per_block - 1) / rows_per_block, info,
                               MaxActiveBlocksPerSm(kernel, info, kWarpBlockSize, 0));
      }
    });
    return plan;
  }

  // A block per row. With the whole row cached, take the block size that keeps the most blocks
  // resident, and of those the largest (more threads to share the row).
  const size_t row_smem = static_cast<size_t>(window) * kPackBytes;
  int best_active = 0;
  auto consider = [&](auto block_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    const auto* kernel = reinterpret_cast<const void*>(&BlockSoftmaxKernel<T, kAlgorithm, kBlock>);
    if (row_smem > MaxDynamicSmem(kernel, info)) { return; }
    const int active = MaxActiveBlocksPerSm(kernel, info, kBlock, row_smem);
    if (active > 0 && active >= best_active) {
      best_active = active;
      plan.path = Path::kBlockSmem;
      plan.block = kBlock;
      plan.smem = row_smem;
      plan.cached_packs = window;
      plan.launch = &LaunchBlock<T, kAlgorithm, kBlock>;
    }
  };
  consider(std::integral_constant<int, 128>{});
  consider(std::integral_constant<int, 256>{});
  consider(std::integral_constant<int, 512>{});
  consider(std::integral_constant<int, 1024>{});
  if (best_active > 0) {
    plan.grid = CappedGrid(rows, info, best_active);
    return plan;
  }

  // The row is longer than shared memory: one block of 1024 threads per SM caches as much of it
  // as fits, and re-reads only the rest. Keeping to one row per SM keeps that re-read close
  // behind the first read, so it usually hits L2.
  constexpr int kBlock = 1024;
  const auto* kernel = reinterpret_cast<const void*>(&BlockSoftmaxKernel<T, kAlgorithm, kBlock>);
  const size_t smem = MaxDynamicSmem(kernel, info) / kPackBytes * kPackBytes;
  plan.path = Path::kBlockOnline;
  plan.block = kBlock;
  plan.smem = smem;
  plan.cached_packs = static_cast<int64_t>(smem / kPackBytes);
  plan.launch = &LaunchBlock<T, kAlgorithm, kBlock>;
  plan.grid = CappedGrid(rows, info, MaxActiveBlocksPerSm(kernel, info, kBlock, smem));
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
