// The CUDA softmax kernel family behind the "softmax" and "log_softmax" primitives.
//
// A row-wise softmax moves the bytes of a copy (x read once, y written once), so the goal of
// every path is the device's copy bandwidth. Which path runs depends on the row length:
//
//   warp          the row lives in the registers of one warp, or of a smaller group of lanes
//                 for short rows; max and sum are butterfly shuffles. Reads x once.
//   block_smem    one block per row, the row cached in shared memory (up to the opt-in limit,
//                 about 227 KiB on Hopper), copied there asynchronously; while one block waits
//                 on its copy, the SM's other blocks compute. Reads x once.
//   block_online  one block per row for rows longer than its cache (rows past shared memory,
//                 or two blocks sharing an SM's): as much of the row as fits is cached, the rest
//                 is read twice, the second time usually from L2.
//   block_registers  one block per row, the row in its threads' registers (rows that fill one
//                 of its shapes: float 768-32768 columns, 16-bit 3585-4096 and 7169-8192).
//   warp_tile     short rows whose 32-bit word count is an odd 7-25 times 1, 2, 4 or 8 (half
//                 100: 50 words, 2 x 25): a warp copies two tiles of whole rows into shared
//                 memory as a copy kernel would, and computes each row there with a few lanes.
//                 Reads x once.
//
// Every path launches one block per tile of rows (SetGrid).
//
// Both block paths are one kernel (BlockSoftmaxKernel). Its first pass keeps a running
// (max, sum) pair per thread (the online normalizer), so max and sum come from one pass over
// the row, and x is never read a third time. NOTES.md beside this file explains each choice.
//
// All global accesses are 16-byte packs (4 floats, 8 halves or bfloat16s, 2 doubles). A row need
// not start on a 16-byte boundary (odd cols, or a view with a storage offset), so each row is
// seen through its *window*: the 16-byte-aligned packs that cover it. Packs wholly inside the
// row move as one vector. The warp path spreads the columns outside them (at most 2 * (P - 1)
// a row) over the lanes as scalars; the block path reads and writes the (at most two) packs that
// stick out of the row element by element. Everything outside the row reads as -inf, which
// never wins the max and adds exp(-inf) = 0 to the sum.
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
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "ep/cuda_stream.h"
#include "oneflite/ep/primitive/softmax.h"

// 1 builds the block paths' reductions on cub::BlockReduce, as the reference design does, for
// tools/softmax_lab.cu to measure against (see BlockAllReduce).
#ifndef ONEFLITE_SOFTMAX_CUB_REDUCE
#define ONEFLITE_SOFTMAX_CUB_REDUCE 0
#endif
#if ONEFLITE_SOFTMAX_CUB_REDUCE
#include <cub/block/block_reduce.cuh>
#endif

namespace oneflite::ep::primitive::cuda_softmax {

enum class Algorithm { kSoftmax, kLogSoftmax };

// ---- Element types -------------------------------------------------------------------------

// 16-bit types compute in float; double computes in double.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
constexpr bool kIs16Bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

constexpr int kPackBytes = 16;

// Elements per pack of kBytes (16 unless said otherwise): 4 floats, 8 halves or bfloat16s, 2
// doubles. Narrower packs exist only for the lab (see WarpShape).
template <typename T, int kBytes = kPackBytes>
struct PackSize {
  static constexpr int value = kBytes / static_cast<int>(sizeof(T));
};

template <typename T, int kBytes = kPackBytes>
struct alignas(kBytes) Pack {
  T elem[PackSize<T, kBytes>::value];
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
template <typename T, int kBytes = kPackBytes>
__device__ __forceinline__ Pack<T, kBytes> MakePack(const ComputeType<T>* v) {
  constexpr int P = PackSize<T, kBytes>::value;
  Pack<T, kBytes> pack;
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

// -inf's bits repeated over a 32-bit word: two 16-bit -infs, a float -inf, or, for double, the
// words of -inf in turn (low, then high).
template <typename T>
__device__ __forceinline__ uint32_t NegativeInfinityWord(int k) {
  if constexpr (std::is_same_v<T, __half>) {
    return 0xfc00fc00u;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return 0xff80ff80u;
  } else if constexpr (std::is_same_v<T, double>) {
    return k % 2 == 0 ? 0u : 0xfff00000u;
  } else {
    return 0xff800000u;
  }
}

// The built-in vector of kBytes bytes (uint4, uint2 or unsigned).
template <int kBytes>
using PackVector =
    std::conditional_t<kBytes == 16, uint4, std::conditional_t<kBytes == 8, uint2, unsigned>>;

// A pack's bytes as 32-bit words. Packs are built, selected and loaded as words: the compiler
// keeps a 16-bit element of a pack built element by element in a register of its own, and
// merging eight of those into four (and back) cost up to 20 byte-permutes a pack.
template <int kBytes>
using PackWords = Pack<uint32_t, kBytes>;

template <typename T, int kBytes>
__device__ __forceinline__ Pack<T, kBytes> FromWords(const PackWords<kBytes>& words) {
  Pack<T, kBytes> pack;
  memcpy(&pack, &words, kBytes);
  return pack;
}

template <typename T, int kBytes>
__device__ __forceinline__ PackWords<kBytes> NegativeInfinityWords() {
  static_assert(kBytes % 4 == 0, "packs are whole 32-bit words");
  PackWords<kBytes> words;
#pragma unroll
  for (int k = 0; k < kBytes / 4; ++k) { words.elem[k] = NegativeInfinityWord<T>(k); }
  return words;
}

template <typename T, int kBytes = kPackBytes>
__device__ __forceinline__ Pack<T, kBytes> NegativeInfinityPack() {
  return FromWords<T>(NegativeInfinityWords<T, kBytes>());
}

// Stores a pack as one vector store (st.global.wb, the default caching). A plain assignment of
// the pack may be compiled as one store a word when the compiler decides the address is not
// 16-byte aligned (it is: every caller checks), which once halved the warp path's 16-bit
// throughput.
template <typename T, int kBytes>
__device__ __forceinline__ void StorePack(T* to, const Pack<T, kBytes>& pack) {
  static_assert(sizeof(PackVector<kBytes>) == kBytes, "a pack is one vector");
  PackVector<kBytes> vector;
  memcpy(&vector, &pack, kBytes);
  __stwb(reinterpret_cast<PackVector<kBytes>*>(to), vector);
}

// The pack at `from` if `in_row`, else a pack of -inf; nothing is read then. One vector load
// (ld.global.nc: x is read-only for the kernel's whole run), for the same reason as StorePack.
template <typename T, int kBytes = kPackBytes>
__device__ __forceinline__ Pack<T, kBytes> LoadPackOrNegativeInfinity(const T* from,
                                                                      bool in_row) {
  PackWords<kBytes> words = NegativeInfinityWords<T, kBytes>();
  if (in_row) {
    const PackVector<kBytes> vector = __ldg(reinterpret_cast<const PackVector<kBytes>*>(from));
    memcpy(&words, &vector, kBytes);
  }
  return FromWords<T>(words);
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

// The max of the elements of kCount packs. 16-bit packs are reduced in pairs by the packed max
// instructions (which also drop a NaN operand) and widened once: half the instructions.
template <typename T, int kBytes, int kCount = 1>
__device__ __forceinline__ ComputeType<T> PackMax(const Pack<T, kBytes>* packs) {
  constexpr int P = PackSize<T, kBytes>::value;
  if constexpr (kIs16Bit<T>) {
    using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    Pair m = reinterpret_cast<const Pair*>(packs[0].elem)[0];
#pragma unroll
    for (int n = 0; n < kCount; ++n) {
      const auto* pairs = reinterpret_cast<const Pair*>(packs[n].elem);
#pragma unroll
      for (int j = n == 0 ? 1 : 0; j < P / 2; ++j) { m = __hmax2(m, pairs[j]); }
    }
    return Max(ToCompute(m.x), ToCompute(m.y));
  } else {
    ComputeType<T> m = packs[0].elem[0];
#pragma unroll
    for (int n = 0; n < kCount; ++n) {
#pragma unroll
      for (int j = n == 0 ? 1 : 0; j < P; ++j) { m = Max(m, packs[n].elem[j]); }
    }
    return m;
  }
}

template <typename T, int kBytes>
__device__ __forceinline__ ComputeType<T> PackMax(const Pack<T, kBytes>& pack) {
  return PackMax<T, kBytes, 1>(&pack);
}

// float and double use the accurate library exp (float: within 2 ulp). The 16-bit types use
// the hardware exp2 on x * log2(e), a multiply and one MUFU.EX2: a few ulp of float for the
// arguments softmax feeds it (x - max <= 0), far below half and bfloat16 rounding. Those types
// move the fewest bytes per element, so their kernels are the ones bound by instruction issue
// rather than memory, and exp is most of their arithmetic. The flush-to-zero form is used
// because the plain one wraps MUFU.EX2 in three more instructions to produce results below
// 2^-126, which half cannot hold at all and bfloat16 holds only as subnormals; they become 0.
__device__ __forceinline__ float FastExp(float v) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v * 1.4426950408889634f));
  return r;
}

template <typename T>
__device__ __forceinline__ ComputeType<T> Exp(ComputeType<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    return exp(v);
  } else if constexpr (std::is_same_v<T, float>) {
    return expf(v);
  } else {
    return FastExp(v);
  }
}

// 1 / v for a row's sum (at least 1 and below 2^31, or NaN): the hardware's approximate
// reciprocal (one MUFU.RCP, within an ulp of float) refined by Newton steps, each of which
// doubles the correct bits, to within an ulp. Dividing instead would pull in the division's
// out-of-line slow path, whose call costs registers, and __fdividef wraps the MUFU.RCP in five
// instructions that rescale huge and tiny v, which a row's sum never is.
template <typename C>
__device__ __forceinline__ C Reciprocal(C v) {
  float approx;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(approx) : "f"(static_cast<float>(v)));
  C r = approx;
  r = fma(r, fma(-v, r, C(1)), r);
  if constexpr (std::is_same_v<C, double>) { r = fma(r, fma(-v, r, C(1)), r); }
  return r;
}

template <typename C>
__device__ __forceinline__ C Log(C v) {
  if constexpr (std::is_same_v<C, double>) {
    return log(v);
  } else {
    return logf(v);
  }
}

