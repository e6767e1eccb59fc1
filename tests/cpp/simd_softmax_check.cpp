// Checks the CPU "fast" kernel (cpp/src/ep/cpu/primitive/simd_softmax.inc) variant by variant,
// including variants this machine would not pick: built and run by tests/test_cpu_fast.py.
//
//  * 16-bit conversions, bit for bit against the scalar float16/bfloat16 types (which the tensor
//    tests check against NumPy and ml_dtypes): every 16-bit pattern widened; narrowed, floats
//    with every sign and exponent and the mantissa endings that decide rounding (ties, one
//    either side of a tie), float subnormals, the overflow threshold, infinities and NaNs.
//  * the float and double exps: within 1 ulp where they are not 0 (2 without fused
//    multiply-adds), 0 where they should be;
//  * the log of row sums: within 1 ulp (2 without fused multiply-adds), NaN kept;
//  * Rows() against a plain long-double softmax, every dtype, many row lengths.
//
// Variants: portable 4 lanes; on x86-64 with GCC also AVX2 (8 lanes, F16C) and AVX-512 (16
// lanes) where the CPU has them, and the 16-lane code with portable conversions under AVX2, so
// that the widest vector logic runs even on a CPU without AVX-512.
// Prints one line per variant; exits 1 on the first mismatch of a variant (after printing it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "oneflite/common/float16.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CHECK_X86 1
#include <immintrin.h>
#else
#define CHECK_X86 0
#endif

#define ONEFLITE_SIMD_TEST_HOOKS 1

namespace check {
using oneflite::bfloat16;
using oneflite::float16;

namespace portable {
#define ONEFLITE_SIMD_WIDTH 4
#define ONEFLITE_SIMD_X86 0
#include "ep/cpu/primitive/simd_softmax.inc"
#undef ONEFLITE_SIMD_WIDTH
#undef ONEFLITE_SIMD_X86
}  // namespace portable

#if CHECK_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#define ONEFLITE_SIMD_WIDTH 8
#define ONEFLITE_SIMD_X86 1
#include "ep/cpu/primitive/simd_softmax.inc"
#undef ONEFLITE_SIMD_WIDTH
#undef ONEFLITE_SIMD_X86
}  // namespace avx2
namespace wide_portable {
#define ONEFLITE_SIMD_WIDTH 16
#define ONEFLITE_SIMD_X86 0
#include "ep/cpu/primitive/simd_softmax.inc"
#undef ONEFLITE_SIMD_WIDTH
#undef ONEFLITE_SIMD_X86
}  // namespace wide_portable
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
namespace avx512 {
#define ONEFLITE_SIMD_WIDTH 16
#define ONEFLITE_SIMD_X86 1
#include "ep/cpu/primitive/simd_softmax.inc"
#undef ONEFLITE_SIMD_WIDTH
#undef ONEFLITE_SIMD_X86
}  // namespace avx512
#pragma GCC pop_options
#endif

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Failure {
  std::string what;
};

