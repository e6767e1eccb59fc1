// Path 4 of the CUDA softmax family (softmax_kernels.cuh gives the overview):
// `block_registers`, a block per row, the row in its threads' registers, optionally with a
// tail of it cached in shared memory.
#pragma once

#include <cuda_pipeline_primitives.h>

#include <cuda/ptx>

#include "ep/primitive/softmax_block.cuh"

namespace oneflite::ep::primitive::cuda_softmax {

// How block_registers stores a pack of y where a vector store cannot go: y aligned otherwise
// than x (possible only for a y the caller gives), or a ragged row's pack that sticks out of it.
//  * kElements: element by element, each tested against the row's ends (ragged rows need it);
//  * kPack: element by element, untested: a whole row's packs lie in it whole;
//  * kNone: whole rows only, no fallback; LaunchBlockRegisters sends such a y to the ragged
//    kernel.
// The three compile to different schedules (NOTES items 53, 57 and 63): for whole rows the
// compiler computes kElements' tests once, ahead of the row loop (float 128 x 4: 56 registers
// where kPack takes 32, and about 100 instructions before the first load), and which schedule
// is faster depends on the window (WholeRowsFallback).
enum class StoreFallback { kElements, kPack, kNone };

// One block of kBlock threads per row, striding over rows; thread t holds window packs
// t, t + kBlock, ... (kPacks of them) in registers, as the warp path holds a row, and the block
// reduces as the block paths do (BlockAllReduce). Each element is loaded once, exp-ed once and
// stored once, with no shared-memory copy of the row. Whole packs move as vectors; the window's
// first and last packs, where they stick out of the row, are loaded by LoadPack element by
// element and stored element by element. cols <= kBlock * (kPacks + tail_slots) * P, so in-row
// positions are int.
//
// kCachedTail: the row's window packs past the registers' kBlock * kPacks (its tail) go to
// dynamic shared memory, up to `tail_slots` a thread, pack kPacks + s of thread t at slot
// s * kBlock + t, by cp.async requested right behind the register loads. A thread reads back
// only the slots it copied, so no barrier guards them. The tail is folded into the thread's
// max by the online normalizer (one exp an element) and exp-ed again in the output pass; the
// register part is exp-ed once, as without a tail.
//
// kRagged = false: every row starts on a 16-byte boundary and is whole packs (x aligned, cols a
// multiple of P), so a thread's packs are predicated vector loads with no edge to test, as on
// the warp path's kRagged = false rungs, and y's are vector stores whenever y is aligned as x
// is. PlansWholeRowsKernel says for which shapes the planner takes it. The cached tail needs
// kRagged.
//
// kFallback: how a pack of y is stored where a vector store cannot go (StoreFallback): ragged
// rows test each element against the row's ends; whole rows may store the pack's elements
// untested, or carry no fallback at all (WholeRowsFallback says which).
//
// kCarveout changes no instruction: it makes another copy of the kernel, whose launches prefer
// another split of the SM's L1 and shared memory. The preference belongs to the function, so the
// launches that keep the default carve-out need their own copy.
//  * kMaxL1: the smallest shared-memory carve-out (CarveoutBlocksPerSm), which holds small blocks
//    to fewer an SM than registers allow (HoldFloat128x4);
//  * kMaxShared: the largest, so the least L1 (CarveoutBlocksPerSm), for rows that start on
//    128-byte lines where the DRAM is narrow (PreferMaxShared).
//
// kReadAhead: thread 0 asks L2 for the bytes of x kReadAheadBytes past its row's (ReadAhead)
// before the row's loads; another copy of the kernel, like kCarveout's, so that the launches
// that do not read ahead keep their code (ReadsAheadPlanned says which do).
//
// kOneRow: a block a row and the grid the rows (no row loop), for rows that fill the shape
// exactly: cols = kBlock * kPacks * P on 16-byte boundaries, y aligned as x is (whole rows with
// no store fallback). Every position is then a constant, and no pack is tested against the row's
// end, as in a kernel written for one row length. LaunchBlockRegisters sends a y aligned
// otherwise, or a grid that is not the rows, to the ragged kernel; the planner takes it on short
// launches (kFloatOneRowShapes).
enum class Carveout { kDefault, kMaxL1, kMaxShared };

template <typename T, Algorithm kAlgorithm, int kBlock, int kPacks, bool kCachedTail = false,
          bool kRagged = true, StoreFallback kFallback = StoreFallback::kElements,
          Carveout kCarveout = Carveout::kDefault, bool kReadAhead = false, bool kOneRow = false>
__global__ void __launch_bounds__(kBlock)
    BlockRegisterSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                               int run_cols, bool y_vector_ok, int tail_slots, Stagger stagger) {
  static_assert(kRagged || !kCachedTail, "the cached tail's copies handle ragged rows only");
  static_assert(kFallback == StoreFallback::kElements || !kRagged,
                "ragged rows have edges to store element by element");
  static_assert(!kOneRow || (!kRagged && kFallback == StoreFallback::kNone && !kReadAhead),
                "one row a block takes whole rows that fill the shape, y aligned as x");
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  const int cols = kOneRow ? kBlock * kPacks * P : run_cols;
  __shared__ C posts[2][kBlock / kWarpSize];  // BlockAllReduce's, for the max and the sum
  extern __shared__ uint4 tail_cache[];
  const int tid = threadIdx.x;
  // This thread's tail slot 0; slot s is s * kBlock packs on.
  Pack<T>* const tail_slot = reinterpret_cast<Pack<T>*>(tail_cache) + tid;
  StaggerStart(stagger);
  // One pass for kOneRow: `row = rows` ends the loop, which the compiler then drops.
  for (int64_t row = blockIdx.x; row < rows; row = kOneRow ? rows : row + gridDim.x) {
    if constexpr (kReadAhead) {
      if (tid == 0) { ReadAhead(x, rows * cols, row * cols, cols); }
    }
    const T* x_row = x + row * cols;
    T* y_row = y + row * cols;
    const int head = kRagged ? HeadOffset(x_row) : 0;
    const int window = kRagged ? (head + cols + P - 1) / P : cols / P;
    // Every pack's load is issued before any loaded value is used. For the 16-bit types that
    // takes predicated vector loads of the whole packs (LoadPackOrNegativeInfinity), then the
    // window's edge packs element by element: after LoadPack's branches, the compiler splits the
    // 16-bit halves with instructions right behind each vector load, which wait for it, so a
    // thread's second load would leave only when its first had landed (0.81x copy at half 8192
    // on 512 x 2). float's values need no such instruction.
    // Rows of whole packs take the same loads with no edge packs (float's as plain loads, which
    // measured ahead of the predicated ones at 8192 and 32768 columns).
    Pack<T> packs[kPacks];
    // kOneRow's packs are all in the row: its loads are the vector loads alone.
    if constexpr ((!kRagged && kIs16Bit<T>) || kOneRow) {
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int k = tid + n * kBlock;
        packs[n] = LoadPackOrNegativeInfinity(x_row + k * P, kOneRow || k < window);
      }
    } else if constexpr (!kRagged) {
      const Pack<T>* x_packs = reinterpret_cast<const Pack<T>*>(x_row);
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int k = tid + n * kBlock;
        packs[n] = k < window ? x_packs[k] : NegativeInfinityPack<T>();
      }
    } else if constexpr (kIs16Bit<T>) {
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int k = tid + n * kBlock;
        const int c0 = k * P - head;
        packs[n] = LoadPackOrNegativeInfinity((x_row - head) + k * P,
                                              k < window && c0 >= 0 && c0 + P <= cols);
      }
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int k = tid + n * kBlock;
        const int c0 = k * P - head;
        if (k < window && (c0 < 0 || c0 + P > cols)) {
          packs[n] = LoadPackElements(x_row, c0, cols);
        }
      }
    } else {
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int k = tid + n * kBlock;
        packs[n] = k < window ? LoadPack(x_row, k * P - head, cols) : NegativeInfinityPack<T>();
      }
    }
    // The tail's copies: whole packs by cp.async, the row's last pack, if it sticks out of the
    // row, element by element (so no copy strays outside the tensor).
    const int tail =
        kCachedTail ? min(PacksOwned<kBlock>(window - kPacks * kBlock, tid), tail_slots) : 0;
    auto tail_column = [&](int s) { return (tid + (kPacks + s) * kBlock) * P - head; };
    if constexpr (kCachedTail) {
#pragma unroll 4
      for (int s = 0; s < tail; ++s) {
        const int c0 = tail_column(s);
        if (c0 + P <= cols) {
          __pipeline_memcpy_async(tail_slot + s * kBlock, x_row + c0, kPackBytes);
        } else {
          tail_slot[s * kBlock] = LoadPackElements(x_row, c0, cols);
        }
      }
      __pipeline_commit();
    }
    C v[kPacks * P];
    C m = WidenWithMax<T, kPacks>(packs, v);
    // The tail's (max, sum), starting from the registers' max.
    MaxSum<C> tail_stats{m, C(0)};
    if constexpr (kCachedTail) {
      __pipeline_wait_prior(0);
      constexpr int U = kBlockUnroll<T> / 2;
      for (int s0 = 0; s0 < tail; s0 += U) {
        Pack<T> cached[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          cached[u] = s0 + u < tail ? tail_slot[(s0 + u) * kBlock] : NegativeInfinityPack<T>();
        }
        FoldPacks<T, U>(tail_stats, cached, tail - s0);
      }
      m = tail_stats.max;
    }
    const C row_max = BlockAllReduce<kBlock>(m, posts[0], MaxOp<C>());
    C sum = 0;
    if constexpr (kCachedTail) {
      sum = tail_stats.sum * Exp<T>(tail_stats.max - SafeShift(row_max));
    }
