#include "oneflite/common/device.h"

#include <cctype>

#include "oneflite/common/error.h"

namespace oneflite {

const char* NameOf(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU:
      return "cpu";
    case DeviceType::kCUDA:
      return "cuda";
  }
  ONEFLITE_THROW(ValueError, "unknown device type code ", static_cast<int>(type));
}

Device Device::Parse(const std::string& spec) {
  const std::string::size_type colon = spec.find(':');
  const std::string type_name = spec.substr(0, colon);
  Device device;
  if (type_name == "cpu") {
    device.type = DeviceType::kCPU;
  } else if (type_name == "cuda") {
    device.type = DeviceType::kCUDA;
  } else {
    ONEFLITE_THROW(ValueError, "unknown device '", spec, "': expected 'cpu', 'cuda' or 'cuda:N'");
  }
  if (colon == std::string::npos) { return device; }
  const std::string index = spec.substr(colon + 1);
  bool digits = !index.empty() && index.size() <= 6;
  for (char c : index) { digits = digits && std::isdigit(static_cast<unsigned char>(c)); }
  ONEFLITE_CHECK(digits, ValueError, "bad device index in '", spec,
                 "': expected a non-negative integer after ':'");
  device.index = std::stoi(index);
  ONEFLITE_CHECK(device.type != DeviceType::kCPU || device.index == 0, ValueError,
                 "there is one CPU device, 'cpu' (or 'cpu:0'); got '", spec, "'");
  return device;
}

std::string Device::ToString() const {
  if (type == DeviceType::kCPU) { return "cpu"; }
  return std::string(NameOf(type)) + ":" + std::to_string(index);
}

}  // namespace oneflite
