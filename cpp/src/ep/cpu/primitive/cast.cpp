// The CPU "reference" backend for cast: every pair of the seven dtypes.
#include <cmath>
#include <limits>
#include <type_traits>

#include "oneflite/common/data_type_dispatch.h"
#include "oneflite/common/float16.h"
#include "oneflite/ep/primitive/cast.h"

namespace oneflite::ep::primitive::cpu {

namespace {

// Widens any element to the type conversions go through: double holds every value of every
// dtype here except the int64 values beyond 2^53, so integers go through int64 instead.
template <typename From>
auto Widen(From v) {
  if constexpr (std::is_same_v<From, float16> || std::is_same_v<From, bfloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<From>) {
    return static_cast<int64_t>(v);
  } else {
    return static_cast<double>(v);
  }
}

// Float to integer with defined results: truncate toward zero, saturate, NaN -> 0. (A plain
// static_cast is undefined behaviour for NaN and out-of-range values.)
template <typename Int>
Int SaturatingCast(double v) {
  if (std::isnan(v)) { return 0; }
  constexpr double lo = static_cast<double>(std::numeric_limits<Int>::min());
  // 2^31 or 2^63: the first value past the top, exactly representable as a double.
  constexpr double hi = -lo;
  if (v <= lo) { return std::numeric_limits<Int>::min(); }
  if (v >= hi) { return std::numeric_limits<Int>::max(); }
  return static_cast<Int>(v);
}

template <typename To, typename Wide>
To Narrow(Wide v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != 0;
  } else if constexpr (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<double>(v));  // one rounding, to nearest even
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<Wide>) {
    return SaturatingCast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
class CastImpl final : public Cast {
 public:
  void Launch(Stream* /*stream*/, const void* x, void* y, int64_t n) override {
    const From* in = static_cast<const From*>(x);
    To* out = static_cast<To*>(y);
    for (int64_t i = 0; i < n; ++i) { out[i] = Narrow<To>(Widen(in[i])); }
  }
};

class ReferenceCastFactory final : public CastFactory {
 public:
  std::unique_ptr<Cast> New(DataType from, DataType to) override {
    return VisitDataType(from, [&](auto from_tag) {
      return VisitDataType(to, [](auto to_tag) -> std::unique_ptr<Cast> {
        return std::make_unique<CastImpl<decltype(from_tag), decltype(to_tag)>>();
      });
    });
  }
};

ONEFLITE_REGISTER_PRIMITIVE(CastFactory, DeviceType::kCPU, "reference", 0, ReferenceCastFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kInt32, DataType::kInt64,
                            DataType::kBool);

}  // namespace

}  // namespace oneflite::ep::primitive::cpu