bool IsHalfNaN(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool IsBFloat16NaN(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// Runs fn(in, out), which takes `lanes` values at a time, over all of `in`, first padded with
// `pad` to whole vectors; returns the outputs, one an input.
template <typename Out, typename In, typename Fn>
std::vector<Out> InVectors(int lanes, Fn fn, std::vector<In>& in, In pad) {
  while (in.size() % lanes != 0) { in.push_back(pad); }
  std::vector<Out> out(in.size());
  for (size_t i = 0; i < in.size(); i += lanes) { fn(&in[i], &out[i]); }
  return out;
}

// Widen(in, out) and Narrow(in, out) convert `lanes` values at a time.
template <typename T, typename Widen, typename Narrow>
void CheckConversions(int lanes, Widen widen, Narrow narrow, const char* type) {
  constexpr bool kHalf = std::is_same_v<T, float16>;
  // Widening: all 65536 patterns.
  std::vector<T> in(65536);
  std::vector<float> out(65536);
  for (uint32_t i = 0; i < 65536; ++i) { in[i].bits = static_cast<uint16_t>(i); }
  for (uint32_t i = 0; i < 65536; i += lanes) { widen(&in[i], &out[i]); }
  for (uint32_t i = 0; i < 65536; ++i) {
    const float want = static_cast<float>(in[i]);
    const bool nan =
        kHalf ? IsHalfNaN(static_cast<uint16_t>(i)) : IsBFloat16NaN(static_cast<uint16_t>(i));
    // A NaN must stay NaN with its sign; F16C also sets the quiet bit of a signaling one.
    const bool ok = nan ? (std::isnan(out[i]) && std::signbit(out[i]) == std::signbit(want))
                        : Bits(out[i]) == Bits(want);
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof(text), "%s widen 0x%04x: got 0x%08x, want 0x%08x", type, i,
                    Bits(out[i]), Bits(want));
      throw Failure{text};
    }
  }

  // Narrowing.
  std::vector<float> values;
  const uint32_t endings[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001,
                              0x3000, 0x5000, 0x6fff, 0x7000, 0x7001, 0x7fff, 0x8000, 0x8001,
                              0x9000, 0xa000, 0xbfff, 0xc000, 0xc001, 0xe000, 0xefff, 0xf000,
                              0xf001, 0xfffe, 0xffff, 0x4000, 0x0800, 0x0400};
  for (uint32_t top = 0; top < 65536; ++top) {
    for (uint32_t end : endings) { values.push_back(FromBits((top << 16) | end)); }
  }
  std::mt19937 rng(1);
  for (int i = 0; i < 200000; ++i) { values.push_back(FromBits(rng())); }
  for (uint32_t u = 0; u < 4096; ++u) { values.push_back(FromBits(u)); }  // float subnormals
  const float specials[] = {65504.0f,
                            65519.99f,
                            65520.0f,
                            65536.0f,
                            5.9604645e-8f,
                            2.9802322e-8f,
                            2.9802326e-8f,
                            6.1035156e-5f,
                            6.1032177e-5f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::max(),
                            0.0f};
  for (float s : specials) {
    values.push_back(s);
    values.push_back(-s);
  }
  const std::vector<T> narrowed = InVectors<T>(lanes, narrow, values, 0.0f);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t want = T(values[i]).bits;
    const uint16_t got = narrowed[i].bits;
    const bool nan = kHalf ? IsHalfNaN(want) : IsBFloat16NaN(want);
    // NaN: sign kept; F16C keeps payload bits the scalar type drops.
    const bool ok =
        nan ? ((kHalf ? IsHalfNaN(got) : IsBFloat16NaN(got)) && (got & 0x8000u) == (want & 0x8000u))
            : got == want;
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof(text), "%s narrow 0x%08x (%.9g): got 0x%04x, want 0x%04x", type,
                    Bits(values[i]), values[i], got, want);
      throw Failure{text};
    }
  }
}

// ---- exp ----------------------------------------------------------------------------------------

// Every 61st float in [-87.3, 0] within `ulps` of exp in double (exp(0) exactly 1); exactly 0
// from -87.7 down to -inf; NaN stays NaN. With fused multiply-adds the polynomial keeps within
// 1 ulp (the x86 variants fuse them explicitly); without (portable code, unless the compiler
// fuses), each step rounds twice, and 2 ulp is the bound.
template <typename ExpFn>
void CheckExp(int lanes, ExpFn exp_fn, double ulps, const char* name) {
  std::vector<float> in;
  for (uint32_t u = 0x80000000u; u <= Bits(-87.3f); u += 61) { in.push_back(FromBits(u)); }
  for (uint32_t u = Bits(-87.7f); u < 0xff800000u; u += 99991) { in.push_back(FromBits(u)); }
  in.push_back(-0.0f);
  in.push_back(0.0f);
  in.push_back(-std::numeric_limits<float>::infinity());
  in.push_back(std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> out = InVectors<float>(lanes, exp_fn, in, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) {
    const double want = std::exp(static_cast<double>(in[i]));
    bool ok;
    if (std::isnan(in[i])) {
      ok = std::isnan(out[i]);
    } else if (in[i] <= -87.7f) {
      ok = out[i] == 0.0f;
    } else if (in[i] == 0.0f) {
      ok = out[i] == 1.0f;
    } else {
      const float rounded = static_cast<float>(want);
      const double ulp = std::nextafter(rounded, INFINITY) - rounded;
      ok = std::fabs(out[i] - want) <= ulps * ulp;
    }
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof(text), "%s exp(%.9g) = %.9g, want %.9g", name, in[i], out[i],
                    want);
      throw Failure{text};
    }
  }
}

// Whether a double result lies within `ulps` units in the last place of the exact value (a
// long double, rounded to double for the unit).
bool WithinUlps(double got, long double want, double ulps) {
  const double rounded = static_cast<double>(want);
  const double ulp = std::nextafter(rounded, INFINITY) - rounded;
  return std::fabs(static_cast<long double>(got) - want) <= ulps * ulp;
}

