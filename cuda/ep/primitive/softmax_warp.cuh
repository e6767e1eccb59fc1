// Path 1 of the CUDA softmax family (softmax_kernels.cuh gives the overview): `warp`, a warp,
// or a group of lanes, per row, the row in its lanes' registers; max and sum are butterfly
// shuffles. Also the output helpers the other paths share (FromCompute, Shift, ShiftedOutput).
#pragma once

#include "ep/primitive/softmax_common.cuh"

namespace oneflite::ep::primitive::cuda_softmax {

constexpr int kWarpSize = 32;
constexpr int kWarpBlockSize = 128;
// The minimum-blocks hint for the register allocator, 0 for none. Left alone, ptxas holds the
// double kernels, whose library exp is long, to 64 registers and spills; "one block" lets it use
// what the row needs. For the other types no hint gives the fewest registers.
template <typename T>
constexpr int kWarpMinBlocksPerSm = std::is_same_v<T, double> ? 1 : 0;

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

// One rung of the warp ladder: kWidth lanes share a row, each holding kPacks packs of kBytes
// of it, kRows rows at once (0: as kGroupRows says), for rows of up to kMaxPacks whole packs (0:
// all kWidth * kPacks), and rows with edge columns of up to kMaxRaggedPacks (0: as kMaxPacks).
// The ladder's packs are 16 bytes and its rows kGroupRows' (but for one rung,
// ForEachWarpShape); only tools/softmax_lab.cu builds others, to measure what those choices buy.
template <int kWidth, int kPacks, int kBytes = kPackBytes, int kRows = 0, int kMaxPacks = 0,
          int kMaxRaggedPacks = 0>
struct WarpShape {
  static constexpr int width = kWidth;
  static constexpr int packs = kPacks;
  static constexpr int bytes = kBytes;
  static constexpr int rows = kRows;
  static constexpr int max_packs = (kMaxPacks > 0) ? kMaxPacks : kWidth * kPacks;
  static constexpr int max_ragged_packs = (kMaxRaggedPacks > 0) ? kMaxRaggedPacks : max_packs;
  static_assert(max_packs <= max_ragged_packs && max_ragged_packs <= kWidth * kPacks,
                "a rung takes ragged rows as long as whole ones, and within its slots");
};

// Rows a group handles at once: two while a lane's share of a row is at most 16 values, so that
// short rows keep more independent loads in flight per lane without costing occupancy.
template <typename T, int kPacks, int kBytes = kPackBytes>
constexpr int kWarpRows = kPacks * PackSize<T, kBytes>::value <= 16 ? 2 : 1;

// float rows of whole packs on 32 lanes of 3 or 4 packs take one row a group all the same: a
// block of one row a warp retires sooner, so the next rows start sooner, and a lane still has 3
// or 4 loads in flight. Rows with edge columns keep two, whose edges each lane fetches for both
// rows at once. Measured on an H100 (tools/softmax_lab.cu, the plan against rows=2, three
// rounds; fractions of copy at 98304 / 32768 rows): softmax 512 columns 0.993 -> 0.997 / 0.994
// -> 1.003 (Triton's kernel 0.995 / 0.990), 480 0.993 -> 0.996 / 0.998 -> 1.008, 388 0.984 ->
// 0.985 / 0.969 -> 0.975, 260 (32 x 3) 0.982 -> 0.979 / 0.977 -> 0.980; log_softmax 384 0.998
// -> 1.000 / 1.001 -> 1.011, 512 0.997 -> 0.997 / 1.001 -> 1.000; at 16384 rows up to +2.8%.
// With one row, ragged rows (449, 511 columns) lost up to 1.6% (NOTES.md, item 70).
template <typename T, int kWidth, int kPacks, bool kRagged>
constexpr bool kWarpWholeRowAlone =
    std::is_same_v<T, float> && !kRagged && kWidth == 32 && (kPacks == 3 || kPacks == 4);

template <typename T, int kWidth, int kPacks, bool kRagged, int kBytes, int kRowsAsked>
constexpr int kGroupRows =
    kRowsAsked > 0                                   ? kRowsAsked
    : kWarpWholeRowAlone<T, kWidth, kPacks, kRagged> ? 1
                                                     : kWarpRows<T, kPacks, kBytes>;

// Narrows one computed value to T, rounding to nearest even.
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

// The warp and block_registers paths hold a row in registers and exp each element once:
// softmax keeps exp(x - max) there, log_softmax keeps x - max. Either way exp(x - max) joins the
// row's sum.
template <typename T, Algorithm kAlgorithm>
__device__ __forceinline__ void Shift(ComputeType<T>& value, ComputeType<T> max,
                                      ComputeType<T>& sum) {
  if constexpr (kAlgorithm == Algorithm::kSoftmax) {
    value = Exp<T>(value - max);
    sum += value;
  } else {
    value -= max;
    sum += Exp<T>(value);
  }
}

// y from a Shift-ed value, given the row's sum: softmax multiplies by one reciprocal a row
// (within 1 ulp of dividing), log_softmax subtracts log(sum).
template <typename T, Algorithm kAlgorithm>
struct ShiftedOutput {
  using C = ComputeType<T>;
  __device__ __forceinline__ explicit ShiftedOutput(C sum)
      : scale(kAlgorithm == Algorithm::kSoftmax ? Reciprocal(sum) : RowLog<T>(sum)) {}
  // From a scale computed already (the log a group shares, below).
  __device__ __forceinline__ static ShiftedOutput FromScale(C scale) {
    ShiftedOutput output(C(1));
    output.scale = scale;
    return output;
  }
  __device__ __forceinline__ C operator()(C value) const {
    return kAlgorithm == Algorithm::kSoftmax ? value * scale : value - scale;
  }
  C scale;
};

// How many of a row's edge columns (below) one lane of a kWidth-lane group holds, with packs of
// P elements: a row has at most 2 * (P - 1), P - 1 before its first whole pack and P - 1 after
// its last.
template <int P, int kWidth>
constexpr int kWarpEdges = (2 * (P - 1) + kWidth - 1) / kWidth;

// x, y: (rows, cols) row-major. A warp takes (32 / kWidth) * kRows consecutive rows per step,
// striding over those row tiles. The row is held in registers in the compute type, so exp is
// computed once per element. cols < (32 * kPacks + 1) * P, far below 2^31, so in-row positions
// are int.
//
// A row that does not start or end on a 16-byte boundary (odd cols, or x a view with an offset)
// is split in two. The packs of its window (see HeadOffset) that lie wholly inside the row, at
// most cols / P of them, move as vectors, lane by lane from the first, exactly as an aligned
// row's packs do; the at most 2 * (P - 1) *edge columns* outside them, before the first whole
// pack and after the last, are spread over the group's lanes, one or a few scalars each. So a
// rung holds rows of up to kWidth * kPacks whole packs plus their edges: half 1025 columns
// takes the 32 x 4 rung of 1024, not 32 x 6 (0.97x copy against 0.95x; NOTES.md, item 26).
// Every lane runs the same code either way: edges cost each lane a few scalar accesses, where
// leaving them to the lanes whose packs straddle the row's ends made the whole warp wait on
// those lanes (half, cols = 1025: 0.73x copy, then 0.92x). The edge code is compiled in only
// where rows can have edges (kRagged: cols not a whole number of packs, or x off a 16-byte
// boundary); aligned launches measured up to 10% slower with it.
//
// kReadAhead: thread 0 asks L2 for the bytes of x kReadAheadBytes past its block's rows
// (ReadAhead), the block's kWarpsPerBlock tiles, which lie side by side, before their loads;
// another copy of the kernel, so that the rungs that do not read ahead keep their code
// (kWarpReadAheadShape says which do).
//
// kOneRow: a group a row (a warp, or two groups of 16 lanes) and a block a tile, for rows that
// fill a 32- or 16-lane rung exactly from a 16-byte boundary, x and y alike (kWarpOneRowRules
// says where). The columns are a constant, every pack is in the row and every store a vector: no
// row loop, no row end, no lead, no store fallback; a warp past the last row leaves at once, and
// a group of 16 past it (the second of the last warp, for an odd number of rows) reads the last
// row again, so that its lanes reach the shuffles with the others' values, and stores nothing.
template <typename T, Algorithm kAlgorithm, int kWidth, int kPacks, bool kRagged,
          int kBytes = kPackBytes, int kRowsAsked = 0, bool kReadAhead = false,
          bool kOneRow = false>
__global__ void __launch_bounds__(kWarpBlockSize, kWarpMinBlocksPerSm<T>)
    WarpSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int run_cols,
                      bool y_vector_ok) {
  using C = ComputeType<T>;
  using WarpPack = Pack<T, kBytes>;
  constexpr int P = PackSize<T, kBytes>::value;
  constexpr int kRows = kGroupRows<T, kWidth, kPacks, kRagged, kBytes, kRowsAsked>;
  static_assert(!kOneRow || ((kWidth == kWarpSize || kWidth == kWarpSize / 2) && kRows == 1 &&
                             !kRagged && !kReadAhead),
                "the one-row kernel takes a row a group of 32 or 16 lanes, of whole packs, and "
                "does not read ahead");
  const int cols = kOneRow ? kWidth * kPacks * P : run_cols;
  constexpr int kGroups = kWarpSize / kWidth;
  constexpr int kTileRows = kGroups * kRows;
  constexpr int kWarpsPerBlock = kWarpBlockSize / kWarpSize;
  constexpr int kEdges = kRagged ? kWarpEdges<P, kWidth> : 0;
  const C kNegInf = -static_cast<C>(CUDART_INF);
  __shared__ WarpPack scratch[kWarpBlockSize];
  const int lane = threadIdx.x % kWarpSize;
  const int group = lane / kWidth;
  const int lane_in_group = lane % kWidth;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int64_t num_warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;

  // The loop condition is per warp, not per group, so that every lane reaches every shuffle.
  // One pass for kOneRow: `tile = rows` ends the loop, which the compiler then drops.
  for (int64_t tile = warp * kTileRows; tile < rows;
       tile = kOneRow ? rows : tile + num_warps * kTileRows) {
    if constexpr (kReadAhead) {
      // Thread 0's tile is its block's first; the block's tiles end kWarpsPerBlock tiles on.
      if (threadIdx.x == 0) {
        ReadAhead(x, rows * cols, tile * cols, int64_t{kWarpsPerBlock} * kTileRows * cols);
      }
    }
    WarpPack packs[kRows][kPacks];        // the window's whole packs; -inf for the rest
    C e[kRows][kEdges > 0 ? kEdges : 1];  // this lane's edge columns; -inf past the edges
    int row_cols[kRows];  // cols, or 0 for a row past the end: then nothing is read or written
    int lead[kRows];      // edge columns [0, lead) come before the first whole pack
    int body_end[kRows];  // and [body_end, cols) after the last
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      int64_t row = tile + r * kGroups + group;  // adjacent groups take adjacent rows
      if constexpr (kOneRow && kGroups > 1) { row = min(row, rows - 1); }  // a group past: again
      row_cols[r] = kOneRow || row < rows ? cols : 0;  // kOneRow's row is now in range
      const T* x_row = x + row * cols;
      lead[r] = kOneRow ? 0 : min(row_cols[r], (P - HeadOffset<kBytes>(x_row)) % P);
      body_end[r] = lead[r] + (row_cols[r] - lead[r]) / P * P;
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int c0 = lead[r] + (n * kWidth + lane_in_group) * P;
        packs[r][n] =
            LoadPackOrNegativeInfinity<T, kBytes>(x_row + c0, kOneRow || c0 + P <= row_cols[r]);
      }
      const int edges = lead[r] + row_cols[r] - body_end[r];
#pragma unroll
      for (int k = 0; k < kEdges; ++k) {
        const int i = k * kWidth + lane_in_group;
        const int c = i < lead[r] ? i : body_end[r] + (i - lead[r]);
        e[r][k] = i < edges ? ToCompute(x_row[c]) : kNegInf;
      }
    }

    C v[kRows][kPacks * P];  // the packs widened, then Shift-ed
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int i = 0; i < kPacks * P; ++i) { v[r][i] = ToCompute(packs[r][i / P].elem[i % P]); }
    }

    C row_max[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      C m = PackMax<T, kBytes, kPacks>(packs[r]);
#pragma unroll
      for (int k = 0; k < kEdges; ++k) { m = Max(m, e[r][k]); }
      row_max[r] = GroupAllReduce<kWidth>(m, [](C a, C b) { return Max(a, b); });
    }

    C row_sum[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      C s = 0;
#pragma unroll
      for (int i = 0; i < kPacks * P; ++i) { Shift<T, kAlgorithm>(v[r][i], row_max[r], s); }
#pragma unroll
      for (int k = 0; k < kEdges; ++k) { Shift<T, kAlgorithm>(e[r][k], row_max[r], s); }
      row_sum[r] = GroupAllReduce<kWidth>(s, [](C a, C b) { return a + b; });
    }

    // float and double log_softmax: the group's kRows logs in one call of the library log,
    // lane r of the group taking row r's, then handed round by shuffles (a full logf is about 20
    // instructions, as many as a lane's values of a short row cost). Every lane of a group holds
    // the same bits of each row's sum, so every lane ends with the same bits of each log.
    constexpr bool kSharedLog =
        kAlgorithm == Algorithm::kLogSoftmax && !kIs16Bit<T> && kRows > 1 && kRows <= kWidth;
    C row_log[kRows];
    if constexpr (kSharedLog) {
      C mine = row_sum[0];
#pragma unroll
      for (int r = 1; r < kRows; ++r) {
        if (lane_in_group == r) { mine = row_sum[r]; }
      }
      const C log = RowLog<T>(mine);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        row_log[r] = __shfl_sync(0xffffffffu, log, group * kWidth + r);
      }
    }