// log(sum) of a row's sum (at least 1, or NaN) for the warp and warp_tile paths' log_softmax,
// where a 16-bit row of 100 columns pays for logf's twenty instructions on 8 values a lane. The
// 16-bit types take MUFU.LG2 (within 2^-22.6 of log2, absolute) times ln(2), except just above 1,
// where log(sum) itself is tiny and that absolute error is not: for t = sum - 1 < 2^-10 (exact,
// sum being in [1, 2)) the series t - t^2 / 2 + t^3 / 3, within t^4 / 4 < 2^-42 of log(1 + t).
// At t = 2^-10 the MUFU.LG2 form is within 1.1e-7 absolute of log(sum) = 9.8e-4: 1.1e-4 relative,
// a quarter of half's rounding (4.9e-4), and every other output, (x - max) - log(sum), is larger.
// Both forms are computed and one is selected: a branch on the sum, as logf below 2 once was,
// diverges across the rows of a warp with typical data (randn * 3, 100 columns: most warps
// held a row whose sum was under 2 and ran both sides).
template <typename T>
__device__ __forceinline__ ComputeType<T> RowLog(ComputeType<T> sum) {
  if constexpr (kIs16Bit<T>) {
    float log2_sum;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(log2_sum) : "f"(sum));
    const float t = sum - 1.0f;
    const float series = t * fmaf(t, fmaf(t, 1.0f / 3.0f, -0.5f), 1.0f);
    return t < 0x1p-10f ? series : log2_sum * 0.6931471805599453f;
  } else {
    return Log(sum);
  }
}

// ---- Row windows ----------------------------------------------------------------------------

// How many elements the row starting at `row` sits past the kBytes boundary (16 bytes unless
// said otherwise) at or before it. The row's window starts there, so window pack k covers row
// columns [k * P - head, ... + P).
template <int kBytes = kPackBytes, typename T>
__device__ __forceinline__ int HeadOffset(const T* row) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(row) % kBytes) /
         static_cast<int>(sizeof(T));
}

// The window pack whose first element is row column `c0`, loaded element by element: columns
// outside [0, cols) read as -inf and are never touched in memory.
template <typename T, typename Index>
__device__ __forceinline__ Pack<T> LoadPackElements(const T* row, Index c0, Index cols) {
  Pack<T> pack;
#pragma unroll
  for (int j = 0; j < PackSize<T>::value; ++j) {
    const Index c = c0 + j;
    pack.elem[j] = (c >= 0 && c < cols) ? row[c] : NegativeInfinity<T>();
  }
  return pack;
}

// Loads the window pack whose first element is row column `c0` (negative for the head pack of
// a row that starts off a 16-byte boundary): one vector load when the pack lies in the row,
// else element by element, so no access strays outside the tensor.
template <typename T, typename Index>
__device__ __forceinline__ Pack<T> LoadPack(const T* row, Index c0, Index cols) {
  constexpr int P = PackSize<T>::value;
  if (c0 >= 0 && c0 + P <= cols) { return *reinterpret_cast<const Pack<T>*>(row + c0); }
  if (c0 >= cols || c0 + P <= 0) { return NegativeInfinityPack<T>(); }  // wholly outside
  return LoadPackElements(row, c0, cols);
}

// Stores the in-row columns of a window pack one element at a time, reading them back from
// `scratch`, the calling thread's own 16-byte slot of shared memory. Stores picked straight
// out of the pack's registers would need each element in a register of its own, which costs
// registers (and so occupancy) in every kernel that merely might take this path, although only
// the packs at a row's ends take it, and every pack when y's alignment differs from x's.
template <typename T, int kBytes, typename Index>
__device__ __forceinline__ void StoreElements(T* row, Index c0, Index cols,
                                              const Pack<T, kBytes>& pack,
                                              Pack<T, kBytes>* scratch) {
  *scratch = pack;
  const int begin = c0 < 0 ? static_cast<int>(-c0) : 0;
  constexpr int P = PackSize<T, kBytes>::value;
  const int end = cols - c0 < P ? static_cast<int>(cols - c0) : P;
#pragma unroll 1
  for (int j = begin; j < end; ++j) { row[c0 + j] = scratch->elem[j]; }
}

// Whether every row of a launch is whole 16-byte packs from a 16-byte boundary: x aligned and
// cols a whole number of packs. Rows that are not are *ragged*: they may have edge columns.
template <typename T>
inline bool WholePackRows(int64_t cols, bool x_aligned) {
  return x_aligned && cols % PackSize<T>::value == 0;
}

// The most window packs any row of a (rows, cols) launch can need: cols / P for whole-pack
// rows; otherwise a row may sit up to P - 1 elements past a boundary, which can cost one more
// pack.
template <typename T>
inline int64_t MaxWindowPacks(int64_t cols, bool x_aligned) {
  constexpr int P = PackSize<T>::value;
  if (WholePackRows<T>(cols, x_aligned)) { return cols / P; }
  return (cols + 2 * P - 2) / P;
}

// ---- Path 1: a warp (or a group of lanes) per row --------------------------------------------

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
// of it, kRows rows at once (0: as kWarpRows says), for rows of up to kMaxPacks whole packs (0:
// all kWidth * kPacks). The ladder's packs are 16 bytes and its rows kWarpRows' (but for one
// rung, ForEachWarpShape); only tools/softmax_lab.cu builds others, to measure what those
// choices buy.
template <int kWidth, int kPacks, int kBytes = kPackBytes, int kRows = 0, int kMaxPacks = 0>
struct WarpShape {
  static constexpr int width = kWidth;
  static constexpr int packs = kPacks;
  static constexpr int bytes = kBytes;
  static constexpr int rows = kRows;
  static constexpr int max_packs = kMaxPacks > 0 ? kMaxPacks : kWidth * kPacks;
};

// Rows a group handles at once: two while a lane's share of a row is at most 16 values, so that
// short rows keep more independent loads in flight per lane without costing occupancy.
template <typename T, int kPacks, int kBytes = kPackBytes>
constexpr int kWarpRows = kPacks * PackSize<T, kBytes>::value <= 16 ? 2 : 1;

template <typename T, int kPacks, int kBytes, int kRowsAsked>
constexpr int kGroupRows = kRowsAsked > 0 ? kRowsAsked : kWarpRows<T, kPacks, kBytes>;

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
template <typename T, Algorithm kAlgorithm, int kWidth, int kPacks, bool kRagged,
          int kBytes = kPackBytes, int kRowsAsked = 0>
__global__ void __launch_bounds__(kWarpBlockSize, kWarpMinBlocksPerSm<T>)
    WarpSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols,
                      bool y_vector_ok) {
  using C = ComputeType<T>;
  using WarpPack = Pack<T, kBytes>;
  constexpr int P = PackSize<T, kBytes>::value;
  constexpr int kRows = kGroupRows<T, kPacks, kBytes, kRowsAsked>;
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
  for (int64_t tile = warp * kTileRows; tile < rows; tile += num_warps * kTileRows) {
    WarpPack packs[kRows][kPacks];  // the window's whole packs; -inf for the rest
    C e[kRows][kEdges > 0 ? kEdges : 1];  // this lane's edge columns; -inf past the edges
    int row_cols[kRows];  // cols, or 0 for a row past the end: then nothing is read or written
    int lead[kRows];      // edge columns [0, lead) come before the first whole pack
    int body_end[kRows];  // and [body_end, cols) after the last
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t row = tile + r * kGroups + group;  // adjacent groups take adjacent rows
      row_cols[r] = row < rows ? cols : 0;
      const T* x_row = x + row * cols;
      lead[r] = min(row_cols[r], (P - HeadOffset<kBytes>(x_row)) % P);
      body_end[r] = lead[r] + (row_cols[r] - lead[r]) / P * P;
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int c0 = lead[r] + (n * kWidth + lane_in_group) * P;
        packs[r][n] = LoadPackOrNegativeInfinity<T, kBytes>(x_row + c0, c0 + P <= row_cols[r]);
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
        if (c0 + P > row_cols[r]) { continue; }  // padding
        if (y_vector_ok) {
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
      // The lab's blocks of 3 or 6 warps: every thread folds the posts in the same order.
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
// to float, twice the shared memory, and never converts it again.
template <typename T, Algorithm kAlgorithm, int kBlock, bool kAsyncCopy = true,
          bool kOnlineNormalizer = true, typename Cache = T, int kHeld = 0>
__global__ void __launch_bounds__(kBlock, kMaxBlockSize<T> / kBlock)
    BlockSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t cols,
                       int cached_packs, bool y_vector_ok, Stagger stagger) {
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  constexpr int U = kBlockUnroll<T>;
  // A cached pack: P elements of T, as loaded (16 bytes) or widened.
  using CachePack = Pack<Cache, P * static_cast<int>(sizeof(Cache))>;
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
      StoreElements(y_row, column(i), cols, OutputPack<T, kAlgorithm>(in, row_max, scale),
                    slot(0));
    }
  }
}

// ---- Path 4: a block per row, the row in registers ---------------------------------------------

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
// kMaxL1 changes no instruction: it makes a second copy of the kernel, whose launches prefer the
// smallest shared-memory carve-out (MaxL1BlocksPerSm), which holds small blocks to fewer an SM
// than registers allow (HoldFloat128x4). The preference belongs to the function, so the
// launches that keep the default carve-out need the other copy.
template <typename T, Algorithm kAlgorithm, int kBlock, int kPacks, bool kCachedTail = false,
          bool kRagged = true, StoreFallback kFallback = StoreFallback::kElements,
          bool kMaxL1 = false>
