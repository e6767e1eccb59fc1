// The exceptions oneflite throws. Each maps onto one Python exception type at the pybind11
// boundary (cpp/src/python/module.cpp), so C++ code picks the class by what Python should see.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace oneflite {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// -> IndexError: a dimension or index outside its range.
class IndexError : public Error {
 public:
  using Error::Error;
};
// -> TypeError: an argument of the wrong type, or a tensor of a dtype the op never accepts.
class TypeError : public Error {
 public:
  using Error::Error;
};
// -> ValueError: a well-typed argument with a bad value.
class ValueError : public Error {
 public:
  using Error::Error;
};
// -> NotImplementedError: no kernel or primitive serves this (op, device, dtype).
class NotImplementedError : public Error {
 public:
  using Error::Error;
};
// -> RuntimeError: a device or runtime failure (a CUDA error, an allocation failure).
class RuntimeError : public Error {
 public:
  using Error::Error;
};

namespace internal {

template <typename... Args>
std::string StrCat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

}  // namespace internal
}  // namespace oneflite

// ONEFLITE_CHECK(cond, ErrorClass, message parts...): throw ErrorClass(message) unless cond.
#define ONEFLITE_CHECK(cond, ErrorClass, ...)                                     \
  do {                                                                            \
    if (!(cond)) { throw ErrorClass(::oneflite::internal::StrCat(__VA_ARGS__)); } \
  } while (0)

#define ONEFLITE_THROW(ErrorClass, ...) throw ErrorClass(::oneflite::internal::StrCat(__VA_ARGS__))
