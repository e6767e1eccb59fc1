// The CPU "reference" backend for softmax and log_softmax: the golden model.
//
// Plain loops in three passes over each row (max; exp and sum; scale). Elementwise math is in
// float for 16-bit types and float32, in double for double; each row's sum is accumulated in
// double, so that long float rows stay accurate. Nothing clever, so that it is obviously right;
// the faster backends are tested against it and against NumPy.
#include <cmath>
#include <limits>
#include <type_traits>

#include "oneflite/common/data_type_dispatch.h"
#include "oneflite/ep/primitive/softmax.h"

namespace oneflite::ep::primitive::cpu {

namespace {

enum class Algorithm { kSoftmax, kLogSoftmax };

// Softmax or log-softmax of each of `rows` rows of `cols` elements.
//   x, y: contiguous row-major (rows, cols); rows, cols >= 1.
// NaN anywhere in a row makes the row NaN: std::fmax skips it, but it reaches every output
// through the sum. A row of -inf has max -inf and exp(-inf - -inf) = NaN, so it gives NaN, as
// PyTorch does; likewise a row holding +inf gives NaN through inf - inf.
template <typename T, Algorithm kAlgorithm>
void SoftmaxRows(int64_t rows, int64_t cols, const T* x, T* y) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;  // 16-bit: float
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x + r * cols;
    T* out = y + r * cols;

    C max = -std::numeric_limits<C>::infinity();
    for (int64_t c = 0; c < cols; ++c) { max = std::fmax(max, static_cast<C>(in[c])); }

    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) { sum += std::exp(static_cast<C>(in[c]) - max); }

    if constexpr (kAlgorithm == Algorithm::kSoftmax) {
      for (int64_t c = 0; c < cols; ++c) {
        out[c] = static_cast<T>(std::exp(static_cast<C>(in[c]) - max) / static_cast<C>(sum));
      }
    } else {
      const C log_sum = static_cast<C>(std::log(sum));
      for (int64_t c = 0; c < cols; ++c) {
        out[c] = static_cast<T>(static_cast<C>(in[c]) - max - log_sum);
      }
    }
  }
}

template <typename Interface, typename T, Algorithm kAlgorithm>
class SoftmaxImpl final : public Interface {
 public:
  void Launch(Stream* /*stream*/, int64_t rows, int64_t cols, const void* x, void* y) override {
    SoftmaxRows<T, kAlgorithm>(rows, cols, static_cast<const T*>(x), static_cast<T*>(y));
  }
  std::string Describe(int64_t rows, int64_t cols) const override {
    return "three passes per row (max; exp and sum; scale), one thread";
  }
};

template <typename FactoryT, typename Interface, Algorithm kAlgorithm>
class ReferenceFactory final : public FactoryT {
 public:
  std::unique_ptr<Interface> New(DataType dtype) override {
    return VisitFloatingDataType(dtype, [](auto tag) -> std::unique_ptr<Interface> {
      return std::make_unique<SoftmaxImpl<Interface, decltype(tag), kAlgorithm>>();
    });
  }
};

using ReferenceSoftmaxFactory = ReferenceFactory<SoftmaxFactory, Softmax, Algorithm::kSoftmax>;
using ReferenceLogSoftmaxFactory =
    ReferenceFactory<LogSoftmaxFactory, LogSoftmax, Algorithm::kLogSoftmax>;

ONEFLITE_REGISTER_PRIMITIVE(SoftmaxFactory, DeviceType::kCPU, "reference", 0,
                            ReferenceSoftmaxFactory, DataType::kFloat16, DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64);
ONEFLITE_REGISTER_PRIMITIVE(LogSoftmaxFactory, DeviceType::kCPU, "reference", 0,
                            ReferenceLogSoftmaxFactory, DataType::kFloat16, DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64);

}  // namespace

}  // namespace oneflite::ep::primitive::cpu
