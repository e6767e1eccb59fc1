// Attributes: the non-tensor arguments of an op (a permutation, a target dtype, ...).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "oneflite/common/data_type.h"
#include "oneflite/common/error.h"

namespace oneflite {

using AttrValue = std::variant<int64_t, double, bool, std::string, DataType, std::vector<int64_t>>;

class AttrMap {
 public:
  AttrMap() = default;
  AttrMap(std::initializer_list<std::pair<const std::string, AttrValue>> attrs)
      : attrs_(attrs.begin(), attrs.end()) {}

  void Set(const std::string& name, AttrValue value) {
    for (auto& [key, current] : attrs_) {
      if (key == name) {
        current = std::move(value);
        return;
      }
    }
    attrs_.emplace_back(name, std::move(value));
  }

  bool Has(const std::string& name) const { return Find(name) != nullptr; }

  // The attribute `name` as a T. Throws ValueError if it is missing or of another type.
  template <typename T>
  const T& Get(const std::string& name) const {
    const AttrValue* value = Find(name);
    ONEFLITE_CHECK(value != nullptr, ValueError, "missing attribute '", name, "'");
    const T* typed = std::get_if<T>(value);
    ONEFLITE_CHECK(typed != nullptr, ValueError, "attribute '", name, "' has another type");
    return *typed;
  }

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return attrs_; }

 private:
  const AttrValue* Find(const std::string& name) const {
    for (const auto& [key, value] : attrs_) {
      if (key == name) { return &value; }
    }
    return nullptr;
  }

  // Ops have a handful of attributes: a vector beats a map.
  std::vector<std::pair<std::string, AttrValue>> attrs_;
};

}  // namespace oneflite
