// The "gelu" kind end to end: a CPU primitive, an op, a kernel and a functor, each registered
// with the same macros oneflite uses for softmax.
#include "gelu.h"

#include <cmath>
#include <optional>

#include "oneflite/common/data_type_dispatch.h"
#include "oneflite/common/error.h"
#include "oneflite/common/float16.h"
#include "oneflite/framework/interpreter.h"
#include "oneflite/framework/kernel.h"
#include "oneflite/framework/op.h"
#include "oneflite/framework/trace.h"
#include "oneflite/functional/function_library.h"
#include "oneflite/functional/functional.h"

namespace oneflite_custom {

using namespace oneflite;  // NOLINT: an example reads better without the prefixes

// ---- Primitive: the CPU backend ---------------------------------------------------------------
template <typename T>
class CpuGelu final : public Gelu {
 public:
  void Launch(ep::Stream* /*stream*/, int64_t n, const void* x, void* y) override {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(static_cast<float>(in[i]));
      out[i] = static_cast<T>(static_cast<float>(0.5 * v * (1.0 + std::erf(v * M_SQRT1_2))));
    }
  }
};

template <>
class CpuGelu<double> final : public Gelu {
 public:
  void Launch(ep::Stream* /*stream*/, int64_t n, const void* x, void* y) override {
    const double* in = static_cast<const double*>(x);
    double* out = static_cast<double*>(y);
    for (int64_t i = 0; i < n; ++i) { out[i] = 0.5 * in[i] * (1.0 + std::erf(in[i] * M_SQRT1_2)); }
  }
};

class CpuGeluFactory final : public GeluFactory {
 public:
  std::unique_ptr<Gelu> New(DataType dtype) override {
    // One CpuGelu<T> per floating-point dtype; any other dtype gets nullptr (no primitive).
    return VisitFloatingDataType(dtype, [](auto tag) -> std::unique_ptr<Gelu> {
      return std::make_unique<CpuGelu<decltype(tag)>>();
    });
  }
};

ONEFLITE_REGISTER_PRIMITIVE(GeluFactory, DeviceType::kCPU, "custom_reference", 0, CpuGeluFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64);

// ---- Op: same shape and dtype as the input ----------------------------------------------------
ONEFLITE_REGISTER_OP("gelu").Input("in").Output("out").SetDoc("out = in * Phi(in), elementwise");

// ---- Kernel: runs wherever a gelu primitive exists -------------------------------------------
class GeluKernel final : public OpKernel {
 public:
  explicit GeluKernel(const KernelMatchContext& ctx)
      : primitive_(ep::primitive::NewPrimitive<GeluFactory>(ctx.device_type, ctx.dtype)) {}
  static bool Match(const KernelMatchContext& ctx) {
    return ep::primitive::NewPrimitive<GeluFactory>(ctx.device_type, ctx.dtype) != nullptr;
  }
  void Compute(KernelComputeContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    if (x.numel() == 0) { return; }
    primitive_->Launch(ctx->stream(), x.numel(), x.data_ptr(), ctx->output(0).data_ptr());
  }
  std::string Describe(const KernelComputeContext& ctx) const override {
    return "backend '" + primitive_->backend_name() + "' n=" + std::to_string(ctx.input(0).numel());
  }

 private:
  std::unique_ptr<Gelu> primitive_;
};

ONEFLITE_REGISTER_KERNEL("gelu", GeluKernel)
    .SetMatch(GeluKernel::Match, "a 'gelu' primitive exists for (device, dtype)")
    .SetPriority(0);

// ---- Functor: checks, then the op on a contiguous input ---------------------------------------
class GeluFunctor {
 public:
  GeluFunctor() : op_(OpBuilder("gelu").Input("in").Output("out").Build()) {}
  Tensor operator()(const Tensor& x) const {
    ONEFLITE_CHECK(IsFloatingPoint(x.dtype()), TypeError,
                   "gelu(): expected a floating-point tensor, got ", NameOf(x.dtype()));
    return Interpret(*op_, {functional::Contiguous(x)})[0];
  }

 private:
  std::shared_ptr<OpExpr> op_;
};

ONEFLITE_FUNCTION_LIBRARY(m) { m.Add<GeluFunctor>("Gelu", "Gelu(Tensor x) -> Tensor"); }

}  // namespace oneflite_custom
