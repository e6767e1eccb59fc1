// (a) A new backend for an existing primitive kind: softmax on the CPU in two passes, with the
// running max and sum kept together ("online" normalizer) instead of two separate passes.
//
// Registering it is one macro; from then on oneflite's SoftmaxKernel can pick it like any
// built-in backend.
#include <cmath>
#include <limits>

#include "oneflite/common/float16.h"
#include "oneflite/ep/primitive/softmax.h"

namespace oneflite_custom {

using oneflite::DataType;
using oneflite::DeviceType;
using oneflite::ep::Stream;
using oneflite::ep::primitive::Softmax;
using oneflite::ep::primitive::SoftmaxFactory;

template <typename T>
class OnlineSoftmax final : public Softmax {
 public:
  void Launch(Stream* /*stream*/, int64_t rows, int64_t cols, const void* x, void* y) override {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    for (int64_t r = 0; r < rows; ++r, in += cols, out += cols) {
      // Pass 1: max m and sum d of exp(x - m), rescaling d whenever m grows.
      T m = -std::numeric_limits<T>::infinity();
      T d = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const T v = in[c];
        if (v > m) {
          d = d * std::exp(m - v) + 1;
          m = v;
        } else {
          d += std::exp(v - m);  // NaN and -inf - -inf land here and poison d, as they should
        }
      }
      // Pass 2: scale.
      for (int64_t c = 0; c < cols; ++c) { out[c] = std::exp(in[c] - m) / d; }
    }
  }
  std::string Describe(int64_t rows, int64_t cols) const override {
    return "online normalizer, two passes per row (oneflite_custom)";
  }
};

class OnlineSoftmaxFactory final : public SoftmaxFactory {
 public:
  std::unique_ptr<Softmax> New(DataType dtype) override {
    if (dtype == DataType::kFloat32) { return std::make_unique<OnlineSoftmax<float>>(); }
    if (dtype == DataType::kFloat64) { return std::make_unique<OnlineSoftmax<double>>(); }
    return nullptr;  // other dtypes fall through to the next backend
  }
};

// Priority 50: above the built-in CPU backends (reference 0, fast 10), so float32/float64 CPU
// softmax now uses it.
ONEFLITE_REGISTER_PRIMITIVE(SoftmaxFactory, DeviceType::kCPU, "custom_online", 50,
                            OnlineSoftmaxFactory, DataType::kFloat32, DataType::kFloat64);

}  // namespace oneflite_custom
