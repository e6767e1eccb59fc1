// Op definitions that move or convert data without arithmetic: transpose, cast and copy.
#include "oneflite/common/error.h"
#include "oneflite/framework/op.h"

namespace oneflite {

ONEFLITE_REGISTER_OP("transpose")
    .Input("in")
    .Output("out")
    .Attr("perm")
    .SetShapeInferFn([](InferContext* ctx) {
      const Shape& in = ctx->input(0).shape;
      const auto& perm = ctx->attrs().Get<std::vector<int64_t>>("perm");
      ONEFLITE_CHECK(perm.size() == in.size(), ValueError, "transpose: perm has ", perm.size(),
                     " entries for a tensor of ", in.size(), " dims");
      Shape out(in.size());
      for (size_t i = 0; i < perm.size(); ++i) { out[i] = in.at(perm[i]); }
      ctx->output(0).shape = out;
    })
    .SetDoc(
        "out = in with dims reordered, out.shape[i] = in.shape[perm[i]]; out is contiguous "
        "(with the identity perm this makes a strided view contiguous)");

ONEFLITE_REGISTER_OP("cast")
    .Input("in")
    .Output("out")
    .Attr("dtype")
    .SetDataTypeInferFn([](InferContext* ctx) {
      ctx->output(0).dtype = ctx->attrs().Get<DataType>("dtype");
    })
    .SetDoc("out = in converted to `dtype`");

ONEFLITE_REGISTER_OP("copy")
    .Input("in")
    .Output("out")
    .Attr("device")
    .SetDeviceInferFn([](InferContext* ctx) {
      ctx->output(0).device = Device::Parse(ctx->attrs().Get<std::string>("device"));
    })
    .SetDoc("out = in, on `device`");

}  // namespace oneflite