// double: every argument of a spread over [-708.3, 0] (evenly, and in log toward 0), the
// multiples of ln(2)/2 (where the reduced argument is at its widest) and their neighbours,
// within `ulps` of the long-double exp; exactly 0 from -708.8 down to -inf (between, results
// under 2^-1022, subnormal or 0); exp(0) exactly 1; NaN stays NaN.
template <typename ExpFn>
void CheckExpDouble(int lanes, ExpFn exp_fn, double ulps, const char* name) {
  std::vector<double> in;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> spread(-708.3, 0.0);
  std::uniform_real_distribution<double> exponent(-60.0, 9.45);
  for (int i = 0; i < 200000; ++i) {
    in.push_back(spread(rng));
    in.push_back(-std::exp2(exponent(rng)));
  }
  for (int k = 1; k <= 2043; ++k) {
    const double v = -k * 0.34657359027997264;  // k ln(2) / 2
    if (v < -708.3) { break; }
    for (const double w : {std::nextafter(v, -INFINITY), v, std::nextafter(v, 0.0)}) {
      in.push_back(w);
    }
  }
  for (const double v : {-708.8, -709.0, -745.2, -746.0, -800.0, -1e300}) { in.push_back(v); }
  in.push_back(-std::numeric_limits<double>::infinity());
  in.push_back(-0.0);
  in.push_back(0.0);
  in.push_back(std::numeric_limits<double>::quiet_NaN());
  const std::vector<double> out = InVectors<double>(lanes, exp_fn, in, 0.0);
  for (size_t i = 0; i < in.size(); ++i) {
    bool ok;
    if (std::isnan(in[i])) {
      ok = std::isnan(out[i]);
    } else if (in[i] <= -708.8) {
      ok = out[i] == 0.0;
    } else if (in[i] < -708.3) {
      ok = out[i] >= 0.0 && out[i] <= 2.3e-308;
    } else if (in[i] == 0.0) {
      ok = out[i] == 1.0;
    } else {
      ok = WithinUlps(out[i], std::exp(static_cast<long double>(in[i])), ulps);
    }
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof(text), "%s exp(%.17g) = %.17g, want %.17Lg", name, in[i], out[i],
                    std::exp(static_cast<long double>(in[i])));
      throw Failure{text};
    }
  }
}

// ---- log of row sums ---------------------------------------------------------------------------

// Sums from 1 to 2^62 (row sums are at least 1): spread evenly in log, just above 1, and powers
// of two and sqrt(2) with their neighbours (the ends of the reduction's interval), against the
// long-double log; NaN stays NaN. Bound as for exp: 1 ulp fused, 2 where each step rounds twice.
template <typename LogFn>
void CheckLog(int lanes, LogFn log_fn, double ulps, const char* name) {
  std::vector<double> in;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < 200000; ++i) { in.push_back(std::exp2(62.0 * unit(rng))); }
  for (int i = 0; i < 50000; ++i) { in.push_back(1.0 + std::exp2(-60.0 * unit(rng))); }
  in.push_back(1.0);
  for (int k = 0; k <= 62; ++k) {
    for (const double m : {1.0, std::sqrt(2.0), std::sqrt(0.5)}) {
      const double v = std::ldexp(m, k);
      for (const double w : {std::nextafter(v, 0.0), v, std::nextafter(v, INFINITY)}) {
        if (w >= 1.0) { in.push_back(w); }
      }
    }
  }
  in.push_back(std::numeric_limits<double>::quiet_NaN());
  const std::vector<double> out = InVectors<double>(lanes, log_fn, in, 1.0);
  for (size_t i = 0; i < in.size(); ++i) {
    bool ok;
    const long double want = std::log(static_cast<long double>(in[i]));
    if (std::isnan(in[i])) {
      ok = std::isnan(out[i]);
    } else if (in[i] == 1.0) {
      ok = out[i] == 0.0;
    } else {
      ok = WithinUlps(out[i], want, ulps);
    }
    if (!ok) {
      char text[160];
      std::snprintf(text, sizeof(text), "%s log(%.17g) = %.17g, want %.17Lg", name, in[i], out[i],
                    want);
      throw Failure{text};
    }
  }
}

// ---- rows ---------------------------------------------------------------------------------------

template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}
template <typename T>
T FromDouble(double d) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    return T(d);
  } else {
    return static_cast<T>(d);
  }
}

// Relative tolerance on softmax, absolute on log_softmax: a few ulp of the storage type.
template <typename T>
double Tolerance() {
  if constexpr (std::is_same_v<T, float16>) return 2e-3;
  if constexpr (std::is_same_v<T, bfloat16>) return 1.6e-2;
  if constexpr (std::is_same_v<T, float>) return 2e-6;
  return 1e-13;
}

