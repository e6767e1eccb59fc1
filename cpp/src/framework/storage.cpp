#include "oneflite/framework/storage.h"

#include "oneflite/ep/device_manager.h"

namespace oneflite {

Storage::Storage(void* data, size_t nbytes, Device device, Deleter deleter)
    : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}

Storage::~Storage() {
  if (deleter_) { deleter_(data_); }
}

std::shared_ptr<Storage> Storage::Allocate(const Device& device, size_t nbytes) {
  ep::DeviceManager* manager = ep::GetDeviceManager(device);
  void* data = manager->Allocate(device.index, nbytes);
  const int index = device.index;
  return std::make_shared<Storage>(data, nbytes, device,
                                   [manager, index](void* ptr) { manager->Free(index, ptr); });
}

}  // namespace oneflite
