// Paths 2 and 3 of the CUDA softmax family (softmax_kernels.cuh gives the overview):
// `block_smem` and `block_online`, one kernel with a block per row, the row cached in shared
// memory as far as it fits. Also the block-wide pieces block_registers reuses: the online
// normalizer's (max, sum) state, BlockAllReduce and the first wave's stagger.
#pragma once

#include <cuda_pipeline_primitives.h>

#include "ep/primitive/softmax_warp.cuh"

// 1 builds the block paths' reductions on cub::BlockReduce, as the reference design does, for
// tools/softmax_lab.cu to measure against (see BlockAllReduce).
#ifndef ONEFLITE_SOFTMAX_CUB_REDUCE
#define ONEFLITE_SOFTMAX_CUB_REDUCE 0
#endif
#if ONEFLITE_SOFTMAX_CUB_REDUCE
#include <cub/block/block_reduce.cuh>
#endif

namespace oneflite::ep::primitive::cuda_softmax {

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

template <typename C>
struct MaxOp {
  __device__ __forceinline__ C operator()(C a, C b) const { return Max(a, b); }
};

// The block's reduction of one value a thread, delivered to every thread, behind one barrier:
// each warp reduces by butterfly shuffles, lane 0 of each posts the warp's result to `posts`
// (kBlock / 32 slots of shared memory), and after the barrier every warp reduces the posts the
// same way. Every thread ends with the same bits, since each butterfly step computes op(a, b)
// on one lane and op(b, a) on its partner. A kernel gives each reduction of a row its own
// `posts` (the max, then the sum) and alternates them: a thread can only write one again after
// passing the other's barrier, which every thread reaches after reading it.
//
// cub::BlockReduce, the reference design's choice, hands its result to thread 0 only; sharing it
// costs two more barriers, three a reduction in all. Building tools/softmax_lab.cu with
// -DONEFLITE_SOFTMAX_CUB_REDUCE=1 restores that, to measure what the two barriers cost.
template <int kBlock, typename C, typename Op>
__device__ __forceinline__ C BlockAllReduce(C value, C* posts, Op op) {
  constexpr int kWarps = kBlock / kWarpSize;
  static_assert(kBlock % kWarpSize == 0, "a block is whole warps");
#if ONEFLITE_SOFTMAX_CUB_REDUCE
  using BlockReduce = cub::BlockReduce<C, kBlock>;
  __shared__ typename BlockReduce::TempStorage storage;
  const C result = BlockReduce(storage).Reduce(value, op);
  if (threadIdx.x == 0) { posts[0] = result; }
  __syncthreads();
  value = posts[0];
  __syncthreads();
  return value;
#else
  value = GroupAllReduce<kWarpSize>(value, op);
  if constexpr (kWarps > 1) {
    const int lane = threadIdx.x % kWarpSize;
    if (lane == 0) { posts[threadIdx.x / kWarpSize] = value; }
    __syncthreads();
    if constexpr ((kWarps & (kWarps - 1)) == 0) {
      value = GroupAllReduce<kWarps>(posts[lane % kWarps], op);
    } else {
      // Blocks of 7 warps (float 224 x 2), and the lab's of 3, 5 or 6: every thread folds the
      // posts in the same order.
      value = posts[0];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) { value = op(value, posts[w]); }
    }
  }
  return value;
#endif
}

template <typename C>
struct SumOp {
  __device__ __forceinline__ C operator()(C a, C b) const { return a + b; }
};

// Folds packs [0, count) of `packs` into a thread's (max, sum): one rescale for the batch, then
// one exp per element. The packs hold a T pack's elements, as T or (the lab's float cache) as
// float.
template <typename T, int kCount, typename In>
__device__ __forceinline__ void FoldPacks(MaxSum<ComputeType<T>>& stats, const In* packs,
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

// The per-row constant of the output pass, from the row's sum. log_softmax subtracts log(sum).
// softmax multiplies by 1 / sum, except for the 16-bit types, which fold it into the exponent:
// exp(s) / sum = 2^(s * log2(e) - log2(sum)), one FFMA and one MUFU.EX2 per element instead of
// a multiply, an EX2 and another multiply (see RowOutput).
template <typename T, Algorithm kAlgorithm>
__device__ __forceinline__ ComputeType<T> RowScale(ComputeType<T> sum) {
  if constexpr (kAlgorithm == Algorithm::kLogSoftmax) {
    return Log(sum);
  } else if constexpr (kIs16Bit<T>) {
    return -log2f(sum);
  } else {
    return Reciprocal(sum);
  }
}

// One output from x - max and the row's RowScale.
template <typename T, Algorithm kAlgorithm>
__device__ __forceinline__ ComputeType<T> RowOutput(ComputeType<T> shifted, ComputeType<T> scale) {
  if constexpr (kAlgorithm == Algorithm::kLogSoftmax) {
    return shifted - scale;
  } else if constexpr (kIs16Bit<T>) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fmaf(shifted, 1.4426950408889634f, scale)));
    return r;
  } else {
    return Exp<T>(shifted) * scale;
  }
}

