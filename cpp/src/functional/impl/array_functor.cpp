// Functors that move data: "Transpose", "Contiguous", "Cast" and "Copy".
#include <numeric>

#include "oneflite/common/error.h"
#include "oneflite/framework/interpreter.h"
#include "oneflite/functional/function_library.h"
#include "oneflite/functional/functional.h"

namespace oneflite::functional {

namespace impl {

class TransposeFunctor {
 public:
  TransposeFunctor() : op_(OpBuilder("transpose").Input("in").Output("out").Build()) {}

  Tensor operator()(const Tensor& x, const std::vector<int64_t>& perm) const {
    ONEFLITE_CHECK(x.defined(), TypeError, "transpose(): expected a tensor");
    const int64_t ndim = x.ndim();
    ONEFLITE_CHECK(static_cast<int64_t>(perm.size()) == ndim, ValueError, "transpose(): perm has ",
                   perm.size(), " entries for a tensor of ", ndim, " dims");
    std::vector<int64_t> wrapped(perm.size());
    std::vector<bool> seen(perm.size(), false);
    for (size_t i = 0; i < perm.size(); ++i) {
      int64_t d = perm[i];
      ONEFLITE_CHECK(d >= -ndim && d < ndim, IndexError,
                     "Dimension out of range (expected to be in range of [", -ndim, ", ", ndim - 1,
                     "], but got ", d, ")");
      d = d < 0 ? d + ndim : d;
      ONEFLITE_CHECK(!seen[d], ValueError, "transpose(): dim ", d, " appears twice in perm");
      seen[d] = true;
      wrapped[i] = d;
    }
    return Interpret(*op_, {x}, AttrMap{{"perm", wrapped}})[0];
  }

 private:
  std::shared_ptr<OpExpr> op_;
};

// A tensor the element-wise primitives can read as one dense array: x itself when it is
// contiguous and its first element is aligned for its dtype, else a copy in fresh memory. (A
// misaligned view, from an unaligned NumPy array or DLPack byte offset, is read only by the
// permute primitive, which loads elements bytewise.)
class ContiguousFunctor {
 public:
  Tensor operator()(const Tensor& x) const {
    ONEFLITE_CHECK(x.defined(), TypeError, "contiguous(): expected a tensor");
    if (x.is_contiguous() && x.is_aligned()) { return x; }
    std::vector<int64_t> identity(x.ndim());
    std::iota(identity.begin(), identity.end(), 0);
    return Transpose(x, identity);
  }
};

class CastFunctor {
 public:
  CastFunctor() : op_(OpBuilder("cast").Input("in").Output("out").Build()) {}

  Tensor operator()(const Tensor& x, DataType dtype) const {
    ONEFLITE_CHECK(x.defined(), TypeError, "cast(): expected a tensor");
    if (x.dtype() == dtype) { return x; }
    return Interpret(*op_, {Contiguous(x)}, AttrMap{{"dtype", dtype}})[0];
  }

 private:
  std::shared_ptr<OpExpr> op_;
};

class CopyFunctor {
 public:
  CopyFunctor() : op_(OpBuilder("copy").Input("in").Output("out").Build()) {}

  Tensor operator()(const Tensor& x, const Device& device) const {
    ONEFLITE_CHECK(x.defined(), TypeError, "copy(): expected a tensor");
    if (x.device() == device) { return x; }
    return Interpret(*op_, {Contiguous(x)}, AttrMap{{"device", device.ToString()}})[0];
  }

 private:
  std::shared_ptr<OpExpr> op_;
};

}  // namespace impl

ONEFLITE_FUNCTION_LIBRARY(m) {
  m.Add<impl::TransposeFunctor>("Transpose", "Transpose(Tensor x, int[] perm) -> Tensor");
  m.Add<impl::ContiguousFunctor>("Contiguous", "Contiguous(Tensor x) -> Tensor");
  m.Add<impl::CastFunctor>("Cast", "Cast(Tensor x, DataType dtype) -> Tensor");
  m.Add<impl::CopyFunctor>("Copy", "Copy(Tensor x, Device device) -> Tensor");
}

}  // namespace oneflite::functional