#pragma unroll
    for (int i = 0; i < kPacks * P; ++i) { Shift<T, kAlgorithm>(v[i], row_max, sum); }
    const ShiftedOutput<T, kAlgorithm> output(BlockAllReduce<kBlock>(sum, posts[1], SumOp<C>()));
#pragma unroll
    for (int n = 0; n < kPacks; ++n) {
      const int k = tid + n * kBlock;
      const int c0 = k * P - head;
      if (!kOneRow && k >= window) { continue; }
      C out[P];
#pragma unroll
      for (int j = 0; j < P; ++j) { out[j] = output(v[n * P + j]); }
      constexpr bool kTested = kFallback == StoreFallback::kElements;
      if (kFallback == StoreFallback::kNone ||
          (y_vector_ok && (!kRagged || (c0 >= 0 && c0 + P <= cols)))) {
        *reinterpret_cast<Pack<T>*>(y_row + c0) = MakePack<T>(out);
      } else if constexpr (kFallback != StoreFallback::kNone) {
#pragma unroll
        for (int j = 0; j < P; ++j) {
          if (!kTested || (c0 + j >= 0 && c0 + j < cols)) {
            y_row[c0 + j] = FromCompute<T>(out[j]);
          }
        }
      }
    }
    if constexpr (kCachedTail) {
#pragma unroll 2
      for (int s = 0; s < tail; ++s) {
        const Pack<T> in = tail_slot[s * kBlock];
        C out[P];
#pragma unroll
        for (int j = 0; j < P; ++j) {
          C value = ToCompute(in.elem[j]);
          C unused = 0;
          Shift<T, kAlgorithm>(value, row_max, unused);
          out[j] = output(value);
        }
        const int c0 = tail_column(s);
        if (y_vector_ok && c0 + P <= cols) {
          StorePack(y_row + c0, MakePack<T>(out));
        } else {
#pragma unroll
          for (int j = 0; j < P; ++j) {
            if (c0 + j < cols) { y_row[c0 + j] = FromCompute<T>(out[j]); }
          }
        }
      }
    }
  }
}