#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t row = tile + r * kGroups + group;
      if (kOneRow && kGroups > 1 && row >= rows) { continue; }  // read again, stores nothing
      T* y_row = y + row * cols;
      const ShiftedOutput<T, kAlgorithm> output =
          kSharedLog ? ShiftedOutput<T, kAlgorithm>::FromScale(row_log[r])
                     : ShiftedOutput<T, kAlgorithm>(row_sum[r]);
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        C out[P];
#pragma unroll
        for (int j = 0; j < P; ++j) { out[j] = output(v[r][n * P + j]); }
        const WarpPack pack = MakePack<T, kBytes>(out);
        const int c0 = lead[r] + (n * kWidth + lane_in_group) * P;
        if (!kOneRow && c0 + P > row_cols[r]) { continue; }  // padding
        if (kOneRow || y_vector_ok) {
          StorePack(y_row + c0, pack);
        } else {
          StoreElements(y_row, c0, row_cols[r], pack, &scratch[threadIdx.x]);
        }
      }
      const int edges = lead[r] + row_cols[r] - body_end[r];
#pragma unroll
      for (int k = 0; k < kEdges; ++k) {
        const int i = k * kWidth + lane_in_group;
        const int c = i < lead[r] ? i : body_end[r] + (i - lead[r]);
        if (i < edges) { y_row[c] = FromCompute<T>(output(e[r][k])); }
      }
    }
  }
}

}  // namespace oneflite::ep::primitive::cuda_softmax
