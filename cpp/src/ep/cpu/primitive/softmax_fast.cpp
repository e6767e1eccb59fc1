// The CPU "fast" backend for softmax and log_softmax, the default by priority.
//
// Two things make it fast:
//  * each row is three vector loops (max; exp and sum; scale) with a polynomial exp, written
//    once in simd_softmax.inc with GCC/Clang vector extensions and compiled once per instruction
//    set: portable 128-bit (SSE2 / NEON), and on x86 with GCC also AVX2+FMA+F16C and AVX-512.
//    The best one the CPU has is picked at run time. 16-bit rows are widened and narrowed in
//    the same loops (F16C for halves, shifts for bfloat16) and computed in float.
//  * rows are split across threads with OpenMP.
// NOTES.md next to this file records what was measured and why it is this way.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "oneflite/common/data_type_dispatch.h"
#include "oneflite/common/error.h"
#include "oneflite/common/float16.h"
#include "oneflite/ep/cpu/cpu_threads.h"
#include "oneflite/ep/primitive/softmax.h"

#ifdef _OPENMP
#include <omp.h>
#endif

// The x86 variants need GCC's `#pragma GCC target` (and its cpu-feature builtins); other
// compilers and architectures get the portable variant alone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONEFLITE_CPU_MULTIVERSION 1
#include <immintrin.h>
#else
#define ONEFLITE_CPU_MULTIVERSION 0
#endif

namespace oneflite::ep::primitive::cpu {

namespace {

namespace portable {
#define ONEFLITE_SIMD_WIDTH 4
#define ONEFLITE_SIMD_X86 0
#include "simd_softmax.inc"
#undef ONEFLITE_SIMD_WIDTH
#undef ONEFLITE_SIMD_X86
}  // namespace portable

#if ONEFLITE_CPU_MULTIVERSION
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
namespace avx2 {
#define ONEFLITE_SIMD_WIDTH 8
#define ONEFLITE_SIMD_X86 1
#include "simd_softmax.inc"
#undef ONEFLITE_SIMD_WIDTH
#undef ONEFLITE_SIMD_X86
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
namespace avx512 {
#define ONEFLITE_SIMD_WIDTH 16
#define ONEFLITE_SIMD_X86 1
#include "simd_softmax.inc"
#undef ONEFLITE_SIMD_WIDTH
#undef ONEFLITE_SIMD_X86
}  // namespace avx512
#pragma GCC pop_options
#endif

enum class Isa { kPortable, kAvx2, kAvx512 };

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

const char* IsaDescription(Isa isa) {
  switch (isa) {
    case Isa::kPortable:
      return "portable 128-bit vectors";
    case Isa::kAvx2:
      return "AVX2+FMA+F16C, 8 floats per vector";
    case Isa::kAvx512:
      return "AVX-512, 16 floats per vector";
  }
  return "?";
}

Isa DetectIsa() {
#if ONEFLITE_CPU_MULTIVERSION
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))) {
    return Isa::kPortable;
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return Isa::kAvx512;
  }
  return Isa::kAvx2;
#else
  return Isa::kPortable;
#endif
}

// The best variant the CPU runs, capped by ONEFLITE_CPU_ISA ("portable", "avx2" or "avx512"),
// which exists so that tests and benchmarks can exercise the lower variants on any machine.
// Decided once per process; an unknown name makes every fast softmax raise ValueError.
struct IsaChoice {
  Isa isa = Isa::kPortable;
  std::string error;  // non-empty: ONEFLITE_CPU_ISA names no variant
};

const IsaChoice& SelectIsa() {
  static const IsaChoice choice = [] {
    IsaChoice c;
    c.isa = DetectIsa();
    const char* env = std::getenv("ONEFLITE_CPU_ISA");
    if (env == nullptr || *env == '\0') { return c; }
    for (Isa cap : {Isa::kPortable, Isa::kAvx2, Isa::kAvx512}) {
      if (std::strcmp(env, IsaName(cap)) == 0) {
        c.isa = std::min(cap, c.isa);
        return c;
      }
    }
    c.error = std::string("ONEFLITE_CPU_ISA=") + env +
              ": expected portable, avx2 or avx512 (a cap on the instruction set)";
    return c;
  }();
  return choice;
}

template <typename T>
void Rows(Isa isa, int64_t rows, int64_t cols, const T* x, T* y, bool log) {
  float* buffer = nullptr;
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    if (!log) {
      // Softmax keeps a 16-bit row's exponentials in float.
      thread_local std::vector<float> kept;
      kept.resize(static_cast<size_t>(portable::BufferFloats(cols)));
      buffer = kept.data();
    }
  }
  switch (isa) {
#if ONEFLITE_CPU_MULTIVERSION
    case Isa::kAvx512:
      avx512::Rows(rows, cols, x, y, log, buffer);
      return;
    case Isa::kAvx2:
      avx2::Rows(rows, cols, x, y, log, buffer);
      return;
#endif
    default:
      portable::Rows(rows, cols, x, y, log, buffer);
      return;
  }
}

// Below this many elements one thread is faster than waking a team.
constexpr int64_t kMinElementsPerThread = 1 << 15;

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
  explicit FastSoftmax(Isa isa) : isa_(isa) {}

  void Launch(Stream* /*stream*/, int64_t rows, int64_t cols, const void* x, void* y) override {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    const int threads = ThreadsFor(rows, cols);
    if (threads == 1) {
      Rows(isa_, rows, cols, in, out, kLog);
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
      Rows(isa_, end - begin, cols, in + begin * cols, out + begin * cols, kLog);
    }
  }

  std::string Describe(int64_t rows, int64_t cols) const override {
    return std::string(IsaDescription(isa_)) +
           ", polynomial exp, 3 vector loops per row (x from memory once), " +
           std::to_string(ThreadsFor(rows, cols)) + " OpenMP thread(s)";
  }

 private:
  Isa isa_;
};

template <typename FactoryT, bool kLog>
class FastFactory final : public FactoryT {
 public:
  using Interface = typename FactoryT::PrimitiveType;
  std::unique_ptr<Interface> New(DataType dtype) override {
    const IsaChoice& choice = SelectIsa();
    ONEFLITE_CHECK(choice.error.empty(), ValueError, choice.error);
    const Isa isa = choice.isa;
    return VisitFloatingDataType(dtype, [isa](auto tag) -> std::unique_ptr<Interface> {
      return std::make_unique<FastSoftmax<Interface, decltype(tag), kLog>>(isa);
    });
  }
};

using FastSoftmaxFactory = FastFactory<SoftmaxFactory, false>;
using FastLogSoftmaxFactory = FastFactory<LogSoftmaxFactory, true>;

// Priority 10: above the reference backend (0), so it is the default on the CPU.
ONEFLITE_REGISTER_PRIMITIVE(SoftmaxFactory, DeviceType::kCPU, "fast", 10, FastSoftmaxFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64);
ONEFLITE_REGISTER_PRIMITIVE(LogSoftmaxFactory, DeviceType::kCPU, "fast", 10, FastLogSoftmaxFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64);

}  // namespace

}  // namespace oneflite::ep::primitive::cpu