__global__ void __launch_bounds__(kBlock)
    BlockRegisterSoftmaxKernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                               int cols, bool y_vector_ok, int tail_slots, Stagger stagger) {
  static_assert(kRagged || !kCachedTail, "the cached tail's copies handle ragged rows only");
  static_assert(kFallback == StoreFallback::kElements || !kRagged,
                "ragged rows have edges to store element by element");
  using C = ComputeType<T>;
  constexpr int P = PackSize<T>::value;
  __shared__ C posts[2][kBlock / kWarpSize];  // BlockAllReduce's, for the max and the sum
  extern __shared__ uint4 tail_cache[];
  const int tid = threadIdx.x;
  // This thread's tail slot 0; slot s is s * kBlock packs on.
  Pack<T>* const tail_slot = reinterpret_cast<Pack<T>*>(tail_cache) + tid;
  StaggerStart(stagger);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
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
    if constexpr (!kRagged && kIs16Bit<T>) {
#pragma unroll
      for (int n = 0; n < kPacks; ++n) {
        const int k = tid + n * kBlock;
        packs[n] = LoadPackOrNegativeInfinity(x_row + k * P, k < window);
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
#pragma unroll
    for (int n = 0; n < kPacks; ++n) {
#pragma unroll
      for (int j = 0; j < P; ++j) { v[n * P + j] = ToCompute(packs[n].elem[j]); }
    }
    C m = v[0];
#pragma unroll
    for (int i = 1; i < kPacks * P; ++i) { m = Max(m, v[i]); }
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
      if (k >= window) { continue; }
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

// ---- Path 5: warp_tile, a warp's tile of short rows staged through shared memory -------------

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
//   float, 25 words: softmax on 7 blocks (72 registers, no spill; 6 spilled), float 100 (4 x 25)
//     0.936 -> 0.963-0.969, float 50 (2 x 25) 0.916 -> 0.99-1.00, float 200 (8 x 25) 0.958 ->
//     0.965; log_softmax on 6 once its outputs came from shared memory (TileRows). Before, its
//     logf spilled 20-56 bytes on 5-8 blocks and 4 was its best (float 100 0.935 -> 0.957-0.962);
//     against those 4 blocks, 6 now gain: float 100 0.959-0.964 -> 0.975-0.978, float 50
//     0.929-0.933 -> 0.987-0.992, float 200 0.963-0.967 -> 0.971-0.972;
//   one lane a row (the 1 x 25 rung: float 25, 16-bit 50), unbounded at 92-120 registers, lost
//     under any bound (16-bit 50 0.96 -> 0.92-0.95 on 5-7 blocks; float 25 level): no bound.
template <typename T, Algorithm kAlgorithm, int kWidth, int kWords>
constexpr int TileMinBlocks() {
  if constexpr (kWidth == 1) {
    return 1;
  } else if constexpr (kWords <= 13) {
    return 8;
  } else if constexpr (std::is_same_v<T, float> && kWords > 17 &&
                       kAlgorithm == Algorithm::kSoftmax) {
    return 7;
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
__device__ __forceinline__ void TileRows(uint32_t* words, int n_words, int row_words,
                                         T* y_tile) {
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
  for (int i = 0; i < kWords * kPerWord; ++i) { Shift<T, kAlgorithm>(v[i], row_max, sum); }
  const ShiftedOutput<T, kAlgorithm> output(
      GroupAllReduce<kWidth>(sum, [](C a, C b) { return a + b; }));
  if constexpr (std::is_same_v<T, float> && kAlgorithm == Algorithm::kLogSoftmax) {
    // float log_softmax takes each output from x, still in shared memory, rather than from v:
    // x - max is one subtract, and v, dead once summed, holds no registers through the row's
    // logf, which spilled at 5-8 blocks an SM while it did (TileMinBlocks).
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      const int i = k * kWidth + lane_in_group;
      if (i < live_words) { row[i] = __float_as_uint(output(__uint_as_float(row[i]) - row_max)); }
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
__global__ void __launch_bounds__(
    kTileBlockSize, kMinBlocks > 0 ? kMinBlocks : TileMinBlocks<T, kAlgorithm, kWidth, kWords>())
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
      n_words[t] = static_cast<int>(max(int64_t{0}, min(static_cast<int64_t>(kRows), left))) *
                   row_words;
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
// The dynamic shared memory that holds `kernel` to `blocks` blocks of `block_size` threads an
// SM where more would fit, without taking L1 from it: the first call for a (kernel, device)
// prefers a carve-out of kHoldCarveoutBytes for the kernel (the driver otherwise sizes shared
// memory for the most blocks) and the blocks are given enough dynamic shared memory that
// `blocks` fit in it and one more does not. 0 where the occupancy calculator does not then
// answer `blocks` (the preference set back). Launches of the kernel with less shared memory
// keep the smaller carve-out: the blocks they have fit in it.
size_t HoldBlocksPerSmSmem(const void* kernel, const CudaDeviceInfo& info, int block_size,
                           int blocks);
// The carve-out HoldBlocksPerSmSmem prefers: one every architecture since sm_80 offers, small
// enough that L1 keeps nearly all of the SM's 256 KiB (a shared-memory limit of 3 blocks a
// 228 KiB carve-out would take, and L1 with it, measured 1.4% slower). The driver takes a
// preference as a hint: a probe that counted the blocks an SM ran at once (H200) found it kept
// for these 512-thread blocks (3 an SM, as the occupancy calculator answers) but not for
// 128-thread blocks with 1248 bytes (14 an SM where the calculator answered 7).
constexpr int kHoldCarveoutBytes = 16 * 1024;
// How many blocks of `block_size` threads, with no dynamic shared memory, fit on an SM once
// `kernel` prefers the smallest carve-out (cudaSharedmemCarveoutMaxL1), which the first call for
// a (kernel, device) sets. Each block still needs its static shared memory and the 1 KiB the
// driver reserves for it (sm_80 on), so on an H200's 8 KiB carve-out 128-thread blocks of the
// block_registers kernel fit 7 an SM; the probe above counted 7 at once, and 16 with the
// default carve-out.
int MaxL1BlocksPerSm(const void* kernel, const CudaDeviceInfo& info, int block_size);
// The facts launches are planned from, for the current device: what Describe plans with,
// where Launch has its stream's copy.
const CudaDeviceInfo& CurrentDeviceInfo();

enum class Path { kWarp, kBlockSmem, kBlockOnline, kBlockRegisters, kWarpTile };

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
  bool ragged = false;  // rows may have edge columns (WarpSoftmaxKernel, block_registers)
  // warp_tile path (and width, cols_per_thread as for the warp path; a tile is 32 / width rows).
  int tiles_per_warp = 0;
  // All paths.
  int block = 0;
  // Block paths.
  int cached_packs = 0;
  size_t smem = 0;
  // The grid: one block per tile of rows (`tiles`), or, when `persistent`, only the blocks that
  // fit on the device at once (`active_per_sm` on each SM), each striding over the tiles.
  int64_t tiles = 0;
  int active_per_sm = 0;
  bool persistent = false;
  int grid = 0;
  Stagger stagger;  // block paths (see StaggerStart)
  // block_registers: blocks an SM held below what registers allow, by `smem` of shared memory
  // the kernel does not use (HoldBlocksPerSmSmem) or, when `max_l1`, by the smallest carve-out
  // (MaxL1BlocksPerSm); 0 when not held.
  int held_per_sm = 0;
  bool max_l1 = false;
  LaunchFn launch = nullptr;
};

std::string ToString(const Plan& plan);

// y may sit at another offset from a 16-byte boundary than x (say x is a view with a storage
// offset and y is fresh): then stores go element by element.
template <int kBytes = kPackBytes>
inline bool SameAlignment(const void* x, const void* y) {
  return ((reinterpret_cast<uintptr_t>(x) ^ reinterpret_cast<uintptr_t>(y)) % kBytes) == 0;
}

template <typename T, Algorithm kAlgorithm, typename Shape, bool kRagged>
void LaunchWarp(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                void* y) {
  WarpSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::packs, kRagged, Shape::bytes, Shape::rows>
      <<<plan.grid, kWarpBlockSize, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                 rows, static_cast<int>(cols),
                                                 SameAlignment<Shape::bytes>(x, y));
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

template <typename T, Algorithm kAlgorithm, typename Shape>
void LaunchTile(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                void* y) {
  TileSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::words, Shape::tiles, Shape::min_blocks>
      <<<plan.grid, kTileBlockSize, plan.smem, stream>>>(static_cast<const T*>(x),
                                                          static_cast<T*>(y), rows,
                                                          static_cast<int>(cols));
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

template <typename T, Algorithm kAlgorithm, int kBlock, bool kAsyncCopy = true,
          bool kOnlineNormalizer = true, typename Cache = T, int kHeld = 0>
void LaunchBlock(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols, const void* x,
                 void* y) {
  BlockSoftmaxKernel<T, kAlgorithm, kBlock, kAsyncCopy, kOnlineNormalizer, Cache, kHeld>
      <<<plan.grid, kBlock, plan.smem, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                 rows, cols, plan.cached_packs,
                                                 SameAlignment(x, y), plan.stagger);
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

template <typename T, Algorithm kAlgorithm, int kBlock, int kPacks, bool kCachedTail = false,
          bool kRagged = true, StoreFallback kFallback = StoreFallback::kElements,
          bool kMaxL1 = false>
void LaunchBlockRegisters(const Plan& plan, cudaStream_t stream, int64_t rows, int64_t cols,
                          const void* x, void* y) {
  if constexpr (kFallback == StoreFallback::kNone) {
    if (!SameAlignment(x, y)) {  // y's packs would straddle 16-byte boundaries
      LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks>(plan, stream, rows, cols, x, y);
      return;
    }
  }
  BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, kCachedTail, kRagged, kFallback,
                             kMaxL1><<<plan.grid, kBlock, plan.smem, stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), rows, static_cast<int>(cols),
      SameAlignment(x, y), plan.cached_packs / kBlock, plan.stagger);
  ONEFLITE_CUDA_CHECK_LAUNCH();
}

// The warp ladder, shortest rows first. Rungs below 32 lanes hold one pack per lane, except
// float's 8 x 2, which takes rows of 9-16 packs (33-64 columns) in place of 16 x 1, and 16 x 2,
// which takes rows of 17-32 packs in place of 32 x 1 for every dtype but double (kWarpShapeFor);
// with 32 lanes the packs per lane grow in steps that keep the padding small. A dtype uses the
// rungs that keep its row within 64 registers a lane (float and half: 2048 cols), 96 for bfloat16
// (3072 cols; 138 registers in all, no spills), or 16 for double (256 cols), whose exp needs
// many registers of its own (kWarpLaneBytes).
template <typename Fn>
void ForEachWarpShape(Fn&& fn) {
  fn(WarpShape<1, 1>{});
  fn(WarpShape<2, 1>{});
  fn(WarpShape<4, 1>{});
  fn(WarpShape<8, 1>{});
  fn(WarpShape<8, 2>{});
  fn(WarpShape<16, 1>{});
  fn(WarpShape<16, 2>{});
  fn(WarpShape<32, 1>{});
  // 32 x 2 twice: two rows a group (kWarpRows) for rows of up to 55 packs, one row for rows
  // that fill 7/8 of the rung or more. One row measured (tools/softmax_lab.cu, rows=1, H200;
  // softmax / log_softmax, fractions of copy): float 256 columns 0.965 -> 0.986 / 0.970 ->
  // 0.983, half 512 0.968 -> 0.988 / 0.965 -> 0.985, half 448 +0.5%, float 192-240 level; and
  // behind on rows that fill less: float 160 0.986 -> 0.967 / 0.983 -> 0.930, 176 0.984 ->
  // 0.979 / 0.983 -> 0.947, half 384 0.969 -> 0.961.
  fn(WarpShape<32, 2, kPackBytes, 0, 55>{});
  fn(WarpShape<32, 2, kPackBytes, 1>{});
  fn(WarpShape<32, 3>{});
  fn(WarpShape<32, 4>{});
  fn(WarpShape<32, 6>{});
  fn(WarpShape<32, 8>{});
  fn(WarpShape<32, 12>{});
  fn(WarpShape<32, 16>{});
}

// The bytes of compute values a lane may hold (see ForEachWarpShape). bfloat16 goes up to the
// 32 x 12 rung (3072 cols), half stops at 32 x 8 (2048) as float does: at 3072 cols the rung
// measured 0.98x copy for bfloat16 but 0.90x for half, which reaches 0.93-0.98x on block_smem's
// 64 threads there (bfloat16 0.91x; H200, tools/softmax_lab.cu). Why half loses on that rung is
// not understood.
template <typename T>
constexpr int kWarpLaneBytes = std::is_same_v<T, double>          ? 64
                               : std::is_same_v<T, __nv_bfloat16> ? 384
                                                                  : 256;

template <typename T, typename Shape>
constexpr bool kWarpShapeFits =
    Shape::packs * PackSize<T>::value * sizeof(ComputeType<T>) <= kWarpLaneBytes<T>;

// The rungs each dtype skips, of two that hold the same packs. 16 packs: float takes 8 x 2 and
// not 16 x 1, the others the reverse. Measured on an H200 (tools/softmax_lab.cu, warp=8x2
// against 16 x 1): float 64 columns 0.95 -> 0.97-0.98x copy, 40 columns 0.90 -> 0.92-0.93
// (log_softmax 0.84 -> 0.92-0.93), 48 level to +2%: a quarter of the warp a row, so fewer
// shuffles and twice the values a lane per row's overhead. Half measured level there (100
// columns, 0.87 against 0.86), so the 16-bit types keep 16 x 1. 32 packs: float and the 16-bit
// types take 16 x 2 and not 32 x 1, for the same reasons (warp=16x2 against 32 x 1, softmax /
// log_softmax): float 80 columns 0.86 -> 0.94 / 0.78-0.82 -> 0.945, 96 0.95 -> 0.987 /
// 0.88-0.92 -> 0.98, 112 0.97 -> 0.98, 128 0.993 -> 1.000 / 0.987 -> 1.001; half 160 0.79 ->
// 0.935 / 0.785 -> 0.91, 192 0.90 -> 0.98 / 0.895 -> 0.97, 256 0.98 -> 0.99; bfloat16 160
// 0.77 -> 0.905 / 0.76 -> 0.89, 224 0.92 -> 0.98 / 0.915 -> 0.97, 256 0.98 -> 0.995; ragged
// rows (float 127, half 250) +0.5-2%. double, not measured, keeps 32 x 1.
template <typename Shape, int kWidth, int kPacks>
constexpr bool kIsRung = Shape::width == kWidth && Shape::packs == kPacks;

template <typename T, typename Shape>
constexpr bool kWarpShapeSkipped =
    std::is_same_v<T, float>    ? kIsRung<Shape, 16, 1> || kIsRung<Shape, 32, 1>
    : std::is_same_v<T, double> ? kIsRung<Shape, 8, 2> || kIsRung<Shape, 16, 2>
                                : kIsRung<Shape, 8, 2> || kIsRung<Shape, 32, 1>;

// Whether dtype T climbs rung Shape.
template <typename T, typename Shape>
constexpr bool kWarpShapeFor = kWarpShapeFits<T, Shape> && !kWarpShapeSkipped<T, Shape>;

template <typename T>
int64_t MaxWarpPacks() {
  int64_t most = 0;
  ForEachWarpShape([&](auto shape) {
    using Shape = decltype(shape);
    if constexpr (kWarpShapeFor<T, Shape>) {
      most = std::max<int64_t>(most, Shape::width * Shape::packs);
    }
  });
  return most;
}

// Calls fn(std::integral_constant<int, B>{}) for the block sizes of the block paths.
template <typename T, typename Fn>
void ForEachBlockSize(Fn&& fn) {
  fn(std::integral_constant<int, 128>{});
  fn(std::integral_constant<int, 256>{});
  fn(std::integral_constant<int, 512>{});
  if constexpr (kMaxBlockSize<T> >= 1024) { fn(std::integral_constant<int, 1024>{}); }
}

// The blocks resident on the device at once, `active_per_sm` on each SM (at least one): a wave.
inline int64_t ResidentBlocks(const CudaDeviceInfo& info, int active_per_sm) {
  return static_cast<int64_t>(info.sm_count) * std::max(active_per_sm, 1);
}

// Sets the plan's grid over `tiles` tiles of rows. Both kernels stride over the tiles, so any
// grid is correct; what differs is speed. One block per tile, scheduled by the hardware as
// blocks retire, measured faster than a persistent grid of only the resident blocks on every
// path where two or more blocks fit on an SM: 5-13% for float, and up to 15% for the 16-bit
// types on an H200 (NOTES.md, "Second round"), and on par where one block fills an SM. A grid
// of more than 2^31 - 1 blocks is capped; the stride covers the rest.
inline void SetGrid(Plan& plan, int64_t tiles, const CudaDeviceInfo& info, int active_per_sm,
                    bool persistent) {
  plan.tiles = tiles;
  plan.active_per_sm = active_per_sm;
  plan.persistent = persistent;
  const int64_t resident = ResidentBlocks(info, active_per_sm);
  const int64_t grid = persistent ? std::min(tiles, resident) : tiles;
  plan.grid = static_cast<int>(std::min<int64_t>(grid, 0x7fffffff));
}

// Sets the plan's stagger (StaggerStart) for a block path with rows of at least
// kStaggerMinRowBytes: the first wave's blocks, those resident at the launch, start in
// kStaggerGroups groups a step apart, the step the time a row's bytes (up to
// kStaggerMaxStepBytes) take at 128 KiB a microsecond at the SM's peak clock. Measured on an
// H200 (tools/softmax_lab.cu, stagger=off against this rule; fractions of copy, softmax /
// log_softmax): float 65536 columns (block_online, one block an SM, 2048 rows) 0.922 -> 0.956 /
// 0.932 -> 0.962, float 81920 0.896 -> 0.922, 40001 0.872 -> 0.897, 32768 0.968 -> 0.978, 12345
// 0.972 -> 0.979; half 65536 0.93 -> 0.941, bfloat16 0.923 -> 0.941, bfloat16 32768 0.898 ->
// 0.906; nothing slower. With the step fixed by hand (stagger=U): float 65536 on 132 rows (one
// wave) level, on 264-1024 rows +5-10%; groups of 4 ahead of 2, 8 or 16 with the same spread.
// Rows of 32 KiB (half 16384, several blocks an SM, out of step by themselves) lost 0.4-1% with
// steps of 1-2 us (NOTES.md, item 47).
constexpr int64_t kStaggerMinRowBytes = 48 * 1024;
constexpr int64_t kStaggerMaxStepBytes = 512 * 1024;
constexpr int64_t kStaggerBytesPerMs = int64_t{128} * 1024 * 1000;

// Whether the plan's kernel takes a Stagger (BlockSoftmaxKernel, BlockRegisterSoftmaxKernel).
inline bool IsBlockPath(Path path) {
  return path == Path::kBlockSmem || path == Path::kBlockOnline || path == Path::kBlockRegisters;
}

// The plan's first wave: the blocks resident at its launch.
inline int FirstWaveBlocks(const CudaDeviceInfo& info, const Plan& plan) {
  return static_cast<int>(std::min<int64_t>(plan.grid, ResidentBlocks(info, plan.active_per_sm)));
}

template <typename T>
void StaggerFirstWave(const CudaDeviceInfo& info, int64_t cols, Plan& plan) {
  plan.stagger = Stagger{};
  const int64_t row_bytes = cols * static_cast<int64_t>(sizeof(T));
  if (!IsBlockPath(plan.path) || row_bytes < kStaggerMinRowBytes) { return; }
  const int64_t step_bytes = std::min(row_bytes, kStaggerMaxStepBytes);
  plan.stagger.blocks = FirstWaveBlocks(info, plan);
  plan.stagger.cycles = static_cast<int>(step_bytes * info.clock_khz / kStaggerBytesPerMs);
}

// Fills `plan` for the warp rung Shape; `ragged`: rows may have edge columns.
template <typename T, Algorithm kAlgorithm, typename Shape>
void PlanWarp(const CudaDeviceInfo& info, int64_t rows, bool ragged, Plan& plan) {
  constexpr int P = PackSize<T, Shape::bytes>::value;
  constexpr int kRows = kGroupRows<T, Shape::packs, Shape::bytes, Shape::rows>;
  plan.path = Path::kWarp;
  plan.pack = P;
  plan.width = Shape::width;
  plan.cols_per_thread = Shape::packs * P;
  plan.rows_per_access = kRows;
  plan.block = kWarpBlockSize;
  plan.ragged = ragged;
  plan.launch = ragged ? &LaunchWarp<T, kAlgorithm, Shape, true>
                       : &LaunchWarp<T, kAlgorithm, Shape, false>;
  const auto* kernel =
      ragged ? reinterpret_cast<const void*>(&WarpSoftmaxKernel<T, kAlgorithm, Shape::width,
                                                                 Shape::packs, true, Shape::bytes,
                                                                 Shape::rows>)
             : reinterpret_cast<const void*>(&WarpSoftmaxKernel<T, kAlgorithm, Shape::width,
                                                                 Shape::packs, false, Shape::bytes,
                                                                 Shape::rows>);
  const int64_t rows_per_block = (kWarpBlockSize / kWarpSize) * (kWarpSize / Shape::width) * kRows;
  SetGrid(plan, (rows + rows_per_block - 1) / rows_per_block, info,
          MaxActiveBlocksPerSm(kernel, info, kWarpBlockSize, 0), /*persistent=*/false);
}

// The uncached packs a block_online thread holds in registers from pass 1 to pass 2, so that
// they are read once (the rest are read again in pass 2): enough for 16-bit rows of 65536 columns
// on two blocks of 512 an SM and float ones on one block of 1024 (2 and 1.8 packs a thread).
constexpr int kOnlineHeldPacks = 2;

// For a row that only one block per SM can cache whole: two blocks of half the largest size per
// SM instead, each caching what half of the SM's shared memory holds and reading the rest of the
// row twice (block_online; the second read mostly hits L2). With one block, nothing on the SM
// overlaps a row's copy with the arithmetic on it; with two, each block's copy overlaps the
// other's arithmetic. Measured on an H200 (tools/softmax_lab.cu): float 32768 cols 0.82 ->
// 0.93x copy, half and bfloat16 65536 0.71-0.72 -> 0.76-0.78x. False when two do not fit.
template <typename T, Algorithm kAlgorithm>
bool PlanTwoPerSm(const CudaDeviceInfo& info, int64_t rows, int64_t window, Plan& plan) {
  constexpr int kBlock = kMaxBlockSize<T> / 2;
  const auto* kernel = reinterpret_cast<const void*>(
      &BlockSoftmaxKernel<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>);
  // Half the SM's shared memory, less the 1 KiB the runtime reserves per block and a margin for
  // the kernel's static shared memory (BlockAllReduce's posts).
  const size_t half = static_cast<size_t>(info.max_shared_memory_per_sm) / 2;
  if (half < 4096) { return false; }
  const size_t smem = std::min<size_t>((half - 2048) / kPackBytes * kPackBytes,
                                       MaxDynamicSmem(kernel, info));
  const int64_t cached = std::min<int64_t>(window, static_cast<int64_t>(smem / kPackBytes));
  if (cached < kBlock) { return false; }  // block_online stages stores in each thread's slot
  const size_t used = static_cast<size_t>(cached) * kPackBytes;
  const int active = MaxActiveBlocksPerSm(kernel, info, kBlock, used);
  if (active < 2) { return false; }
  plan.path = cached == window ? Path::kBlockSmem : Path::kBlockOnline;
  plan.block = kBlock;
  plan.cached_packs = static_cast<int>(cached);
  plan.smem = used;
  plan.launch = &LaunchBlock<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>;
  SetGrid(plan, rows, info, active, /*persistent=*/false);
  return true;
}

// The longest 16-bit row, in packs, that block_smem gives 64 threads rather than 128.
constexpr int64_t kSmallBlockPacks = 640;

// The warp_tile ladder: kWidth lanes a row (1, 2, 4 or 8) times up to kWords words a lane (9, 13,
// 17 or 25), two tiles a warp. A row of cols elements of T is cols * sizeof(T) / 4 words; it
// takes the rung whose width is the largest power of two dividing that count, so that the count
// over the width is odd, and whose words hold that odd count with at least 7 of them (PlanTileRows).
template <typename Fn>
void ForEachTileShape(Fn&& fn) {
  auto widths = [&](auto words_tag) {
    constexpr int kWords = decltype(words_tag)::value;
    fn(TileShape<1, kWords, 2>{});
    fn(TileShape<2, kWords, 2>{});
    fn(TileShape<4, kWords, 2>{});
    fn(TileShape<8, kWords, 2>{});
  };
  widths(std::integral_constant<int, 9>{});
  widths(std::integral_constant<int, 13>{});
  widths(std::integral_constant<int, 17>{});
  widths(std::integral_constant<int, 25>{});
}

// The fewest words a lane of a warp_tile rung takes: rows of 1-5 words a lane (after the width)
// stay on the warp path.
constexpr int64_t kTileMinWords = 7;

// Fills `plan` for the warp_tile rung Shape. The caller has checked that the rung takes the row
// (see TileSoftmaxKernel) and that x and y are 16-byte aligned.
template <typename T, Algorithm kAlgorithm, typename Shape>
void PlanTile(const CudaDeviceInfo& info, int64_t rows, int64_t cols, Plan& plan) {
  constexpr int kRows = kTileRows<Shape::width>;
  constexpr int64_t kRowsPerBlock = int64_t{kTileBlockSize / kWarpSize} * Shape::tiles * kRows;
  const auto* kernel = reinterpret_cast<const void*>(
      &TileSoftmaxKernel<T, kAlgorithm, Shape::width, Shape::words, Shape::tiles,
                         Shape::min_blocks>);
  plan.path = Path::kWarpTile;
  plan.pack = PackSize<T>::value;
  plan.width = Shape::width;
  plan.cols_per_thread = Shape::words * PackSize<T, 4>::value;
  plan.tiles_per_warp = Shape::tiles;
  plan.block = kTileBlockSize;
  // 4 warps x tiles x (32 / width) rows of at most width x words 32-bit words: 512 x tiles x
  // words bytes at most (25 KiB for two tiles of 25 words), within the 48 KiB a block gets
  // without opting in to more.
  static_assert(512 * Shape::tiles * Shape::words <= 48 * 1024, "a rung's tiles fit in 48 KiB");
  plan.smem = static_cast<size_t>(kRowsPerBlock * cols) * sizeof(T);
  plan.launch = &LaunchTile<T, kAlgorithm, Shape>;
  SetGrid(plan, (rows + kRowsPerBlock - 1) / kRowsPerBlock, info,
          MaxActiveBlocksPerSm(kernel, info, kTileBlockSize, plan.smem), /*persistent=*/false);
}

// Fills `plan` for the warp_tile path if its ladder takes rows of `cols` elements (x and y must
// be 16-byte aligned; the caller checks): float and the 16-bit types, rows a whole number of 32-bit
// words, whose count is an odd number from 7 to 25 times 1, 2, 4 or 8 lanes. That count is the
// condition for conflict-free shared memory: with W lanes a row and a row of W * K words (K odd),
// the rows of a tile start W * K * i words apart, which modulo the 32 banks are distinct
// multiples of W, so a warp's 32 lanes read 32 different banks at every step. Measured on an
// H200 (tools/softmax_lab.cu, tile=WxKx2 against the default plan; fractions of copy, softmax):
// half 100 cols 0.88 -> 0.997, bfloat16 0.85 -> 0.997, float 100 0.90 -> 0.98, half 52 0.85 ->
// 0.95, half 200 0.90 -> 0.95, half 50 0.79 -> 0.97, float 25 0.84 -> 0.98. Rows that fill
// under two thirds of a rung's words lost (half 60, 15 words of 25 on 2 lanes: 0.84 against
// 0.88; half 80, 5 of 13 on 8 lanes: 0.65 against 0.86), as did, without the odd count, rows of
// a power-of-two number of words (half 64 on 2 lanes x 16 words: 0.48 against 0.97), whose rows
// all start on one bank.
template <typename T, Algorithm kAlgorithm>
bool PlanTileRows(const CudaDeviceInfo& info, int64_t rows, int64_t cols, Plan& plan) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    constexpr int kPerWord = PackSize<T, 4>::value;
    if (cols % kPerWord != 0) { return false; }
    const int64_t row_words = cols / kPerWord;
    const int64_t width = row_words & -row_words;  // the largest power of two dividing it
    const int64_t words = row_words / width;
    if (width > 8 || words < kTileMinWords) { return false; }
    bool chosen = false;
    ForEachTileShape([&](auto shape) {
      using Shape = decltype(shape);
      if (chosen || Shape::width != width || Shape::words < words) { return; }
      chosen = true;
      PlanTile<T, kAlgorithm, Shape>(info, rows, cols, plan);
    });
    return chosen;
  }
}

// Which kernel block_registers runs for rows of whole 16-byte packs (x aligned, cols a multiple
// of the pack): kPlanned, the planner's choice (PlansWholeRowsKernel); kRagged, the kernel for
// rows of any alignment; kWhole, the one for whole packs (for the lab's comparison: outside the
// lab only the planned shapes have it).
enum class RowsKernel { kPlanned, kRagged, kWhole };

// Whether the block_registers shape has a whole-rows kernel (kRagged = false) with the store
// fallback `fallback` outside the lab (the lab builds one of each fallback for every shape), and
// whether the planner runs aligned rows of `window` packs on it: where it measured ahead of the
// ragged kernel. On an H200 (tools/softmax_lab.cu, fractions of copy):
//  * float, with kElements (NOTES item 53, three builds): 512 x 4 (8192 columns, +0.2-0.6%),
//    1024 x 8 (32768, +0.3-0.7%) and 128 x 4 for rows that leave every thread's fourth pack
//    empty (1536 columns, +0.5-0.75%; full rows, 2048 columns, -0.6%); 512 x 8 with kNone
//    (16384, +0.5-0.6%; items 57 and 60). float 512 x 2 at 4096 columns measured -0.6%.
//  * the 16-bit types (item 63, two rounds): 256 x 2 with kElements where every thread holds
//    two packs (4096 columns, +0.5-0.8%, item 53). Where the window is not a multiple of the
//    block, so threads hold different numbers of packs, every 16-bit shape with kPack: 256 x 2
//    3592-4032 columns 0.943-0.993 -> 0.999-1.008 (against kElements), 256 x 3 at 5000 0.960 ->
//    1.001 and at 5504 +0.4% (against the ragged kernel), 512 x 2 at 7504 +1.5-2.5% and at 8000
//    +0.3-0.8%, 128 x 4 at 3336 +1.0%, 128 x 3 at 2560 +0.2%; behind at 6000 (256 x 3, -0.7%)
//    and 3504 (128 x 4, -0.3%). Where it is a multiple, kPack lost 0.2-0.6% (3072 level,
//    4096, 6144, 8192), and those rows keep the ragged kernel but for 256 x 2's kElements.
// Elsewhere the ragged kernel runs whole rows, as it does every row that is not whole packs;
// each kernel's registers and schedule are the compiler's choice.
template <typename T>
constexpr bool HasWholeRowsKernel(int block, int packs, StoreFallback fallback) {
  if constexpr (kIs16Bit<T>) {
    const bool pair = block == 256 && packs == 2;
    if (fallback == StoreFallback::kElements) { return pair; }
    return fallback == StoreFallback::kPack &&
           (pair || (block == 128 && (packs == 3 || packs == 4)) || (block == 256 && packs == 3) ||
            (block == 512 && packs == 2));
  } else if constexpr (std::is_same_v<T, float>) {
    if (fallback == StoreFallback::kNone) { return block == 512 && packs == 8; }
    return fallback == StoreFallback::kElements &&
           ((block == 128 && packs == 4) || (block == 512 && packs == 4) ||
            (block == 1024 && packs == 8));
  } else {
    return false;
  }
}
// The store fallback of the whole-rows kernel for rows of `window` packs (see above).
template <typename T>
constexpr StoreFallback WholeRowsFallback(int block, int packs, int64_t window) {
  if (std::is_same_v<T, float> && block == 512 && packs == 8) { return StoreFallback::kNone; }
  if (kIs16Bit<T> && window % block != 0) { return StoreFallback::kPack; }
  return StoreFallback::kElements;
}
template <typename T>
constexpr bool PlansWholeRowsKernel(int block, int packs, int64_t window) {
  const bool last_pack_empty = window <= int64_t{block} * (packs - 1);
  return HasWholeRowsKernel<T>(block, packs, WholeRowsFallback<T>(block, packs, window)) &&
         (kIs16Bit<T> || block != 128 || last_pack_empty);
}
// Whether this build has the whole-rows kernel: the planner's, or in the lab every shape's, but
// kNone only where the planner has it.
template <typename T>
constexpr bool BuildsWholeRowsKernel(int block, int packs, StoreFallback fallback) {
#ifdef ONEFLITE_SOFTMAX_LAB
  if (fallback != StoreFallback::kNone) { return true; }
#endif
  return HasWholeRowsKernel<T>(block, packs, fallback);
}
// Calls fn(std::integral_constant<StoreFallback, F>{}) with F = `fallback` if this build has
// that whole-rows kernel for kBlock x kPacks (BuildsWholeRowsKernel), and says whether it did:
// the run-time choice of WholeRowsFallback turned into the template argument of the kernel.
template <typename T, int kBlock, int kPacks, typename Fn>
bool WithWholeRowsKernel(StoreFallback fallback, Fn&& fn) {
  bool found = false;
  auto take = [&](auto fallback_tag) {
    constexpr StoreFallback kFallback = decltype(fallback_tag)::value;
    if constexpr (BuildsWholeRowsKernel<T>(kBlock, kPacks, kFallback)) {
      if (fallback == kFallback) {
        fn(fallback_tag);
        found = true;
      }
    }
  };
  take(std::integral_constant<StoreFallback, StoreFallback::kElements>{});
  take(std::integral_constant<StoreFallback, StoreFallback::kPack>{});
  take(std::integral_constant<StoreFallback, StoreFallback::kNone>{});
  return found;
}

// float block_registers on 512 threads of 4 packs (rows of 1537-2048 packs, 6145-8192 columns)
// runs 3 blocks an SM rather than the 4 its 32 registers allow, held there by shared memory
// (HoldBlocksPerSmSmem), once the launch has kHoldMinWaves waves of them. (The ragged softmax
// kernel's 34 registers hold it to 3 already: 1280 a warp once rounded to the allocation
// unit.) Measured on an H200 (tools/softmax_lab.cu, hold=off and occ=3 against the plan;
// fractions of copy, softmax / log_softmax): 6144 columns 0.968 -> 0.978 / 0.968-0.970 ->
// 0.980-0.983, 6200 0.976 -> 0.988-0.991 / 0.975-0.977 -> 0.990-0.991, 7000 0.975-0.978 ->
// 0.982-0.985, 8192 0.979-0.980 -> 0.983 / 0.979-0.980 -> 0.983-0.984 (level with the
// benchmark's Triton kernel, whose 38 registers give it 3 blocks an SM too), log_softmax rows
// off a 16-byte boundary (7001) +0.8% (softmax's, at 3 blocks by registers, level with it held
// by shared memory as well). Short launches gain nothing or lose (8192 columns: 4096 rows, 10
// waves of 3 blocks an SM, -0.2 to -1.1%; 6336 rows -0.2 to -0.4%; 8192 rows level; 12288 rows,
// 31 waves, +0.2-0.4%). Shapes of 2 packs a thread lost heavily at 3 blocks an SM (float 512 x
// 2 at 4096 columns 0.995 -> 0.926, 16-bit 512 x 2 at 8192 0.975 -> 0.908): too few loads in
// flight (NOTES item 59).
constexpr int kFloatHeldPerSm = 3;
constexpr int64_t kHoldMinWaves = 24;
inline void HoldFloat512x4(const void* kernel, const CudaDeviceInfo& info, int64_t rows,
                           int& active, Plan& plan) {
  if (active <= kFloatHeldPerSm || rows < kHoldMinWaves * kFloatHeldPerSm * info.sm_count) {
    return;
  }
  if (const size_t smem = HoldBlocksPerSmSmem(kernel, info, 512, kFloatHeldPerSm); smem > 0) {
    plan.smem = smem;
    plan.held_per_sm = kFloatHeldPerSm;
    active = kFloatHeldPerSm;
  }
}

// float block_registers on 128 threads of 4 packs, for rows that fill at least 59/64 of it
// (472-512 packs, 1885-2048 columns; the ragged kernel), runs 7 blocks an SM rather than the 16
// (log_softmax, 32 registers) or 12 (softmax, 40) that registers allow, by preferring the
// smallest carve-out (MaxL1BlocksPerSm), once the launch has kHoldMinWaves waves of them.
// Measured on an H200 (tools/softmax_lab.cu, carve=0 against the plan, 98304 rows unless said;
// fractions of copy, softmax / log_softmax): 1888 columns 0.987 -> 1.001-1.003 / 0.985 -> 0.989,
// 1904 0.985 -> 1.000 / 0.984 -> 0.989-0.990, 1920 0.991 -> 1.006-1.008 / 0.987 -> 0.998, 2000
// 0.995 -> 1.008-1.010 / 0.992 -> 1.010-1.011, 2048 0.981 -> 0.983-0.984 / 0.980-0.981 ->
// 0.985-0.987; 2048 columns at 22176 rows (24 waves of 7; hold=off against the planner) 0.977
// -> 0.986-0.987 / 0.978-0.981 -> 0.990-0.991, at 24576 rows 0.986 -> 0.988-0.990 / 0.987 ->
// 0.998-1.000, at 32768 rows 0.975 -> 0.972-0.973 / 0.977 -> 0.975-0.978, at 16384 (18 waves)
// 0.981-0.985 -> 0.990-0.992 / 0.990-0.993 -> 0.986-0.989, and short launches lost (4096 rows:
// 1.005 -> 0.977-0.981 / 1.018-1.024 -> 0.966-0.967; 1024 rows -8% / -10%). Rows that fill less
// lost: 1856 columns +0.9% / -0.5%, 1792 +1.0% / -1.1%, 1664 -1.3% / -4%, 1536 -5%, and
// so did 8 values a thread (128 x 2 at 768-1024 columns: -14 to -26%); 16-bit 256 x 2 (4096
// columns) measured level. Holding these blocks with shared memory instead did not hold them:
// the driver kept the default carve-out (see kHoldCarveoutBytes).
constexpr int64_t kFloat128x4HeldWindow = 472;
inline bool HoldFloat128x4(const void* max_l1_kernel, const CudaDeviceInfo& info, int64_t rows,
                           int64_t window, int& active, Plan& plan) {
  if (window < kFloat128x4HeldWindow) { return false; }
  const int held = MaxL1BlocksPerSm(max_l1_kernel, info, 128);
  if (held <= 0 || held >= active || rows < kHoldMinWaves * held * info.sm_count) {
    return false;
  }
  plan.held_per_sm = held;
  plan.max_l1 = true;
  active = held;
  return true;
}

// The 16-bit block_registers shapes and the windows (16-byte packs, 8 elements) each takes:
// 128 x 3 packs from 3/4 full for half (288-384 packs, 2297-3072 aligned columns; half's warp
// path stops at 256) and from 15/16 for bfloat16 (360-384, 2873-3072), whose warp path holds
// rows of up to 384 packs; 128 x 4 for 385-448 packs (half) or 400-448 (bfloat16: 385 packs
// stay on its warp path, 0.991 of copy against 0.91); 256 x 2 for 449-512 (from 7/8); 256 x 3
// from 13/16 (624-768 packs); 512 x 2 from 7/8 (896-1024; from 3/4, half 6144 columns measured
// 0.89-0.91 of copy against block_smem's 0.97). Measured on an H200
// (tools/softmax_lab.cu, registers=BxN against the path that had the row; fractions of copy,
// softmax / log_softmax, half then bfloat16): 128 x 3 at 2304 columns (288 packs) 0.889 /
// 0.914 -> 0.973 / 0.975 (block_smem), bfloat16 1.005 / 1.008 -> 0.972 / 0.977 (warp); at 2560
// 0.922 / 0.923 -> 0.984 / 0.987, bfloat16 0.979 / 0.976 -> 0.984 / 0.987; 2777 0.788 / 0.808
// -> 0.979 / 0.983, bfloat16 0.961 / 0.994 -> 0.979 / 0.981; 3072 0.927 / 0.926 -> 0.987 /
// 0.989, bfloat16 0.975 / 0.974 -> 0.988 / 0.987; 3072 columns on 4096 rows 0.804 -> 0.972 and
// on 1024 rows 0.709 -> 0.943 (half softmax); 2049 (257 packs) 0.99 -> 0.85 (warp). 128 x 4 at
// 3073 columns 0.777 / 0.797 -> 0.913 / 0.909, bfloat16 0.991 -> 0.91 (warp); 3200 0.941 /
// 0.944 -> 0.989 / 0.989; 3333 0.890 / 0.916 -> 0.954 / 0.952, bfloat16 0.819 / 0.844 -> 0.954 /
// 0.951; 3500 0.942 / 0.946 -> 0.983 / 0.981; 3584 (448 packs) 0.953 / 0.952 -> 1.018 / 1.018
// (256 x 2), bfloat16 0.947 / 0.948 -> 1.013 / 1.016; 4096 0.976 / 0.974 -> 0.969 / 0.967 (256
// x 2 kept). 256 x 3 at 5000 columns (625 packs) 0.937 / 0.939 -> 0.959 / 0.956, bfloat16 0.939
// / 0.943 -> 0.958 / 0.957 (block_smem); 6000 0.988 / 0.987 -> 0.999 / 1.004, bfloat16 0.917 /
// 0.953 -> 1.003 / 1.004; 4500 (563 packs) 0.93 -> 0.88.
struct Shape16 {
  int block;
  int packs;
  int least;  // the fewest window packs it takes
  int most;   // the most: block * packs, or fewer
};
template <typename T>
constexpr Shape16 k16BitShapes[] = {
    {128, 3, std::is_same_v<T, __half> ? 288 : 360, 384},
    {128, 4, std::is_same_v<T, __half> ? 385 : 400, 448},
    {256, 2, 449, 512},
    {256, 3, 624, 768},
    {512, 2, 896, 1024},
};

// Fills `plan` for block_registers with `block` threads of `packs` packs each, or (block = 0)
// with the first of the shapes below that holds the row, if the row fills at least three
// quarters of it (seven eighths of 1024 x 8), or for the 16-bit types the shape whose range
// takes the window (k16BitShapes). False when the shape does not hold the row, or a thread would
// hold more than 32 values (1024 threads have 64 registers each).
//
// The 16-bit shapes of 16 values a thread, in 32 registers, let 2048 threads share an SM:
// 256 x 2 packs at 4096 cols 0.968-0.969x copy (block_smem 0.917-0.923) and 512 x 2 at 8192
// 0.973-0.977 (0.951-0.954; both ops, half and bfloat16, H200). 32 values a thread on 512
// threads lost (512 x 4 at 16384: 0.91-0.92 against 0.95); on 128 threads they won (above).
//
// The shapes, measured on an H200 against the path that had the row before (tools/softmax_lab.cu,
// registers=BxN; float, fractions of copy): 128 x 2 packs at 768 cols 1.001 (warp 0.985) and at
// 1024 0.997 (0.982); 128 x 4 at 1536 0.988 (0.976; log_softmax 0.998 against 0.943) and at
// 2048 level (0.980); 256 x 4 at 3072 0.983 (block_smem 0.978), 512 x 4 at 8192 0.977 (0.956),
// 512 x 8 at 12345 0.979 (0.918) and at 16384 0.975 (0.972), 1024 x 8 at 32768 0.961
// (block_online 0.926). Rows that fill less of a shape measured slower: 512 cols on 128 x 2
// 0.816 (warp 0.981), 5000 on 512 x 4 0.928 (block_smem 0.967), 20000 on 1024 x 8 0.798
// (0.968); so did 8 values a thread on 256 or 512 threads (3072 cols on 512 x 2: 0.906).
template <typename T, Algorithm kAlgorithm>
bool PlanBlockRegisters(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                        int block, int packs, Plan& plan,
                        RowsKernel rows_kernel = RowsKernel::kPlanned) {
  constexpr int P = PackSize<T>::value;
  const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
  const bool whole_rows = WholePackRows<T>(cols, x_aligned);
  if (block == 0) {
    if constexpr (kIs16Bit<T>) {
      // The 16-bit shapes take windows in ranges of their own (see k16BitShapes).
      for (const auto& shape : k16BitShapes<T>) {
        if (window >= shape.least && window <= shape.most) {
          block = shape.block;
          packs = shape.packs;
          break;
        }
      }
    } else {
      constexpr int kFloatShapes[][2] = {{128, 2}, {128, 4}, {256, 4},
                                         {512, 4}, {512, 8}, {1024, 8}};
      for (const auto& shape : kFloatShapes) {
        if (int64_t{shape[0]} * shape[1] >= window) {
          block = shape[0];
          packs = shape[1];
          break;
        }
      }
      // float rows must fill 3/4 of the shape, or 7/8 of the 1024-thread one, which fills an SM
      // alone: there padding idles the SM's only row (float 24576 cols, 3/4 of 1024 x 8 packs:
      // 0.897x copy, against 0.955x on block_smem with two blocks of 512 an SM).
      const int64_t eighths = block == 1024 ? 7 : 6;
      if (8 * window < eighths * int64_t{block} * packs) { block = 0; }
    }
    if (block == 0) { return false; }
    // float rows of 992-1024 packs (3968-4096 columns), 16 or more waves of them: 512 x 2,
    // which measured ahead of 256 x 4 once the launch's steady state dominates (4096 columns:
    // 0.976-0.980 -> 0.994-0.996 at 32768 rows, 0.971 -> 0.987 at 16896, 0.978 -> 0.990 at
    // 65536, level at 8448, behind below: 0.99 -> 0.90 at 1056; 4000 columns 0.983 -> 0.998;
    // softmax and log_softmax alike) and behind it on rows that fill less (3600 columns 0.983
    // -> 0.968; 3900 0.980 -> 0.987). No other float shape gained from fewer values a thread
    // on more threads (2048 columns on 256 x 2, 8192 on 1024 x 2, 16384 on 1024 x 4).
    if constexpr (std::is_same_v<T, float>) {
      if (block == 256 && packs == 4 && 32 * window >= 31 * 1024) {
        const auto* kernel =
            reinterpret_cast<const void*>(&BlockRegisterSoftmaxKernel<T, kAlgorithm, 512, 2>);
        if (rows >= 16 * ResidentBlocks(info, MaxActiveBlocksPerSm(kernel, info, 512, 0))) {
          block = 512;
          packs = 2;
        }
      }
    }
  }
  bool chosen = false;
  auto consider = [&](auto block_tag, auto packs_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    constexpr int kPacks = decltype(packs_tag)::value;
    if constexpr (kPacks * P <= 32 && !std::is_same_v<T, double>) {
      if (kBlock != block || kPacks != packs || int64_t{kBlock} * kPacks < window) { return; }
      chosen = true;
      const void* kernel =
          reinterpret_cast<const void*>(&BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks>);
      plan.launch = &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks>;
      plan.ragged = true;
      const bool planned_whole =
          rows_kernel == RowsKernel::kPlanned && PlansWholeRowsKernel<T>(kBlock, kPacks, window);
      if (whole_rows && (rows_kernel == RowsKernel::kWhole || planned_whole)) {
        WithWholeRowsKernel<T, kBlock, kPacks>(
            WholeRowsFallback<T>(kBlock, kPacks, window), [&](auto fallback_tag) {
              constexpr StoreFallback kFallback = decltype(fallback_tag)::value;
              kernel = reinterpret_cast<const void*>(&BlockRegisterSoftmaxKernel<
                                                     T, kAlgorithm, kBlock, kPacks, false, false,
                                                     kFallback>);
              plan.launch =
                  &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, false, kFallback>;
              plan.ragged = false;
            });
      }
      plan.path = Path::kBlockRegisters;
      plan.pack = P;
      plan.block = kBlock;
      plan.cols_per_thread = kPacks * P;
      plan.smem = 0;
      plan.held_per_sm = 0;
      plan.max_l1 = false;
      int active = MaxActiveBlocksPerSm(kernel, info, kBlock, 0);
      if constexpr (std::is_same_v<T, float> && kBlock == 512 && kPacks == 4) {
        HoldFloat512x4(kernel, info, rows, active, plan);
      }
      if constexpr (std::is_same_v<T, float> && kBlock == 128 && kPacks == 4) {
        constexpr bool kMaxL1 = true;
        const auto* held = reinterpret_cast<const void*>(
            &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, false, true,
                                        StoreFallback::kElements, kMaxL1>);
        if (plan.ragged && HoldFloat128x4(held, info, rows, window, active, plan)) {
          plan.launch =
              &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, false, true,
                                    StoreFallback::kElements, kMaxL1>;
        }
      }
      SetGrid(plan, rows, info, active, /*persistent=*/false);
    }
  };
  // The shapes above, and others for the lab's comparison.
  consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 8>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 8>{});
  if constexpr (kIs16Bit<T>) {
    consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 3>{});
    consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 3>{});
  }
#ifdef ONEFLITE_SOFTMAX_LAB
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 1>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 1>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 64>{}, std::integral_constant<int, 3>{});
  consider(std::integral_constant<int, 64>{}, std::integral_constant<int, 6>{});
  if constexpr (!kIs16Bit<T>) {
    consider(std::integral_constant<int, 128>{}, std::integral_constant<int, 3>{});
    consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 3>{});
  }
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 8>{});
  consider(std::integral_constant<int, 96>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 96>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 192>{}, std::integral_constant<int, 1>{});
  consider(std::integral_constant<int, 192>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 384>{}, std::integral_constant<int, 1>{});
