// SoftmaxKernel and LogSoftmaxKernel: device-agnostic, they run wherever a primitive exists.
#include "oneflite/common/error.h"
#include "oneflite/ep/primitive/softmax.h"
#include "oneflite/framework/kernel.h"

namespace oneflite {

namespace {

using ep::primitive::NewPrimitive;

template <typename FactoryT>
class SoftmaxKernelImpl final : public OpKernel {
 public:
  // Built once per (device type, dtype); the primitive is looked up here, not per call.
  explicit SoftmaxKernelImpl(const KernelMatchContext& ctx)
      : primitive_(NewPrimitive<FactoryT>(ctx.device_type, ctx.dtype)) {
    ONEFLITE_CHECK(primitive_ != nullptr, NotImplementedError, "no '", FactoryT::kKind,
                   "' primitive for device '", NameOf(ctx.device_type), "' and dtype ",
                   NameOf(ctx.dtype));
  }

  static bool Match(const KernelMatchContext& ctx) {
    return NewPrimitive<FactoryT>(ctx.device_type, ctx.dtype) != nullptr;
  }

  // The tensor is a stack of rows along its last dim: rows = prod(shape[:-1]), cols = shape[-1].
  void Compute(KernelComputeContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->output(0);
    ONEFLITE_CHECK(x.is_contiguous() && x.is_aligned(), ValueError, FactoryT::kKind,
                   " kernel: the input must be contiguous and aligned for its dtype");
    if (x.numel() == 0) { return; }
    const int64_t cols = x.shape().back();
    primitive_->Launch(ctx->stream(), x.numel() / cols, cols, x.data_ptr(), y.data_ptr());
  }

  std::string Describe(const KernelComputeContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (x.numel() == 0) { return "empty tensor: no launch"; }
    const int64_t cols = x.shape().back();
    const int64_t rows = x.numel() / cols;
    return "backend '" + primitive_->backend_name() + "' rows=" + std::to_string(rows) +
           " cols=" + std::to_string(cols) + ": " + primitive_->Describe(rows, cols);
  }

 private:
  std::unique_ptr<typename FactoryT::PrimitiveType> primitive_;
};

using SoftmaxKernel = SoftmaxKernelImpl<ep::primitive::SoftmaxFactory>;
using LogSoftmaxKernel = SoftmaxKernelImpl<ep::primitive::LogSoftmaxFactory>;

ONEFLITE_REGISTER_KERNEL("softmax", SoftmaxKernel)
    .SetMatch(SoftmaxKernel::Match, "a 'softmax' primitive exists for (device, dtype)")
    .SetPriority(0);

ONEFLITE_REGISTER_KERNEL("log_softmax", LogSoftmaxKernel)
    .SetMatch(LogSoftmaxKernel::Match, "a 'log_softmax' primitive exists for (device, dtype)")
    .SetPriority(0);

}  // namespace

}  // namespace oneflite