// y for one pack (its elements as T, or as float), given the row's max and RowScale. An all
// -inf row has max -inf, and x - max = NaN gives the NaN row PyTorch gives.
template <typename T, Algorithm kAlgorithm, typename In>
__device__ __forceinline__ Pack<T> OutputPack(const In& in, ComputeType<T> max,
                                              ComputeType<T> scale) {
  using C = ComputeType<T>;
  C out[PackSize<T>::value];
#pragma unroll
  for (int j = 0; j < PackSize<T>::value; ++j) {
    out[j] = RowOutput<T, kAlgorithm>(ToCompute(in.elem[j]) - max, scale);
  }
  return MakePack<T>(out);
}

// Packs a thread takes per step of the passes below, sharing one rescale of the running sum:
// 16 elements for float and the 16-bit types, 4 for double, whose exp needs more temporaries.
// The cached part of a row is in flight by cp.async, so this does not bound the loads in flight.
template <typename T>
constexpr int kBlockUnroll = std::is_same_v<T, float> ? 4 : 2;
// The largest block: 1024 threads, at most 64 registers each. double's exp needs more registers
// than that, so double stops at 512 threads with up to 128.
template <typename T>
constexpr int kMaxBlockSize = std::is_same_v<T, double> ? 512 : 1024;

// The first wave of a block path's launch, started in kStaggerGroups groups a step apart: the
// launch's first `blocks` blocks wait (blockIdx % kStaggerGroups) * `cycles` clocks before they
// start. A first wave of long rows otherwise starts in step: every SM requests its row at once,
// computes while DRAM idles, and stores at once, and the waves behind it stay near that
// lockstep for much of the launch. With one or two long rows an SM, that costs float 65536
// columns 3-4% of the copy's bandwidth at 2048 rows and 5-10% at 264-1024 (NOTES.md, item 47).
// The step is the time a row's bytes take at 128 KiB a microsecond (2 us for a float row of
// 65536), which is about the time the wave's reads take in step.
struct Stagger {
  int blocks = 0;
  int cycles = 0;
};
constexpr int kStaggerGroups = 4;

__device__ __forceinline__ void StaggerStart(const Stagger& stagger) {
  if (static_cast<int>(blockIdx.x) < stagger.blocks) {
    const long long wait = static_cast<long long>(blockIdx.x % kStaggerGroups) * stagger.cycles;
    const long long start = clock64();
    while (clock64() - start < wait) {}
  }
}

// How many of the window packs t, t + kBlock, t + 2 * kBlock, ... below `window` thread t owns.
template <int kBlock, typename Index>
__device__ __forceinline__ int PacksOwned(Index window, int tid) {
  return tid < window ? static_cast<int>((window - 1 - tid) / kBlock) + 1 : 0;
}

