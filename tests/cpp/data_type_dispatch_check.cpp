// Checks oneflite/common/data_type_dispatch.h, header only: built and run by
// tests/test_primitive.py.
//
//  * VisitDataType calls the visitor with the element type of each of the seven dtypes, with the
//    16-bit types taken from the ElementTypes it is given;
//  * VisitFloatingDataType does so for the four floating-point dtypes, and returns the result
//    type value-initialized (nullptr for a factory's unique_ptr) for the other three;
//  * a code outside the DataType enum throws ValueError from both;
//  * VisitElementWidth picks the unsigned integer of 1, 2, 4 and 8 bytes, and nothing else.
//
// Prints "ok" and exits 0, or prints the first failed check and exits 1.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>

#include "oneflite/common/data_type_dispatch.h"

namespace {

using oneflite::DataType;

int failures = 0;

void Check(bool ok, const std::string& what) {
  if (!ok && failures++ == 0) { std::printf("FAILED: %s\n", what.c_str()); }
}

// Stand-ins for another backend's 16-bit types (CUDA passes __half and __nv_bfloat16).
struct OtherHalf {};
struct OtherBFloat16 {};
using OtherTypes = oneflite::ElementTypes<OtherHalf, OtherBFloat16>;

// The name of the type a visitor was called with.
template <typename T>
std::string NameOfType() {
  if constexpr (std::is_same_v<T, oneflite::float16>) { return "float16"; }
  if constexpr (std::is_same_v<T, oneflite::bfloat16>) { return "bfloat16"; }
  if constexpr (std::is_same_v<T, OtherHalf>) { return "other half"; }
  if constexpr (std::is_same_v<T, OtherBFloat16>) { return "other bfloat16"; }
  if constexpr (std::is_same_v<T, float>) { return "float"; }
  if constexpr (std::is_same_v<T, double>) { return "double"; }
  if constexpr (std::is_same_v<T, int32_t>) { return "int32"; }
  if constexpr (std::is_same_v<T, int64_t>) { return "int64"; }
  if constexpr (std::is_same_v<T, bool>) { return "bool"; }
  if constexpr (std::is_same_v<T, uint8_t>) { return "uint8"; }
  if constexpr (std::is_same_v<T, uint16_t>) { return "uint16"; }
  if constexpr (std::is_same_v<T, uint32_t>) { return "uint32"; }
  if constexpr (std::is_same_v<T, uint64_t>) { return "uint64"; }
  return "?";
}

struct Named {
  std::string name;
};
auto Name = [](auto tag) { return std::make_unique<Named>(Named{NameOfType<decltype(tag)>()}); };

std::string Visited(std::unique_ptr<Named> result) { return result ? result->name : "nullptr"; }

template <typename Visit>
bool Throws(Visit&& visit) {
  try {
    visit();
  } catch (const oneflite::ValueError& e) {
    return std::string(e.what()).find("unknown dtype code 99") != std::string::npos;
  }
  return false;
}

}  // namespace

int main() {
  using oneflite::VisitDataType;
  using oneflite::VisitElementWidth;
  using oneflite::VisitFloatingDataType;
  const struct {
    DataType dtype;
    const char* host;
    const char* other;
    bool floating;
  } cases[] = {
      {DataType::kFloat16, "float16", "other half", true},
      {DataType::kBFloat16, "bfloat16", "other bfloat16", true},
      {DataType::kFloat32, "float", "float", true},
      {DataType::kFloat64, "double", "double", true},
      {DataType::kInt32, "int32", "int32", false},
      {DataType::kInt64, "int64", "int64", false},
      {DataType::kBool, "bool", "bool", false},
  };
  for (const auto& c : cases) {
    const std::string code = std::to_string(static_cast<int>(c.dtype));
    Check(Visited(VisitDataType(c.dtype, Name)) == c.host, "VisitDataType, code " + code);
    Check(Visited(VisitDataType<OtherTypes>(c.dtype, Name)) == c.other,
          "VisitDataType<OtherTypes>, code " + code);
    Check(Visited(VisitFloatingDataType(c.dtype, Name)) == (c.floating ? c.host : "nullptr"),
          "VisitFloatingDataType, code " + code);
    Check(Visited(VisitFloatingDataType<OtherTypes>(c.dtype, Name)) ==
              (c.floating ? c.other : "nullptr"),
          "VisitFloatingDataType<OtherTypes>, code " + code);
  }
  const auto unknown = static_cast<DataType>(99);
  Check(Throws([&] { VisitDataType(unknown, Name); }), "VisitDataType throws for code 99");
  Check(Throws([&] { VisitFloatingDataType(unknown, Name); }),
        "VisitFloatingDataType throws for code 99");

  // A visitor returning a value, not a pointer: the default is that type's value-initialized.
  const auto size = [](auto tag) { return static_cast<int>(sizeof(tag)); };
  Check(VisitFloatingDataType(DataType::kInt64, size) == 0, "VisitFloatingDataType's int 0");
  Check(VisitDataType(DataType::kInt64, size) == 8, "VisitDataType(kInt64) is 8 bytes");

  const struct {
    size_t bytes;
    const char* type;
  } widths[] = {{1, "uint8"},   {2, "uint16"},  {4, "uint32"},  {8, "uint64"},
                {0, "nullptr"}, {3, "nullptr"}, {16, "nullptr"}};
  for (const auto& w : widths) {
    Check(Visited(VisitElementWidth(w.bytes, Name)) == w.type,
          "VisitElementWidth(" + std::to_string(w.bytes) + ")");
  }
  if (failures == 0) { std::printf("ok\n"); }
  return failures == 0 ? 0 : 1;
}
