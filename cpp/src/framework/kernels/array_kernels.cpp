// Kernels for transpose, cast and copy.
#include <array>

#include "oneflite/common/error.h"
#include "oneflite/ep/device_manager.h"
#include "oneflite/ep/primitive/cast.h"
#include "oneflite/ep/primitive/permute.h"
#include "oneflite/framework/kernel.h"

namespace oneflite {

namespace {

using ep::primitive::NewPrimitive;

// Gathers the (possibly strided) input into the contiguous, permuted output.
class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const KernelMatchContext& ctx)
      : primitive_(NewPrimitive<ep::primitive::PermuteFactory>(ctx.device_type, ctx.dtype)) {
    ONEFLITE_CHECK(primitive_ != nullptr, NotImplementedError,
                   "no 'permute' primitive for device '", NameOf(ctx.device_type), "' and dtype ",
                   NameOf(ctx.dtype));
  }
  static bool Match(const KernelMatchContext& ctx) {
    return NewPrimitive<ep::primitive::PermuteFactory>(ctx.device_type, ctx.dtype) != nullptr;
  }

  void Compute(KernelComputeContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    if (x.numel() == 0) { return; }
    const auto& perm64 = ctx->attrs().Get<std::vector<int64_t>>("perm");
    const std::vector<int> perm(perm64.begin(), perm64.end());
    primitive_->Launch(ctx->stream(), static_cast<int>(x.ndim()), x.shape().data(),
                       x.stride().data(), x.data_ptr(), perm.data(), ctx->output(0).data_ptr());
  }

  std::string Describe(const KernelComputeContext& ctx) const override {
    return "backend '" + primitive_->backend_name() + "'";
  }

 private:
  std::unique_ptr<ep::primitive::Permute> primitive_;
};

// Converts a contiguous input. One primitive per target dtype, all made up front.
class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(const KernelMatchContext& ctx) : from_(ctx.dtype) {
    for (int to = 0; to < kNumDataTypes; ++to) {
      primitives_[to] = NewPrimitive<ep::primitive::CastFactory>(ctx.device_type, ctx.dtype,
                                                                 static_cast<DataType>(to));
    }
  }
  static bool Match(const KernelMatchContext& ctx) {
    return NewPrimitive<ep::primitive::CastFactory>(ctx.device_type, ctx.dtype, ctx.dtype) !=
           nullptr;
  }

  void Compute(KernelComputeContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->output(0);
    ONEFLITE_CHECK(x.is_contiguous() && x.is_aligned(), ValueError,
                   "cast kernel: the input must be contiguous and aligned for its dtype");
    const auto& primitive = primitives_[static_cast<int>(y.dtype())];
    ONEFLITE_CHECK(primitive != nullptr, NotImplementedError, "cast from ", NameOf(from_), " to ",
                   NameOf(y.dtype()), " is not implemented on '", x.device().ToString(), "'");
    if (x.numel() == 0) { return; }
    primitive->Launch(ctx->stream(), x.data_ptr(), y.data_ptr(), x.numel());
  }

  std::string Describe(const KernelComputeContext& ctx) const override {
    const auto& primitive = primitives_[static_cast<int>(ctx.output(0).dtype())];
    return primitive ? "backend '" + primitive->backend_name() + "'" : "no primitive";
  }

 private:
  DataType from_;
  std::array<std::unique_ptr<ep::primitive::Cast>, kNumDataTypes> primitives_;
};

// Copies a contiguous input to another device through the device layer's memcpy. It runs on
// the side of the non-CPU device, whose manager knows how to reach host memory.
class CopyKernel final : public OpKernel {
 public:
  explicit CopyKernel(const KernelMatchContext& /*ctx*/) {}
  static bool Match(const KernelMatchContext& /*ctx*/) { return true; }

  void Compute(KernelComputeContext* ctx) const override {
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->output(0);
    ONEFLITE_CHECK(x.is_contiguous(), ValueError, "copy kernel: the input must be contiguous");
    const size_t nbytes = static_cast<size_t>(x.numel()) * x.element_size();
    if (nbytes == 0) { return; }
    const Device& src = x.device();
    const Device& dst = y.device();
    const Device& device = src.type == DeviceType::kCPU ? dst : src;
    ep::DeviceManager* manager = ep::GetDeviceManager(device);
    manager->SetActiveDevice(device.index);
    const ep::MemcpyKind kind = src.type == DeviceType::kCPU   ? ep::MemcpyKind::kHostToDevice
                                : dst.type == DeviceType::kCPU ? ep::MemcpyKind::kDeviceToHost
                                                               : ep::MemcpyKind::kDeviceToDevice;
    manager->Memcpy(manager->GetStream(device.index), y.data_ptr(), x.data_ptr(), nbytes, kind);
  }

  std::string Describe(const KernelComputeContext& ctx) const override {
    return ctx.input(0).device().ToString() + " -> " + ctx.output(0).device().ToString();
  }
};

ONEFLITE_REGISTER_KERNEL("transpose", TransposeKernel)
    .SetMatch(TransposeKernel::Match, "a 'permute' primitive exists for (device, dtype)")
    .SetPriority(0);

ONEFLITE_REGISTER_KERNEL("cast", CastKernel)
    .SetMatch(CastKernel::Match, "a 'cast' primitive exists for (device, dtype)")
    .SetPriority(0);

ONEFLITE_REGISTER_KERNEL("copy", CopyKernel)
    .SetMatch(CopyKernel::Match, "any (device, dtype): copies go through the device layer")
    .SetPriority(0);

}  // namespace

}  // namespace oneflite
