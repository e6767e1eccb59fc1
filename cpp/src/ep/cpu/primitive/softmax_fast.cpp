// The CPU "fast" backend for softmax and log_softmax, the default by priority.
//
// Two things make it fast, and both stay portable C++:
//  * exp is a short polynomial written so the compiler vectorizes it (no libm call per
//    element), and the row loops are SIMD loops with explicit reductions. Each row function is
//    compiled three times, for AVX-512, AVX2+FMA and baseline x86-64, and the loader picks the
//    best the CPU has (GCC's target_clones).
//  * rows are split across threads with OpenMP.
// 16-bit rows are widened into a per-thread float buffer, computed in float, and narrowed.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "oneflite/ep/cpu/cpu_threads.h"
#include "oneflite/ep/primitive/softmax.h"
#include "type_traits.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ONEFLITE_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONEFLITE_CPU_CLONES
#endif

namespace oneflite::ep::primitive::cpu {

namespace {

// Below this many elements one thread is faster than waking a team.
constexpr int64_t kMinElementsPerThread = 1 << 15;

template <typename To, typename From>
inline To BitCast(From from) {
  static_assert(sizeof(To) == sizeof(From));
  return __builtin_bit_cast(To, from);
}

// exp(x) for x <= 0, the only arguments softmax needs (x - max). Within 2 ulp of the exact
// value for x >= -87; below that (including -inf) it returns exactly 0, whose relative error
// against a row sum >= 1 is nil. NaN gives NaN. Branch-free so that loops over it vectorize:
//   n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2], exp(x) = 2^n * exp(r),
// with exp(r) by its Taylor series to r^7 (truncation error < 1e-8 relative) and 2^n built from
// exponent bits. The rounding uses the 1.5 * 2^23 trick, which also leaves n in the low bits of
// the float, so no float-to-int conversion is needed (none that could be undefined for NaN).
inline float ExpNonPositive(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // ln 2 split so n * kLn2Hi is exact
  constexpr float kLn2Lo = 1.42860682030941723e-6f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  const float clamped = x < -87.0f ? -87.0f : x;
  const float shifted = clamped * kLog2e + kMagic;
  const float n = shifted - kMagic;
  const float r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // n's two's-complement bits, biased into the exponent field; unsigned, so that the garbage a
  // NaN leaves here wraps instead of overflowing.
  const uint32_t n_bits = BitCast<uint32_t>(shifted) - BitCast<uint32_t>(kMagic);
  const float scale = BitCast<float>((n_bits + 127u) << 23);
  return x < -87.0f ? 0.0f : p * scale;
}

// The same for double: Taylor series to r^12, valid down to -708.
inline double ExpNonPositive(double x) {
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kLn2Hi = 0.693147180369123816490;  // 32 significant bits
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  const double clamped = x < -708.0 ? -708.0 : x;
  const double shifted = clamped * kLog2e + kMagic;
  const double n = shifted - kMagic;
  const double r = (clamped - n * kLn2Hi) - n * kLn2Lo;
  double p = 1.0 / 479001600;
  p = p * r + 1.0 / 39916800;
  p = p * r + 1.0 / 3628800;
  p = p * r + 1.0 / 362880;
  p = p * r + 1.0 / 40320;
  p = p * r + 1.0 / 5040;
  p = p * r + 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const uint64_t n_bits = BitCast<uint64_t>(shifted) - BitCast<uint64_t>(kMagic);
  const double scale = BitCast<double>((n_bits + 1023u) << 52);
  return x < -708.0 ? 0.0 : p * scale;
}

// One row, in place of the reference's three passes: max; exp, sum (softmax keeps the
// exponentials in y); then scale or shift. NaN skips the max but poisons the sum, so the whole
// row becomes NaN, as in the reference. The sum is accumulated in double even for float rows:
// over tens of thousands of columns a float sum drifts by ~1e-6, which log_softmax shows as an
// absolute error, and the wider adds cost little next to the exponentials.
template <typename C, bool kLog>
inline void SoftmaxRow(int64_t cols, const C* __restrict x, C* __restrict y) {
  C max = -std::numeric_limits<C>::infinity();
#pragma omp simd reduction(max : max)
  for (int64_t c = 0; c < cols; ++c) { max = x[c] > max ? x[c] : max; }
  double sum = 0;
  if constexpr (kLog) {
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < cols; ++c) { sum += ExpNonPositive(x[c] - max); }
    const C log_sum = static_cast<C>(std::log(sum));
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) { y[c] = (x[c] - max) - log_sum; }
  } else {
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < cols; ++c) {
      const C e = ExpNonPositive(x[c] - max);
      y[c] = e;
      sum += e;
    }
    const C inv = static_cast<C>(1.0 / sum);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) { y[c] *= inv; }
  }
}

