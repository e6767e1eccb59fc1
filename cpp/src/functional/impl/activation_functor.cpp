// Functors "Softmax" and "LogSoftmax": argument checks and dim handling in front of the ops.
#include <algorithm>
#include <numeric>

#include "oneflite/common/error.h"
#include "oneflite/framework/interpreter.h"
#include "oneflite/framework/trace.h"
#include "oneflite/functional/function_library.h"
#include "oneflite/functional/functional.h"

namespace oneflite::functional {

namespace impl {

// With no dim given, the historical rule: dim 0 for 0-, 1- and 3-d tensors, else dim 1.
int64_t ImplicitSoftmaxDim(int64_t ndim) { return (ndim == 0 || ndim == 1 || ndim == 3) ? 0 : 1; }

std::string DescribeDim(std::optional<int64_t> dim, int64_t d, int64_t ndim) {
  std::string text = dim.has_value() ? "dim=" + std::to_string(*dim)
                                     : "dim=None -> " + std::to_string(d) + " by the implicit rule";
  if (dim.has_value() && *dim != d) { text += " -> " + std::to_string(d); }
  if (ndim == 0) { return text + "; a 0-d tensor is computed as one row of one element"; }
  if (d == ndim - 1) { return text + " is the last dim: the op runs directly"; }
  return text + " is not the last dim: Transpose(swap " + std::to_string(d) + " and " +
         std::to_string(ndim - 1) + ") -> op -> Transpose back";
}

// The ops normalize over the last dim; this functor brings any dim there and back.
class SoftmaxFunctorBase {
 protected:
  SoftmaxFunctorBase(const char* op_name, const char* api_name)
      : op_(OpBuilder(op_name).Input("in").Output("out").Build()), api_name_(api_name) {}

  Tensor Apply(const Tensor& x, std::optional<int64_t> dim, std::optional<DataType> dtype) const {
    ONEFLITE_CHECK(x.defined(), TypeError, api_name_, "(): expected a tensor");
    // dtype= casts first, so integer input can be computed in a floating type.
    const Tensor input = dtype.has_value() ? Cast(x, *dtype) : x;
    ONEFLITE_CHECK(IsFloatingPoint(input.dtype()), TypeError, api_name_,
                   "(): expected a floating-point tensor, got dtype ", NameOf(input.dtype()),
                   "; pass dtype=oneflite.float32 (or another floating type) to compute in it");
    const int64_t ndim = input.ndim();
    const int64_t d = WrapDim(dim.value_or(ImplicitSoftmaxDim(ndim)), ndim);
    ONEFLITE_TRACE("functor", DescribeDim(dim, d, ndim));

    if (ndim == 0) {
      // One element is its own row: view it as shape (1,), run, and view the result as 0-d.
      const Tensor row = input.AsStrided({1}, {1}, input.storage_offset());
      return Run(Contiguous(row)).AsStrided({}, {}, 0);
    }
    if (d == ndim - 1) { return Run(Contiguous(input)); }
    // Swap dim d with the last: the permutation is its own inverse, so the same transpose
    // brings the result back.
    std::vector<int64_t> perm(ndim);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[d], perm[ndim - 1]);
    return Transpose(Run(Transpose(input, perm)), perm);
  }

 private:
  Tensor Run(const Tensor& x) const { return Interpret(*op_, {x})[0]; }

  std::shared_ptr<OpExpr> op_;
  const char* api_name_;
};

class SoftmaxFunctor : public SoftmaxFunctorBase {
 public:
  SoftmaxFunctor() : SoftmaxFunctorBase("softmax", "softmax") {}
  Tensor operator()(const Tensor& x, std::optional<int64_t> dim,
                    std::optional<DataType> dtype) const {
    return Apply(x, dim, dtype);
  }
};

class LogSoftmaxFunctor : public SoftmaxFunctorBase {
 public:
  LogSoftmaxFunctor() : SoftmaxFunctorBase("log_softmax", "log_softmax") {}
  Tensor operator()(const Tensor& x, std::optional<int64_t> dim,
                    std::optional<DataType> dtype) const {
    return Apply(x, dim, dtype);
  }
};

}  // namespace impl

ONEFLITE_FUNCTION_LIBRARY(m) {
  m.Add<impl::SoftmaxFunctor>("Softmax", "Softmax(Tensor x, int? dim, DataType? dtype) -> Tensor");
  m.Add<impl::LogSoftmaxFunctor>("LogSoftmax",
                                 "LogSoftmax(Tensor x, int? dim, DataType? dtype) -> Tensor");
}

}  // namespace oneflite::functional
