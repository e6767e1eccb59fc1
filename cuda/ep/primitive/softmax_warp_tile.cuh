// Path 5 of the CUDA softmax family (softmax_kernels.cuh gives the overview): `warp_tile`,
// short rows a warp copies in tiles into shared memory, as a copy kernel would, and computes
// there with a few lanes a row.
#pragma once

#include <cuda_pipeline_primitives.h>

#include "ep/primitive/softmax_warp.cuh"

namespace oneflite::ep::primitive::cuda_softmax {

constexpr int kTileBlockSize = 128;

// One rung of the warp_tile ladder: kWidth lanes share a row, each holding up to kWords 32-bit
// words of it (two values of a 16-bit type, or one float); each warp takes kTiles tiles, the
// copy of the next in flight while it computes the one before. kMinBlocks: the blocks an SM must
// hold at once (__launch_bounds__); 0, the rule below, TileMinBlocks.
template <int kWidth, int kWords, int kTiles = 1, int kMinBlocks = 0>
struct TileShape {
  static constexpr int width = kWidth;
  static constexpr int words = kWords;
  static constexpr int tiles = kTiles;
  static constexpr int min_blocks = kMinBlocks;
};

// How many blocks of a warp_tile rung an SM holds at once, as the kernel's __launch_bounds__
// tells the compiler, which then keeps a thread within 65536 / (128 x blocks) registers. Left
// free, it spent 108-161 registers a thread on the unrolled rows (every word, and the exps'
// temporaries side by side), which leaves 3-4 blocks an SM: 77-102 KiB of copies in flight at
// 25.6 KiB a block, with no block overlapping its own arithmetic. Measured on an H200
// (tools/softmax_lab.cu, tile=WxKx2xM against the rung unbounded; fractions of copy, softmax and
// log_softmax alike unless said, two runs each):
//
//   16-bit, 25 words, 6 blocks (80 registers, no spill): half 100 (2 x 25) 0.90 -> 0.99-1.00,
//     bfloat16 100 0.89-0.91 -> 0.98-0.99, half 200 (4 x 25) 0.93-0.94 -> 0.97, 16-bit 400
//     (8 x 25) 0.93-0.95 -> 0.97-0.98; 7 blocks 0.5-1% behind, 4 or 5 blocks 0.91-0.92 at 100;
//   17 words, 6 blocks: float 68 (4 x 17) 0.94 -> 0.97, 16-bit 136 0.93-0.94 -> 0.96-0.97
//     (8 blocks 0.95-0.96);
//   9 and 13 words, 8 blocks (64 registers): float 36 (4 x 9) 0.885 -> 0.93, float 52 (4 x 13)
//     0.90 -> 0.93-0.94 (6 blocks 0.92), float 26 (2 x 13) 0.84 -> 0.94-0.95, 16-bit 52 0.82 ->
//     0.93-0.95, 16-bit 104 0.89-0.90 -> 0.92-0.935, 16-bit 72 0.87-0.89 -> 0.93;
//   float, 25 words: log_softmax on 6 once its outputs came from shared memory (TileRows).
//     Before, its logf spilled 20-56 bytes on 5-8 blocks and 4 was its best (float 100 0.935 ->
//     0.957-0.962); against those 4 blocks, 6 now gain: float 100 0.959-0.964 -> 0.975-0.978,
//     float 50 0.929-0.933 -> 0.987-0.992, float 200 0.963-0.967 -> 0.971-0.972. Softmax ran on 7
//     (72 registers; 6 spilled) while it held its exps through the row's sum: float 100 (4 x 25)
//     0.936 -> 0.963-0.969, float 50 (2 x 25) 0.916 -> 0.99-1.00, float 200 (8 x 25) 0.958 ->
//     0.965. Since its exps go to shared memory as they are summed, it compiles for 6 (80
//     registers, no spill), and on an H100 6 gained over 7: float 100 0.948 -> 0.973-0.978,
//     float 200 0.967-0.970 -> 0.977-0.983, float 50 level (NOTES item 83);
//   one lane a row (the 1 x 25 rung: float 25, 16-bit 50), unbounded at 92-120 registers, lost
//     under any bound (16-bit 50 0.96 -> 0.92-0.95 on 5-7 blocks; float 25 level): no bound.
template <int kWidth, int kWords>
constexpr int TileMinBlocks() {
  if constexpr (kWidth == 1) {
    return 1;
  } else if constexpr (kWords <= 13) {
    return 8;
  } else {
    return 6;
  }
}

// Rows of a warp's tile: one a group of kWidth lanes.
template <int kWidth>
constexpr int kTileRows = kWarpSize / kWidth;

// One tile, copied into `words` already (the copies this thread requested have landed, and the
// warp has passed __syncwarp): each group of kWidth lanes computes its row, lane l taking the
// row's words l, l + kWidth, ... into registers, and writes the outputs back over the inputs;
// then the warp stores the tile to y, which is 16-byte aligned where x is.
template <typename T, Algorithm kAlgorithm, int kWidth, int kWords>
__device__ __forceinline__ void TileRows(uint32_t* words, int n_words, int row_words, T* y_tile) {
  using C = ComputeType<T>;
  using Word = Pack<T, 4>;
  constexpr int kPerWord = PackSize<T, 4>::value;
  const int lane = threadIdx.x % kWarpSize;
  const int group = lane / kWidth;
  const int lane_in_group = lane % kWidth;
  const int live_words = group * row_words < n_words ? row_words : 0;  // 0: a row past the end
  uint32_t* const row = words + group * row_words;
  Word in[kWords];  // -inf past the row
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    const int i = k * kWidth + lane_in_group;
    PackWords<4> word;
    word.elem[0] = i < live_words ? row[i] : NegativeInfinityWord<T>(0);
    in[k] = FromWords<T>(word);
  }
  C v[kWords * kPerWord];
#pragma unroll
  for (int i = 0; i < kWords * kPerWord; ++i) {
    v[i] = ToCompute(in[i / kPerWord].elem[i % kPerWord]);
  }
  const C row_max =
      GroupAllReduce<kWidth>(PackMax<T, 4, kWords>(in), [](C a, C b) { return Max(a, b); });
  C sum = 0;
#pragma unroll
  for (int i = 0; i < kWords * kPerWord; ++i) {
    Shift<T, kAlgorithm>(v[i], row_max, sum);
    if constexpr (std::is_same_v<T, float> && kAlgorithm == Algorithm::kSoftmax) {
      // float softmax (a word a value) writes each exp over its x in shared memory as it sums
      // them, so that v dies here, not after the row's sum (TileMinBlocks).
      const int word = i * kWidth + lane_in_group;
      if (word < live_words) { row[word] = __float_as_uint(v[i]); }
    }
  }
  const ShiftedOutput<T, kAlgorithm> output(
      GroupAllReduce<kWidth>(sum, [](C a, C b) { return a + b; }));
  if constexpr (std::is_same_v<T, float>) {
    // float takes each output from shared memory rather than from v: softmax its exp, log_softmax
    // its x (x - max is one subtract). v, dead once summed, holds no registers through the
    // row's sum and logf, which spilled at 5-8 blocks an SM while it did (TileMinBlocks).
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      const int i = k * kWidth + lane_in_group;
      if (i < live_words) {
        const C kept = __uint_as_float(row[i]);
        row[i] = __float_as_uint(output(kAlgorithm == Algorithm::kSoftmax ? kept : kept - row_max));
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      const int i = k * kWidth + lane_in_group;
      C out[kPerWord];
#pragma unroll
      for (int j = 0; j < kPerWord; ++j) { out[j] = output(v[k * kPerWord + j]); }
      const Word word = MakePack<T, 4>(out);
      if (i < live_words) { memcpy(&row[i], &word, 4); }
    }
  }
  __syncwarp();