#endif
  return chosen;
}

// Fills `plan` for block_registers with a cached tail (see BlockRegisterSoftmaxKernel): `block`
// threads of `packs` register packs each, and the rest of the row's window in shared memory, as
// many slots a thread as that takes. False when the shape's registers hold the row already, or
// its tail does not fit in the shared memory one block may take.
template <typename T, Algorithm kAlgorithm>
bool PlanRegistersTail(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                       int block, int packs, Plan& plan) {
  constexpr int P = PackSize<T>::value;
  const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
  bool chosen = false;
  auto consider = [&](auto block_tag, auto packs_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    constexpr int kPacks = decltype(packs_tag)::value;
    if constexpr (kPacks * P <= 32 && !std::is_same_v<T, double>) {
      const int64_t in_registers = int64_t{kBlock} * kPacks;
      if (chosen || kBlock != block || kPacks != packs || window <= in_registers) { return; }
      const auto* kernel = reinterpret_cast<const void*>(
          &BlockRegisterSoftmaxKernel<T, kAlgorithm, kBlock, kPacks, true>);
      const int64_t slots = (window - in_registers + kBlock - 1) / kBlock;
      const size_t smem = static_cast<size_t>(slots * kBlock) * kPackBytes;
      if (smem > MaxDynamicSmem(kernel, info)) { return; }
      chosen = true;
      plan.path = Path::kBlockRegisters;
      plan.pack = P;
      plan.block = kBlock;
      plan.cols_per_thread = kPacks * P;
      plan.ragged = true;
      plan.cached_packs = static_cast<int>(slots * kBlock);
      plan.smem = smem;
      plan.held_per_sm = 0;
      plan.max_l1 = false;
      plan.launch = &LaunchBlockRegisters<T, kAlgorithm, kBlock, kPacks, true>;
      SetGrid(plan, rows, info, MaxActiveBlocksPerSm(kernel, info, kBlock, smem),
              /*persistent=*/false);
    }
  };
  // The planner's shapes (PlanCachedTail), and others for the lab's comparison.
  if constexpr (kIs16Bit<T>) {
    consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 2>{});
    consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 2>{});
  } else {
    consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 8>{});
  }
