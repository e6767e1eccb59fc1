// Where a tensor lives: a device type plus an index among the devices of that type.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace oneflite {

enum class DeviceType : int32_t {
  kCPU = 0,
  kCUDA = 1,
};

inline constexpr int kNumDeviceTypes = 2;

const char* NameOf(DeviceType type);

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  // Parses "cpu", "cuda" and "cuda:N". Throws ValueError for anything else.
  static Device Parse(const std::string& spec);
  // "cpu" or "cuda:N".
  std::string ToString() const;

  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
};

}  // namespace oneflite
