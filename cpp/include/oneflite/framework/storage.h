// A block of memory on one device, shared by every tensor view of it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "oneflite/common/device.h"

namespace oneflite {

class Storage {
 public:
  using Deleter = std::function<void(void*)>;

  // Takes ownership of `data`; `deleter(data)` runs when the last view is gone. A null deleter
  // means the memory is borrowed and outlives the storage.
  Storage(void* data, size_t nbytes, Device device, Deleter deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Fresh, uninitialized memory from the device manager of `device`.
  static std::shared_ptr<Storage> Allocate(const Device& device, size_t nbytes);

  void* data() const { return data_; }
  bool writable() const { return writable_; }
  void set_writable(bool writable) { writable_ = writable; }
  size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
  bool writable_ = true;
};

}  // namespace oneflite