#ifdef ONEFLITE_SOFTMAX_LAB
  consider(std::integral_constant<int, 256>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 512>{}, std::integral_constant<int, 8>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 2>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 4>{});
  consider(std::integral_constant<int, 1024>{}, std::integral_constant<int, 8>{});
#endif
  return chosen;
}

// block_registers with a cached tail (PlanRegistersTail), for the rows where it measured ahead
// of the plan the rest of PlanSoftmax makes. On an H200 (tools/softmax_lab.cu, tail=BxN against
// that plan; fractions of copy, softmax / log_softmax, half and bfloat16 alike within 1-2%):
//  * 16-bit rows of 1281-2048 packs (10241-16384 columns), where block_smem gives 128 threads
//    11-16 packs each, from 1537 packs (12289 columns) for rows off a 16-byte boundary: 256
//    threads of 2 register packs. 11000 columns 0.928 -> 0.964, 12000 0.958 -> 0.986, 12345
//    0.912 -> 0.963 / 0.917 -> 0.964, 14001 0.906 -> 0.962; level at 9000-10248, 16384 and
//    20000; behind at 8500 (0.938 -> 0.885) and 6000 (0.995 -> 0.803), where a thread has too
//    few packs in flight, and for rows off a boundary up to about 11000 columns (10241 0.916 ->
//    0.834, 11001 0.923 -> 0.896).
//  * 16-bit softmax rows that block_smem gives 512 threads (3457 packs, 27657 columns, and up):
//    256 threads of 2 register packs again, up to 3712 packs (29696 columns), and for bfloat16
//    up to 4608 (36864). bfloat16 28672 0.858 -> 0.923, 29696 0.892 -> 0.948, 30720-36864
//    0.881-0.905 -> 0.915-0.929 (+1.5-4.6%); half 28672 0.891 -> 0.924, 29696 0.922 -> 0.945,
//    and from 32768 behind (0.936 -> 0.923). log_softmax, which needs no second exp, kept
//    block_smem: behind from 30720 (-0.2 to -3.4%), +0.2-2.7% at 28672-29696 (NOTES item 58).
//  * 16-bit rows that block_smem could give only one block an SM (PlanTwoPerSm's), while two
//    blocks of 512 threads of 2 register packs fit: bfloat16 65536 0.894 -> 0.922 / 0.913 ->
//    0.932, half 0.916 -> 0.929, 60000 +1%. Past that (65535 columns, one block an SM) 0.865 ->
//    0.759.
//  * float rows of at least 9 x 1024 packs (36864 columns), a tail slot a thread or more: 1024
//    threads of 8 register packs, one block an SM. 45000 0.832 -> 0.932, 49152 0.817 -> 0.911,
//    57344 0.783 -> 0.903, 81920 0.800 -> 0.888, 90000 0.760 -> 0.859 (log_softmax up to 0.03
//    more); 40001 level / +3%. Except where block_online's one block holds the row on chip (its
//    shared memory and held packs; float 58049-66240 columns): 65536 0.927 against 0.901-0.910.
//    Below 9 x 1024 packs the tail lost (33000 columns 0.947 -> 0.899).
template <typename T, Algorithm kAlgorithm>
bool PlanCachedTail(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                    Plan& plan) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
    if constexpr (kIs16Bit<T>) {
      const bool rows_aligned = WholePackRows<T>(cols, x_aligned);
      if (window > (rows_aligned ? 10 : 12) * 128 && window <= 16 * 128) {
        return PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 256, 2, plan);
      }
      // softmax rows that block_smem would give 512 threads of 7-9 packs (from 3457 packs):
      // 256 x 2 up to 29 x 128 packs, and bfloat16's up to 36 x 128.
      constexpr int64_t kLastSoftmaxTail =
          (std::is_same_v<T, __nv_bfloat16> ? 36 : 29) * int64_t{128};
      if (kAlgorithm == Algorithm::kSoftmax && window > 27 * 128 && window <= kLastSoftmaxTail) {
        return PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 256, 2, plan);
      }
      // 512 x 2 only while two of its blocks fit on an SM.
      const bool one_block = window * kPackBytes > info.max_shared_memory_per_sm / 2;
      Plan tail = plan;
      if (!one_block ||
          !PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 512, 2, tail) ||
          tail.active_per_sm < 2) {
        return false;
      }
      plan = tail;
      return true;
    } else {
      constexpr int kBlock = kMaxBlockSize<T>;
      const auto* online = reinterpret_cast<const void*>(
          &BlockSoftmaxKernel<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>);
      const int64_t cached = static_cast<int64_t>(MaxDynamicSmem(online, info) / kPackBytes);
      const bool online_holds_row =
          window > cached && window <= cached + int64_t{kOnlineHeldPacks} * kBlock;
      return window >= 9 * 1024 && !online_holds_row &&
             PlanRegistersTail<T, kAlgorithm>(info, rows, cols, x_aligned, 1024, 8, plan);
    }
  }
}