// block_registers' shape of one pack a thread on kBlock threads, for rows of exactly kBlock
// whole packs (16-bit 1024 columns, float 512 on 128 threads) with x and y on 16-byte
// boundaries, the row brought into shared memory by the copy engine (sm_90 on: TMA's non-tensor
// bulk copy, cp.async.bulk) instead of by the threads' own 16-byte loads. One row a block, a
// block a row: thread 0 asks for the row's kBlock * 16 bytes with one instruction, whose
// completion an mbarrier counts; every thread waits on the mbarrier, takes its pack from shared
// memory, and the row goes on as in BlockRegisterSoftmaxKernel (the same arithmetic and
// reductions; y by the threads' vector stores). Measured against that kernel's 128 x 1 on an
// H100 (NOTES.md item 87). Built as an empty kernel for architectures before sm_90, which the
// planner never launches (BulkLoadRunsOn).
template <typename T, Algorithm kAlgorithm, int kBlock>
__global__ void __launch_bounds__(kBlock)
    BulkLoadSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int kCols = kBlock * P;
  constexpr uint32_t kRowBytes = kBlock * kPackBytes;
  __shared__ C posts[2][kBlock / kWarpSize];  // BlockAllReduce's, for the max and the sum
  __shared__ alignas(128) Pack<T> row_packs[kBlock];
  __shared__ uint64_t landed;  // the mbarrier: one arrival (thread 0's) and the row's bytes
  const int tid = threadIdx.x;
  const int64_t first = blockIdx.x * int64_t{kCols};
  if (tid == 0) {
    cuda::ptx::mbarrier_init(&landed, 1);
    // The initialization, visible to the copy engine before the copy completes on it.
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                         cuda::ptx::space_shared, &landed, kRowBytes);
    cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, row_packs,
                             x + first, kRowBytes, &landed);
  }
  __syncthreads();  // the mbarrier's initialization, before any thread waits on it
  while (!cuda::ptx::mbarrier_try_wait_parity(&landed, 0)) {}
  const Pack<T> pack = row_packs[tid];
  C v[P];
  const C row_max = BlockAllReduce<kBlock>(WidenWithMax<T>(&pack, v), posts[0], MaxOp<C>());
  C sum = 0;
#pragma unroll
  for (int j = 0; j < P; ++j) { Shift<T, kAlgorithm>(v[j], row_max, sum); }
  const ShiftedOutput<T, kAlgorithm> output(BlockAllReduce<kBlock>(sum, posts[1], SumOp<C>()));
  C out[P];
#pragma unroll
  for (int j = 0; j < P; ++j) { out[j] = output(v[j]); }
  *reinterpret_cast<Pack<T>*>(y + first + tid * P) = MakePack<T>(out);
#endif
}

}  // namespace oneflite::ep::primitive::cuda_softmax