// One block per row, striding over rows. Thread t owns window packs k = t + i * kBlock. The
// first `cached_packs` packs of a row's window go to dynamic shared memory, pack k at index k of
// the cache, by asynchronous copies (cp.async): a thread requests its whole share at once,
// holding no registers while the copies fly, and only ever reads back what it copied itself, so
// neither the copies nor the reads need a barrier, and consecutive threads touch consecutive
// 16-byte words (free of bank conflicts). While one block waits on its copies, the SM's other
// blocks compute. Packs past `cached_packs` (rows longer than shared memory) are read from x in
// pass 1 and again in pass 2, right after the cached part, while they are likely still in L2.
//
// Counters of packs are int: a row that fits in memory has fewer than 2^31 * kBlock packs.
// Positions in the row are int64. Three parameters exist only for tools/softmax_lab.cu, which
// instantiates them to measure what the defaults buy, each as the reference design does it:
// kAsyncCopy = false copies through registers (loads, then shared-memory stores),
// kOnlineNormalizer = false finds the max and the sum in two passes instead of one, and Cache =
// float (with kAsyncCopy = false: cp.async moves bytes as they are) caches a 16-bit row widened
// to float, twice the shared memory, and never converts it again. A fourth, kReadAhead = true,
// has thread 0 ask L2 for the bytes of x kReadAheadBytes past its row's before the row's copies
// (ReadAhead), as block_registers' copies that read ahead do: the planner takes it for 16-bit
// softmax rows of whole 128-byte lines on 512 threads (PlanBlockSmemReadAhead), and the lab's
// ahead=on for any block size.
template <typename T, Algorithm kAlgorithm, int kBlock, bool kAsyncCopy = true,
          bool kOnlineNormalizer = true, typename Cache = T, int kHeld = 0, bool kReadAhead = false>
