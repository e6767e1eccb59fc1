// (b) A brand-new primitive kind, "gelu": y = x * Phi(x), with Phi the standard normal CDF.
#pragma once

#include <cstdint>
#include <memory>

#include "oneflite/ep/primitive/primitive.h"
#include "oneflite/ep/stream.h"

namespace oneflite_custom {

// The interface every gelu backend implements: y[i] = gelu(x[i]) for i < n, contiguous.
class Gelu : public oneflite::ep::primitive::Primitive {
 public:
  virtual void Launch(oneflite::ep::Stream* stream, int64_t n, const void* x, void* y) = 0;
};

class GeluFactory : public oneflite::ep::primitive::PrimitiveFactory<Gelu, oneflite::DataType> {
 public:
  static constexpr const char* kKind = "gelu";
};

}  // namespace oneflite_custom
