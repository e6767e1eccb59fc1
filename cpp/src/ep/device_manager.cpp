#include "oneflite/ep/device_manager.h"

#include <array>
#include <mutex>

#include "oneflite/common/error.h"

namespace oneflite::ep {

namespace {

struct ManagerTable {
  std::mutex mutex;
  // Managers live until the process ends: streams and memory pools must outlive every tensor,
  // including tensors freed during interpreter shutdown.
  std::array<DeviceManager*, kNumDeviceTypes> managers{};
};

ManagerTable& Table() {
  static auto* table = new ManagerTable();
  return *table;
}

}  // namespace

void RegisterDeviceManager(std::unique_ptr<DeviceManager> manager) {
  ManagerTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  const int slot = static_cast<int>(manager->device_type());
  ONEFLITE_CHECK(table.managers[slot] == nullptr, ValueError, "a device manager for '",
                 NameOf(manager->device_type()), "' is already registered");
  table.managers[slot] = manager.release();
}

DeviceManager* FindDeviceManager(DeviceType type) {
  ManagerTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  return table.managers[static_cast<int>(type)];
}

DeviceManager* GetDeviceManager(const Device& device) {
  DeviceManager* manager = FindDeviceManager(device.type);
  ONEFLITE_CHECK(manager != nullptr, RuntimeError, "device '", device.ToString(),
                 "' is not available: this build of oneflite has no ", NameOf(device.type),
                 " backend (see `python -m oneflite`)");
  const int count = manager->DeviceCount();
  ONEFLITE_CHECK(device.index >= 0 && device.index < count, RuntimeError, "device '",
                 device.ToString(), "' is not available: ", count, " ", NameOf(device.type),
                 " device(s) found");
  return manager;
}

}  // namespace oneflite::ep
