// What every path of the CUDA softmax family shares (softmax_kernels.cuh gives the overview):
// the element types and their 16-byte packs, the arithmetic each type computes in, and the
// row windows through which a row off a 16-byte boundary is still read in whole packs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

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
__device__ __forceinline__ Pack<T, kBytes> LoadPackOrNegativeInfinity(const T* from, bool in_row) {
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

// Widens kCount packs into v (P values each, pack by pack) and returns the max of v: how the
// kernels that hold a row's values in registers begin.
template <typename T, int kCount = 1>
__device__ __forceinline__ ComputeType<T> WidenWithMax(const Pack<T>* packs, ComputeType<T>* v) {
  constexpr int P = PackSize<T>::value;
#pragma unroll
  for (int n = 0; n < kCount; ++n) {
#pragma unroll
    for (int j = 0; j < P; ++j) { v[n * P + j] = ToCompute(packs[n].elem[j]); }
  }
  ComputeType<T> m = v[0];
#pragma unroll
  for (int i = 1; i < kCount * P; ++i) { m = Max(m, v[i]); }
  return m;
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

// ---- Reading ahead ----------------------------------------------------------------------------

// How far past a block's own bytes of x it asks L2 for more (ReadAhead): 4 MiB. Lines asked for
// too early are evicted before the block that reads them starts, and x is read twice: on an H200
// (60 MiB of L2) that cliff was at 8 MiB for rows of 2048 columns and float 12345 (16384 lost
// 1.3% there), 10 MiB for float 1024-1536 and 12 MiB for float 8192 (NOTES.md, items 97 and 99),
// so 4 MiB is half the nearest. One distance serves every row: over float 1024-16384 columns 4
// MiB was the best of 2, 4, 6 and 8 MiB, or within 0.5% of it, but at 8192 (8 MiB +0.6%; item
// 99). The planner reads ahead only on devices with ten times this much L2 (ReadAheadRunsOn).
#ifdef ONEFLITE_LAB_READ_AHEAD_KIB  // tools/softmax_lab.cu built to measure another distance
constexpr int64_t kReadAheadBytes = int64_t{ONEFLITE_LAB_READ_AHEAD_KIB} << 10;
#else
constexpr int64_t kReadAheadBytes = int64_t{4} << 20;
#endif

// Asks L2 for x's elements [first, first + count), moved kReadAheadBytes on: the bytes a block
// that starts a little later will read. One instruction (the copy engine's bulk prefetch, sm_90
// on) that takes no registers or shared memory and completes on nothing; clipped to x's
// `elements` and trimmed inward to the 16-byte boundaries the instruction needs. A block's own
// loads then find its row in L2, or on its way there, rather than waiting on the DRAM, so it
// retires sooner and the DRAM's queue stays full between blocks. Nothing is asked for before
// sm_90 (the planner never reads ahead there).
template <typename T>
__device__ __forceinline__ void ReadAhead(const T* x, int64_t elements, int64_t first,
                                          int64_t count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr uint64_t kAlign = 16;
  const uint64_t base = reinterpret_cast<uintptr_t>(x);
  const uint64_t end = base + static_cast<uint64_t>(elements) * sizeof(T);
  const uint64_t from = base + static_cast<uint64_t>(first) * sizeof(T) + kReadAheadBytes;
  const uint64_t to = min(from + static_cast<uint64_t>(count) * sizeof(T), end) & ~(kAlign - 1);
  const uint64_t start = (from + kAlign - 1) & ~(kAlign - 1);
  if (start < to) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(start),
                 "r"(static_cast<uint32_t>(to - start)));
  }
#endif
}

// ---- Row windows ----------------------------------------------------------------------------

// How many elements the row starting at `row` sits past the kBytes boundary (16 bytes unless
// said otherwise) at or before it. The row's window starts there, so window pack k covers row
// columns [k * P - head, ... + P).
template <int kBytes = kPackBytes, typename T>
__device__ __forceinline__ int HeadOffset(const T* row) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(row) % kBytes) / static_cast<int>(sizeof(T));
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

}  // namespace oneflite::ep::primitive::cuda_softmax
