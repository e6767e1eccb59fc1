// Op definitions "softmax" and "log_softmax": in -> out, same shape and dtype, along the last dim.
#include "oneflite/common/error.h"
#include "oneflite/framework/op.h"

namespace oneflite {

namespace {

// Both ops normalize over the last dim, so their input needs at least one; the functor views a
// 0-d tensor as shape (1,) before it gets here.
void InferSoftmaxShape(InferContext* ctx) {
  ONEFLITE_CHECK(!ctx->input(0).shape.empty(), ValueError,
                 "softmax ops need a tensor with at least one dimension");
  ctx->output(0).shape = ctx->input(0).shape;
}

void InferSoftmaxDataType(InferContext* ctx) {
  ONEFLITE_CHECK(IsFloatingPoint(ctx->input(0).dtype), TypeError,
                 "softmax ops need a floating-point input, got ", NameOf(ctx->input(0).dtype));
  ctx->output(0).dtype = ctx->input(0).dtype;
}

}  // namespace

ONEFLITE_REGISTER_OP("softmax")
    .Input("in")
    .Output("out")
    .SetShapeInferFn(InferSoftmaxShape)
    .SetDataTypeInferFn(InferSoftmaxDataType)
    .SetDoc("out[..., j] = exp(in[..., j]) / sum_k exp(in[..., k]), over the last dim");

ONEFLITE_REGISTER_OP("log_softmax")
    .Input("in")
    .Output("out")
    .SetShapeInferFn(InferSoftmaxShape)
    .SetDataTypeInferFn(InferSoftmaxDataType)
    .SetDoc("out[..., j] = in[..., j] - log(sum_k exp(in[..., k])), over the last dim");

}  // namespace oneflite
