// The CPU stream: work launched on it has finished when Launch returns.
#pragma once

#include "oneflite/ep/stream.h"

namespace oneflite::ep {

class CpuStream final : public Stream {
 public:
  Device device() const override { return Device{DeviceType::kCPU, 0}; }
  void Sync() override {}
};

}  // namespace oneflite::ep