ONEFLITE_CPU_CLONES void FloatRows(int64_t rows, int64_t cols, const float* x, float* y,
                                   bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    if (log) {
      SoftmaxRow<float, true>(cols, x + r * cols, y + r * cols);
    } else {
      SoftmaxRow<float, false>(cols, x + r * cols, y + r * cols);
    }
  }
}

ONEFLITE_CPU_CLONES void DoubleRows(int64_t rows, int64_t cols, const double* x, double* y,
                                    bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    if (log) {
      SoftmaxRow<double, true>(cols, x + r * cols, y + r * cols);
    } else {
      SoftmaxRow<double, false>(cols, x + r * cols, y + r * cols);
    }
  }
}

// 16-bit rows: widen into `buffer` (2 * cols floats), compute, narrow.
template <typename T>
void HalfRows(int64_t rows, int64_t cols, const T* x, T* y, bool log, float* buffer) {
  float* in = buffer;
  float* out = buffer + cols;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) { in[c] = static_cast<float>(x[r * cols + c]); }
    FloatRows(1, cols, in, out, log);
    for (int64_t c = 0; c < cols; ++c) { y[r * cols + c] = static_cast<T>(out[c]); }
  }
}

template <typename T>
void Rows(int64_t rows, int64_t cols, const T* x, T* y, bool log) {
  if constexpr (std::is_same_v<T, float>) {
    FloatRows(rows, cols, x, y, log);
  } else if constexpr (std::is_same_v<T, double>) {
    DoubleRows(rows, cols, x, y, log);
  } else {
    thread_local std::vector<float> buffer;
    buffer.resize(static_cast<size_t>(2 * cols));
    HalfRows(rows, cols, x, y, log, buffer.data());
  }
}

int ThreadsFor(int64_t rows, int64_t cols) {
#ifdef _OPENMP
  const int64_t by_size = rows * cols / kMinElementsPerThread;
  const int64_t limit = std::min<int64_t>(ep::cpu::GetNumThreads(), rows);
  return static_cast<int>(std::max<int64_t>(1, std::min(by_size, limit)));
#else
  return 1;
#endif
}

template <typename Interface, typename T, bool kLog>
class FastSoftmax final : public Interface {
 public:
  void Launch(Stream* /*stream*/, int64_t rows, int64_t cols, const void* x, void* y) override {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    const int threads = ThreadsFor(rows, cols);
    if (threads == 1) {
      Rows(rows, cols, in, out, kLog);
      return;
    }
    // Static contiguous blocks of rows: each thread streams through its own part of memory.
#pragma omp parallel num_threads(threads)
    {
#ifdef _OPENMP
      const int64_t team = omp_get_num_threads();
      const int64_t id = omp_get_thread_num();
#else
      const int64_t team = 1;
      const int64_t id = 0;
#endif
      const int64_t begin = rows * id / team;
      const int64_t end = rows * (id + 1) / team;
      Rows(end - begin, cols, in + begin * cols, out + begin * cols, kLog);
    }
  }

  std::string Describe(int64_t rows, int64_t cols) const override {
    return "vectorized polynomial exp, 2 passes over x per row, " +
           std::to_string(ThreadsFor(rows, cols)) + " OpenMP thread(s)";
  }
};

template <typename FactoryT, bool kLog>
class FastFactory final : public FactoryT {
 public:
  using Interface = typename FactoryT::PrimitiveType;
  std::unique_ptr<Interface> New(DataType dtype) override {
    switch (dtype) {
      case DataType::kFloat16: return std::make_unique<FastSoftmax<Interface, float16, kLog>>();
      case DataType::kBFloat16: return std::make_unique<FastSoftmax<Interface, bfloat16, kLog>>();
      case DataType::kFloat32: return std::make_unique<FastSoftmax<Interface, float, kLog>>();
      case DataType::kFloat64: return std::make_unique<FastSoftmax<Interface, double, kLog>>();
      default: return nullptr;
    }
  }
};

using FastSoftmaxFactory = FastFactory<SoftmaxFactory, false>;
using FastLogSoftmaxFactory = FastFactory<LogSoftmaxFactory, true>;

// Priority 10: above the reference backend (0), so it is the default on the CPU.
ONEFLITE_REGISTER_PRIMITIVE(SoftmaxFactory, DeviceType::kCPU, "fast", 10, FastSoftmaxFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64);
ONEFLITE_REGISTER_PRIMITIVE(LogSoftmaxFactory, DeviceType::kCPU, "fast", 10,
                            FastLogSoftmaxFactory, DataType::kFloat16, DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64);

}  // namespace

}  // namespace oneflite::ep::primitive::cpu
