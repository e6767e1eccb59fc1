// Primitive kinds "softmax" and "log_softmax": a row-wise softmax over a (rows, cols) matrix.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "oneflite/ep/primitive/primitive.h"
#include "oneflite/ep/stream.h"

namespace oneflite::ep::primitive {

// y[r, c] = exp(x[r, c] - m_r) / sum_k exp(x[r, k] - m_r), with m_r = max_k x[r, k].
//
// x and y are contiguous row-major (rows, cols) arrays of the dtype the factory was asked for,
// each aligned for that dtype; they must not overlap. rows >= 1 and cols >= 1 (the kernel layer
// skips empty tensors). 16-bit types are computed in float. A row holding NaN gives NaN; a row
// of -inf gives NaN; a row with one +inf gives NaN (inf - inf), matching PyTorch.
class Softmax : public Primitive {
 public:
  virtual void Launch(Stream* stream, int64_t rows, int64_t cols, const void* x, void* y) = 0;
  // What Launch would do for this shape: the algorithm and its configuration, for traces.
  virtual std::string Describe(int64_t rows, int64_t cols) const { return ""; }
};

class SoftmaxFactory : public PrimitiveFactory<Softmax, DataType> {
 public:
  static constexpr const char* kKind = "softmax";
};

// y[r, c] = x[r, c] - m_r - log(sum_k exp(x[r, k] - m_r)). Same contract as Softmax.
class LogSoftmax : public Primitive {
 public:
  virtual void Launch(Stream* stream, int64_t rows, int64_t cols, const void* x, void* y) = 0;
  virtual std::string Describe(int64_t rows, int64_t cols) const { return ""; }
};

class LogSoftmaxFactory : public PrimitiveFactory<LogSoftmax, DataType> {
 public:
  static constexpr const char* kKind = "log_softmax";
};

}  // namespace oneflite::ep::primitive