__global__ void __launch_bounds__(kBlock, kMaxBlockSize<T> / kBlock)
    BlockSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols,
                       int cached_packs, bool y_vector_ok, Stagger stagger) {
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int U = kBlockUnroll<T>;
  // A cached pack: P elements of T, as loaded (16 bytes) or widened.
  using CachePack = Pack<Cache, (P * static_cast<int>(sizeof(Cache)))>;
  static_assert(std::is_same_v<Cache, T> || !kAsyncCopy, "cp.async cannot widen what it copies");
  __shared__ C posts[2][kBlock / kWarpSize];  // BlockAllReduce's, for the max and the sum
  extern __shared__ uint4 shared_cache[];
  const int tid = threadIdx.x;
  // This thread's 16-byte slot for its cached pack i. A widened pack is two 16-byte halves, in
  // two planes of cached_packs slots, so that a warp's accesses stay free of bank conflicts.
  Pack<T>* const slots = reinterpret_cast<Pack<T>*>(shared_cache) + tid;
  auto slot = [&](int i) { return slots + i * kBlock; };
  auto read_cache = [&](int i) {
    if constexpr (std::is_same_v<Cache, T>) {
      return *slot(i);
    } else {
      CachePack pack;
      auto* halves = reinterpret_cast<Pack<Cache>*>(&pack);
      const auto* plane = reinterpret_cast<const Pack<Cache>*>(slot(i));
      halves[0] = plane[0];
      halves[1] = plane[cached_packs];
      return pack;
    }
  };
  auto write_cache = [&](int i, const CachePack& pack) {
    if constexpr (std::is_same_v<Cache, T>) {
      *slot(i) = pack;
    } else {
      const auto* halves = reinterpret_cast<const Pack<Cache>*>(&pack);
      auto* plane = reinterpret_cast<Pack<Cache>*>(slot(i));
      plane[0] = halves[0];
      plane[cached_packs] = halves[1];
    }
  };
  auto cached_elem = [&](int i, int j) -> Cache& {
    if constexpr (std::is_same_v<Cache, T>) {
      return slot(i)->elem[j];
    } else {
      constexpr int kHalf = PackSize<Cache>::value;
      auto* plane = reinterpret_cast<Pack<Cache>*>(slot(i));
      return plane[j < kHalf ? 0 : cached_packs].elem[j % kHalf];
    }
  };
  auto widen = [](const Pack<T>& pack) {
    if constexpr (std::is_same_v<Cache, T>) {
      return pack;
    } else {
      CachePack wide;
#pragma unroll
      for (int j = 0; j < P; ++j) { wide.elem[j] = ToCompute(pack.elem[j]); }
      return wide;
    }
  };
  const int cached = PacksOwned<kBlock>(cached_packs, tid);
  const T* x_end = x + rows * cols;
  StaggerStart(stagger);

  // Starts copying this thread's cached packs of `row`. A pack that straddles a
  // row boundary is copied whole (the neighbour's elements are masked later). Only the tensor's
  // own first and last packs may reach outside it: those two are loaded element by element.
  // x_row starts row `row`, head is its HeadOffset, and n is this thread's count of cached packs.
  auto prefetch = [&](int64_t row, const T* x_row, int head, int n) {
    const Pack<T>* src = reinterpret_cast<const Pack<T>*>(x_row - head) + tid;
    const bool at_tensor_end =
        (row == 0 && head > 0) || (row == rows - 1 && (head + cols) % P != 0);
    if (!at_tensor_end) {
#pragma unroll 4
      for (int i = 0; i < n; ++i) {
        if constexpr (kAsyncCopy) {
          __pipeline_memcpy_async(slot(i), src + static_cast<int64_t>(i) * kBlock, kPackBytes);
        } else {
          write_cache(i, widen(src[static_cast<int64_t>(i) * kBlock]));
        }
      }
    } else {
#pragma unroll 1
      for (int i = 0; i < n; ++i) {
        const Pack<T>* from = src + static_cast<int64_t>(i) * kBlock;
        if (from->elem < x || from->elem + P > x_end) {
          const int64_t c0 = (tid + static_cast<int64_t>(i) * kBlock) * P - head;
          write_cache(i, widen(LoadPack(x_row, c0, cols)));
        } else {
          if constexpr (kAsyncCopy) {
            __pipeline_memcpy_async(slot(i), from, kPackBytes);
          } else {
            write_cache(i, widen(*from));
          }
        }
      }
    }
    __pipeline_commit();
  };

  // A block that strides to a further row copies it over the last one's cache: each thread
  // overwrites only slots it has finished reading itself.
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    if constexpr (kReadAhead) {
      if (tid == 0) { ReadAhead(x, rows * cols, row * cols, cols); }
    }
    const T* x_row = x + row * cols;
    T* y_row = y + row * cols;
    const int head = HeadOffset(x_row);
    const int owned = PacksOwned<kBlock>((head + cols + P - 1) / P, tid);
    const int n_cached = min(owned, cached);
    // The window's first pack sticks out of the row when head > 0, its last when the row does
    // not end on a pack boundary (they may be one pack). This thread's index i of each, or -1.
    const int head_edge = head > 0 && tid == 0 ? 0 : -1;
    int tail_edge = -1;
    if ((head + cols) % P != 0) {
      const int64_t last = (head + cols - 1) / P;
      if (last % kBlock == tid && last / kBlock != head_edge) { tail_edge = last / kBlock; }
    }
    auto is_edge = [&](int i) { return i == head_edge || i == tail_edge; };
    auto column = [&](int i) { return (tid + static_cast<int64_t>(i) * kBlock) * P - head; };
    auto x_pack_at = [&](int i) {
      return (x_row - head) + (tid + static_cast<int64_t>(i) * kBlock) * P;
    };
    auto x_pack = [&](int i) { return *reinterpret_cast<const Pack<T>*>(x_pack_at(i)); };
    // This thread's packs from `first_read` on are read from x in each pass.
    const int first_read = n_cached + kHeld;

    // The first kHeld uncached packs, held in registers for both passes; -inf past the row and
    // for edge packs (done alone, below). They are loaded before the copies are requested:
    // loaded after, they went out only after the wait for the copies (ptxas placed that wait
    // ahead of them), a second round trip to memory in every row. Except for bfloat16, where
    // loading them first leaves the 512-thread kernel at 64 registers and a 6-byte spill, and
    // measured 3% slower at 65536 columns (half and float gained 1-2%; NOTES.md, item 39).
    constexpr bool kHeldFirst = !std::is_same_v<T, __nv_bfloat16>;
    Pack<T> held[kHeld > 0 ? kHeld : 1];
    if constexpr (!kHeldFirst) { prefetch(row, x_row, head, n_cached); }
#pragma unroll
    for (int h = 0; h < kHeld; ++h) {
      const int i = n_cached + h;
      held[h] = LoadPackOrNegativeInfinity(x_pack_at(i), i < owned && !is_edge(i));
    }
    if constexpr (kHeldFirst) { prefetch(row, x_row, head, n_cached); }
    __pipeline_wait_prior(0);

    // Cached edge packs hold a neighbouring row's elements outside the row: make them -inf, so
    // that the passes treat every cached pack alike.
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
      const int i = e == 0 ? head_edge : tail_edge;
      if (i < 0 || i >= n_cached) { continue; }
#pragma unroll 1
      for (int j = 0; j < P; ++j) {
        const int64_t c = column(i) + j;
        if (c < 0 || c >= cols) { cached_elem(i, j) = NegativeInfinity<Cache>(); }
      }
    }

    // Held pack h, by selects (an array indexed at run time would live in local memory).
    auto held_pack = [&](int h) {
      Pack<T> pack = held[0];
#pragma unroll
      for (int k = 1; k < kHeld; ++k) {
        if (h == k) { pack = held[k]; }
      }
      return pack;
    };
    // This thread's pack i, from the cache, the held packs or x; -inf outside the row and for
    // uncached edge packs.
    auto pack_at = [&](int i) {
      if (i < n_cached) { return read_cache(i); }
      if (i < first_read) { return widen(held_pack(i - n_cached)); }
      return widen(LoadPackOrNegativeInfinity(x_pack_at(i), i < owned && !is_edge(i)));
    };

    // Calls visit(packs, count) for this thread's packs in batches of U, `count` of each batch
    // in the row (the rest -inf), then for each uncached edge pack alone.
    auto for_each_batch = [&](auto&& visit) {
      for (int i0 = 0; i0 < owned; i0 += U) {
        CachePack packs[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { packs[u] = pack_at(i0 + u); }
        visit(packs, owned - i0);
      }
#pragma unroll 1
      for (int e = 0; e < 2; ++e) {
        const int i = e == 0 ? head_edge : tail_edge;
        if (i < n_cached) { continue; }
        CachePack packs[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { packs[u] = widen(NegativeInfinityPack<T>()); }
        packs[0] = widen(LoadPack(x_row, column(i), cols));
        visit(packs, 1);
      }
    };

    // Pass 1: this thread's (max, sum) over its packs, by the online normalizer.
    MaxSum<C> stats{-static_cast<C>(CUDART_INF), C(0)};
    if constexpr (kOnlineNormalizer) {
      for_each_batch(
          [&](const CachePack* packs, int count) { FoldPacks<T, U>(stats, packs, count); });
    } else {
      for_each_batch([&](const CachePack* packs, int) {
#pragma unroll
        for (int u = 0; u < U; ++u) { stats.max = Max(stats.max, PackMax(packs[u])); }
      });
    }

    // The row's max, then its sum: each thread rescales its own sum to the row's max first, so
    // both reductions use a plain operator. (Reducing the (max, sum) pairs in one go would merge
    // with two exps a step.)
    const C row_max = BlockAllReduce<kBlock>(stats.max, posts[0], MaxOp<C>());
    C shifted_sum = stats.sum * Exp<T>(stats.max - SafeShift(row_max));
    if constexpr (!kOnlineNormalizer) {
      // The reference design's second pass: the sum against the row's max (folding at the
      // row's max rescales nothing).
      MaxSum<C> at_max{row_max, C(0)};
      for_each_batch(
          [&](const CachePack* packs, int count) { FoldPacks<T, U>(at_max, packs, count); });
      shifted_sum = at_max.sum;
    }
    const C row_sum = BlockAllReduce<kBlock>(shifted_sum, posts[1], SumOp<C>());
    const C scale = RowScale<T, kAlgorithm>(row_sum);

    // Pass 2: recompute each element and write y; uncached edge packs last, alone. A pack
    // stored element by element goes through this thread's slot of the pack once it has been
    // read, or through slot 0 (read in the first step, and present whenever a row has an
    // uncached part: the planner caches at least one pack per thread) for uncached packs.
    for (int i0 = 0; i0 < owned; i0 += U) {
      CachePack packs[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u;
        if (i < first_read) {
          packs[u] = pack_at(i);
        } else if (i < owned && !is_edge(i)) {
          packs[u] = widen(x_pack(i));
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int i = i0 + u;
        if (i >= owned || (i >= n_cached && is_edge(i))) { continue; }
        const Pack<T> out = OutputPack<T, kAlgorithm>(packs[u], row_max, scale);
        if (y_vector_ok && !is_edge(i)) {
          reinterpret_cast<Pack<T>*>(y_row - head)[tid + static_cast<int64_t>(i) * kBlock] = out;
        } else {
          StoreElements(y_row, column(i), cols, out, slot(i < n_cached ? i : 0));
        }
      }
    }
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
      const int i = e == 0 ? head_edge : tail_edge;
      if (i < n_cached) { continue; }
      const Pack<T> in = LoadPack(x_row, column(i), cols);
      StoreElements(y_row, column(i), cols, OutputPack<T, kAlgorithm>(in, row_max, scale), slot(0));
    }
  }
}

}  // namespace oneflite::ep::primitive::cuda_softmax