  const int n_packs = n_words / 4;
  auto* const y_words = reinterpret_cast<uint32_t*>(y_tile);
  for (int p = lane; p < n_packs; p += kWarpSize) {
    __stwb(reinterpret_cast<uint4*>(y_words) + p, reinterpret_cast<const uint4*>(words)[p]);
  }
  for (int w = 4 * n_packs + lane; w < n_words; w += kWarpSize) { y_words[w] = words[w]; }
}

// x, y: (rows, cols) row-major, both 16-byte aligned, a row a whole number of 32-bit words
// (cols * sizeof(T) % 4 == 0), float or a 16-bit type, and kTileRows<kWidth> rows a whole number
// of 16-byte packs. Each warp takes kTiles tiles of kTileRows<kWidth> consecutive rows, which lie
// back to back in x: one span of whole packs. For each, the warp
//
//   1. copies the span into its own slice of shared memory with cp.async, 16 bytes a lane, as a
//      copy kernel reads (no padding, no edge columns, whatever the rows' alignment);
//   2. computes the rows from there (TileRows);
//   3. stores the span to y as 16-byte packs.
//
// All of a warp's tiles are requested at once, so the copies of the later ones land while it
// computes the earlier ones; only __syncwarp orders the steps, so the SM's other warps overlap
// one warp's copies with their arithmetic too. Where the warp path spreads a row of 100 halves
// over 16 lanes of one 16-byte pack each (a quarter of them padding, plus the edge columns of
// every other row), here 2 lanes hold 25 words each, and a row's max and sum take one shuffle
// step each, not four. Blocks stride over the row tiles, in case the grid is capped.
template <typename T, Algorithm kAlgorithm, int kWidth, int kWords, int kTiles, int kMinBlocks>
__global__ void __launch_bounds__(kTileBlockSize,
                                  kMinBlocks > 0 ? kMinBlocks : TileMinBlocks<kWidth, kWords>())
    TileSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols) {
  static_assert(!std::is_same_v<T, double>, "rows of whole 32-bit words of T");
  constexpr int kPerWord = PackSize<T, 4>::value;
  constexpr int kRows = kTileRows<kWidth>;
  constexpr int kWarps = kTileBlockSize / kWarpSize;
  constexpr int64_t kBlockRows = int64_t{kWarps} * kTiles * kRows;
  extern __shared__ uint4 tile_smem[];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int row_words = cols / kPerWord;
  const int tile_words = kRows * row_words;
  uint32_t* const words = reinterpret_cast<uint32_t*>(tile_smem) + warp * kTiles * tile_words;
  for (int64_t block_row = blockIdx.x * kBlockRows; block_row < rows;
       block_row += gridDim.x * kBlockRows) {
    const int64_t first_row = block_row + int64_t{warp} * kTiles * kRows;
    const uint32_t* const x_words = reinterpret_cast<const uint32_t*>(x) + first_row * row_words;
    int n_words[kTiles];  // each tile's words: fewer in the tensor's last tile, 0 past the end
#pragma unroll
    for (int t = 0; t < kTiles; ++t) {
      const int64_t left = rows - (first_row + t * kRows);
      n_words[t] =
          static_cast<int>(max(int64_t{0}, min(static_cast<int64_t>(kRows), left))) * row_words;
    }
    // Tile t's copies are pipeline stage t. The tensor's last tile may end in 1-3 words past its
    // last whole pack; those are loaded through registers.
#pragma unroll
    for (int t = 0; t < kTiles; ++t) {
      const int base = t * tile_words;
      const int n_packs = n_words[t] / 4;
      for (int p = lane; p < n_packs; p += kWarpSize) {
        __pipeline_memcpy_async(words + base + 4 * p, x_words + base + 4 * p, kPackBytes);
      }
      __pipeline_commit();
      for (int w = 4 * n_packs + lane; w < n_words[t]; w += kWarpSize) {
        words[base + w] = __ldg(x_words + base + w);
      }
    }
#pragma unroll
    for (int t = 0; t < kTiles; ++t) {
      __pipeline_wait_prior(kTiles - 1 - t);  // tile t's copies, whatever later ones are in flight
      __syncwarp();
      if (n_words[t] > 0) {
        TileRows<T, kAlgorithm, kWidth, kWords>(words + t * tile_words, n_words[t], row_words,
                                                y + (first_row + t * kRows) * cols);
      }
    }
    __syncwarp();  // the block's next tiles overwrite shared memory
  }
}

}  // namespace oneflite::ep::primitive::cuda_softmax