// Absolute slack: the storage type's smallest subnormal for halves; for the others, exp's flush
// to 0 of arguments below about -87.3 (float) or -708 (double), results under 2^-126 or 2^-1022.
template <typename T>
double Slack() {
  if constexpr (std::is_same_v<T, float16>) return 5.96e-8;
  if constexpr (std::is_same_v<T, double>) return 2.3e-308;
  return 1.2e-38;
}

template <typename T, typename RowsFn>
void CheckRows(RowsFn rows_fn, const char* type, std::mt19937& rng) {
  std::vector<int64_t> lengths;
  for (int64_t c = 1; c <= 70; ++c) { lengths.push_back(c); }
  for (int64_t c : {100, 127, 128, 129, 255, 511, 512, 513, 1000, 1023, 1025, 4099, 20000}) {
    lengths.push_back(c);
  }
  std::normal_distribution<double> normal(0.0, 4.0);
  for (int64_t cols : lengths) {
    // Nine rows: two groups of four (float and double rows of up to 128 columns, 16-bit rows of
    // up to 512, and rows of two vectors with masked loads) or one of eight (rows of up to one
    // vector, masked), and one alone. y has a guard after the last row, which no store may touch.
    const int64_t rows = 9;
    constexpr int64_t kGuard = 64;
    const T sentinel = FromDouble<T>(1234.0);
    std::vector<T> x(rows * cols), y(rows * cols + kGuard, sentinel);
    for (auto& v : x) { v = FromDouble<T>(normal(rng)); }
    // Rows 1 and 8 hold one huge value: the rest underflow. Rows 2 and 6 have a -inf (not all).
    x[cols + (cols / 2)] = FromDouble<T>(60.0);
    x[8 * cols] = FromDouble<T>(80.0);
    x[2 * cols] = FromDouble<T>(-std::numeric_limits<double>::infinity());
    x[7 * cols - 1] = FromDouble<T>(-std::numeric_limits<double>::infinity());
    std::vector<float> buffer(portable::BufferFloats(cols));
    for (int log = 0; log < 2; ++log) {
      rows_fn(rows, cols, x.data(), y.data(), log == 1, buffer.data());
      for (int64_t i = rows * cols; i < rows * cols + kGuard; ++i) {
        if (std::memcmp(&y[i], &sentinel, sizeof(T)) != 0) {
          throw Failure{std::string(type) + " cols=" + std::to_string(cols) +
                        ": a store past the last row"};
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        long double max = -INFINITY, sum = 0;
        for (int64_t c = 0; c < cols; ++c) {
          max = std::max<long double>(max, ToDouble(x[r * cols + c]));
        }
        for (int64_t c = 0; c < cols; ++c) { sum += std::exp(ToDouble(x[r * cols + c]) - max); }
        for (int64_t c = 0; c < cols; ++c) {
          const long double shifted = ToDouble(x[r * cols + c]) - max;
          const double want = log ? static_cast<double>(shifted - std::log(sum))
                                  : static_cast<double>(std::exp(shifted) / sum);
          const double got = ToDouble(y[r * cols + c]);
          const double error = std::fabs(got - want);
          const double scale = log ? std::max(1.0, std::fabs(want)) : std::fabs(want);
          double allowed = Tolerance<T>() * scale + Slack<T>();
          if (!log && std::isfinite(static_cast<double>(shifted))) {
            // Softmax also inherits the rounding of x - max in the compute type, which exp
            // turns into a relative error of |x - max| * eps.
            const double eps = std::is_same_v<T, double> ? 1.2e-16 : 6e-8;
            allowed += std::fabs(want) * std::fabs(static_cast<double>(shifted)) * eps;
          }
          const bool ok = std::isnan(want)   ? std::isnan(got)
                          : std::isinf(want) ? got == want
                                             : error <= allowed;
          if (!ok) {
            char text[200];
            std::snprintf(text, sizeof(text), "%s %s cols=%ld row %ld col %ld: got %.9g, want %.9g",
                          type, log ? "log_softmax" : "softmax", static_cast<long>(cols),
                          static_cast<long>(r), static_cast<long>(c), got, want);
            throw Failure{text};
          }
        }
      }
    }
    // NaN anywhere makes the row NaN; so do a row of -inf and a row holding +inf. Nine rows,
    // the first five's pattern repeated: the groups of four or eight, and one alone.
    std::vector<T> special(9 * cols, FromDouble<T>(-std::numeric_limits<double>::infinity()));
    for (int64_t r : {0, 5}) {
      for (int64_t c = 0; c < cols; ++c) {
        special[r * cols + c] = FromDouble<T>(normal(rng));
        special[(r + 2) * cols + c] = FromDouble<T>(normal(rng));
        if (r + 4 < 9) { special[(r + 4) * cols + c] = FromDouble<T>(normal(rng)); }
      }
      special[(r + 1) * cols - 1] = FromDouble<T>(std::numeric_limits<double>::quiet_NaN());
      special[(r + 2) * cols] = FromDouble<T>(std::numeric_limits<double>::infinity());
    }
    special[4 * cols + cols / 2] = FromDouble<T>(std::numeric_limits<double>::quiet_NaN());
    std::vector<T> out(9 * cols);
    for (int log = 0; log < 2; ++log) {
      rows_fn(9, cols, special.data(), out.data(), log == 1, buffer.data());
      for (int64_t i = 0; i < 9 * cols; ++i) {
        if (!std::isnan(ToDouble(out[i]))) {
          throw Failure{std::string(type) + " NaN row: element " + std::to_string(i) +
                        " of cols=" + std::to_string(cols) + " is not NaN"};
        }
      }
    }
  }
}

#define CHECK_VARIANT(ns, lanes, exp_ulps)                                                     \
  [&]() {                                                                                      \
    std::mt19937 rng(7);                                                                       \
    CheckConversions<float16>(                                                                 \
        lanes, [](const float16* i, float* o) { ns::WidenRaw(i, o); },                         \
        [](const float* i, float16* o) { ns::NarrowRaw(i, o); }, #ns " float16");              \
    CheckConversions<bfloat16>(                                                                \
        lanes, [](const bfloat16* i, float* o) { ns::WidenRaw(i, o); },                        \
        [](const float* i, bfloat16* o) { ns::NarrowRaw(i, o); }, #ns " bfloat16");            \
    /* The same, two vectors at a time (StorePair), as the last passes narrow bfloat16. */     \
    auto widen_two = [](const auto* i, float* o) {                                             \
      ns::WidenRaw(i, o);                                                                      \
      ns::WidenRaw(i + lanes, o + lanes);                                                      \
    };                                                                                         \
    auto narrow_two = [](const float* i, auto* o) { ns::NarrowPairRaw(i, o); };                \
    CheckConversions<float16>(2 * lanes, widen_two, narrow_two, #ns " float16 pairs");         \
    CheckConversions<bfloat16>(2 * lanes, widen_two, narrow_two, #ns " bfloat16 pairs");       \
    CheckExp(lanes, [](const float* i, float* o) { ns::ExpRaw(i, o); }, exp_ulps, #ns " exp"); \
    auto exp_double = [](const double* i, double* o) { ns::ExpRaw(i, o); };                    \
    CheckExpDouble(lanes / 2, exp_double, exp_ulps, #ns " double exp");                        \
    auto log_raw = [](const double* i, double* o) { ns::LogRaw(i, o); };                       \
    CheckLog(lanes / 2, log_raw, exp_ulps, #ns " log");                                        \
    auto rows = [](int64_t r, int64_t c, const auto* x, auto* y, bool log, float* b) {         \
      ns::Rows(r, c, x, y, log, b);                                                            \
    };                                                                                         \
    CheckRows<float>(rows, #ns " float32", rng);                                               \
    CheckRows<double>(rows, #ns " float64", rng);                                              \
    CheckRows<float16>(rows, #ns " float16", rng);                                             \
    CheckRows<bfloat16>(rows, #ns " bfloat16", rng);                                           \
  }

}  // namespace check

int main() {
  using namespace check;
  int failures = 0;
  auto attempt = [&](const char* name, bool runnable, auto run) {
    if (!runnable) {
      std::printf("%s: skipped, the CPU lacks it\n", name);
      return;
    }
    try {
      run();
      std::printf("%s: ok\n", name);
    } catch (const Failure& f) {
      std::printf("%s: FAILED %s\n", name, f.what.c_str());
      ++failures;
    }
  };
  attempt("portable", true, CHECK_VARIANT(portable, 4, 2.0));
#if CHECK_X86
  __builtin_cpu_init();
  const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                        __builtin_cpu_supports("f16c");
  const bool has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  attempt("avx2", has_avx2, CHECK_VARIANT(avx2, 8, 1.0));
  attempt("wide_portable", has_avx2, CHECK_VARIANT(wide_portable, 16, 2.0));
  attempt("avx512", has_avx512, CHECK_VARIANT(avx512, 16, 1.0));
#endif
  return failures == 0 ? 0 : 1;
}