// The one decision function: the path, its shape and its grid (PlanPath), then the stagger of
// the launch's first wave (StaggerFirstWave). `x_aligned`: x starts on a 16-byte boundary, and
// so does y (Describe, which has no pointers, assumes they do). `allow_registers` = false plans a
// shared-memory block path for any row, never the paths that hold a row in registers or stage it
// per warp (for tools/softmax_lab.cu, which compares the paths).
template <typename T, Algorithm kAlgorithm>
Plan PlanPath(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
              bool allow_registers);

template <typename T, Algorithm kAlgorithm>
Plan PlanSoftmax(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
                 bool allow_registers = true) {
  Plan plan = PlanPath<T, kAlgorithm>(info, rows, cols, x_aligned, allow_registers);
  StaggerFirstWave<T>(info, cols, plan);
  return plan;
}

// The path for rows of `cols` elements, from the fastest that takes them.
template <typename T, Algorithm kAlgorithm>
Plan PlanPath(const CudaDeviceInfo& info, int64_t rows, int64_t cols, bool x_aligned,
              bool allow_registers) {
  constexpr int P = PackSize<T>::value;
  const int64_t window = MaxWindowPacks<T>(cols, x_aligned);
  Plan plan;
  plan.pack = P;

  // Rows that fill a block_registers shape well (see PlanBlockRegisters): a block holds the row
  // in registers, ahead of the warp path for float rows of 768 to 32768 columns and of the
  // block paths for 16-bit rows of 2297 to 6144 and 7169 to 8192 columns (k16BitShapes).
  if constexpr (!std::is_same_v<T, double>) {
    if (allow_registers &&
        PlanBlockRegisters<T, kAlgorithm>(info, rows, cols, x_aligned, 0, 0, plan)) {
      return plan;
    }
  }

  // Short rows whose word count is an odd number times a few lanes: a warp stages two tiles of
  // them through shared memory (PlanTileRows).
  if (allow_registers && x_aligned && PlanTileRows<T, kAlgorithm>(info, rows, cols, plan)) {
    return plan;
  }

  // The warp path holds a row's whole packs in its rung and its edge columns beside them.
  const int64_t whole_packs = cols / P;
  if (allow_registers && whole_packs <= MaxWarpPacks<T>()) {
    bool chosen = false;
    ForEachWarpShape([&](auto shape) {
      using Shape = decltype(shape);
      if constexpr (kWarpShapeFor<T, Shape>) {
        if (chosen || Shape::max_packs < whole_packs) { return; }
        chosen = true;
        PlanWarp<T, kAlgorithm, Shape>(info, rows, !WholePackRows<T>(cols, x_aligned), plan);
      }
    });
    return plan;
  }

  // Rows that a block_registers shape holds with a tail cached in shared memory, where that
  // measured ahead of the paths below (PlanCachedTail).
  if (allow_registers && PlanCachedTail<T, kAlgorithm>(info, rows, cols, x_aligned, plan)) {
    return plan;
  }

  // A block per row with the whole row cached; while one block waits on its copies, the SM's
  // others compute. The block size, measured on an H200 (tools/softmax_lab.cu, block=N): 128
  // threads while at least 4 such blocks fit on an SM (16 warps) and a thread owns fewer than 16
  // packs, since a small block has the least per-row overhead: 0.96x copy for float 8192 where
  // 256 threads measured 0.88x. Otherwise (long rows), the size with the most resident threads,
  // ties going to more blocks: float 16384 cols 0.87x at 256 threads (3 blocks), 0.97x at 512 (2
  // blocks); half 32768 0.83x and 0.91x; half 16384, 16 packs a thread at 128 threads, 0.926x
  // there and 0.949x at 256 (bfloat16 0.919x, 0.942x). When only one block fits, two half-size
  // blocks that cache part of the row each (PlanTwoPerSm) measured faster still.
  const size_t row_smem = static_cast<size_t>(window) * kPackBytes;
  int best_active = 0;
  int best_threads = 0;
  // 128 threads with 4 or more blocks an SM and fewer than 16 packs a thread: nothing larger is
  // tried.
  bool settled = false;
  auto consider = [&](auto block_tag) {
    constexpr int kBlock = decltype(block_tag)::value;
    const auto* kernel = reinterpret_cast<const void*>(&BlockSoftmaxKernel<T, kAlgorithm, kBlock>);
    if (settled || row_smem > MaxDynamicSmem(kernel, info)) { return; }
    const int active = MaxActiveBlocksPerSm(kernel, info, kBlock, row_smem);
    const int threads = active * kBlock;
    if (active == 0 || threads < best_threads ||
        (threads == best_threads && active <= best_active)) {
      return;
    }
    best_active = active;
    best_threads = threads;
    settled = kBlock == 128 && active >= 4 && window < 16 * kBlock;
    plan.path = Path::kBlockSmem;
    plan.block = kBlock;
    plan.cached_packs = static_cast<int>(window);
    plan.smem = row_smem;
    plan.launch = &LaunchBlock<T, kAlgorithm, kBlock>;
  };
  if constexpr (kIs16Bit<T>) {
    // 16-bit rows of up to kSmallBlockPacks packs on 64 threads (32 blocks an SM can hold twice
    // the rows in flight): measured on an H200 at 4096 cols half 0.89 -> 0.96x copy, bfloat16
    // 0.83 -> 0.96x; 5000 cols 0.91 -> 0.94x and 0.84 -> 0.94x. At 6144 cols (768 packs) half
    // measured 0.97x at 128 threads and 0.955x at 64.
    if (window <= kSmallBlockPacks) {
      consider(std::integral_constant<int, 64>{});
      settled = best_active > 0;
    }
  }
  ForEachBlockSize<T>(consider);
  if (best_active == 1 && PlanTwoPerSm<T, kAlgorithm>(info, rows, window, plan)) { return plan; }
  if (best_active > 0) {
    SetGrid(plan, rows, info, best_active, /*persistent=*/false);
    return plan;
  }

  // The row is longer than shared memory: one block of the largest size per SM caches as much
  // of it as fits, and re-reads only the rest. One row per SM at a time keeps that re-read close
  // behind the first read, so it usually hits L2.
  constexpr int kBlock = kMaxBlockSize<T>;
  const auto* kernel = reinterpret_cast<const void*>(
      &BlockSoftmaxKernel<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>);
  plan.path = Path::kBlockOnline;
  plan.block = kBlock;
  plan.cached_packs = static_cast<int>(MaxDynamicSmem(kernel, info) / kPackBytes);
  plan.smem = static_cast<size_t>(plan.cached_packs) * kPackBytes;
  // Pass 2 stages element-wise stores of uncached packs in each thread's first slot.
  ONEFLITE_CHECK(plan.cached_packs >= kBlock, RuntimeError, "softmax: ", plan.smem,
                 " bytes of shared memory per block are too few for the block_online path");
  plan.launch = &LaunchBlock<T, kAlgorithm, kBlock, true, true, T, kOnlineHeldPacks>;
  SetGrid(plan, rows, info, MaxActiveBlocksPerSm(kernel, info, kBlock, plan.smem),
          /*persistent=*/false);
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
    // "Aligned" needs y too: the warp_tile path stores whole packs of y where it loaded x's.
    // (Tensors from oneflite's allocators always are; a misaligned y from a C++ caller makes
    // the plan one that handles any alignment.)
    const Plan plan = PlanSoftmax<T, kAlgorithm>(cuda_stream->device_info(), rows, cols,
                                                 IsPackAligned(x) && IsPackAligned(y));
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
