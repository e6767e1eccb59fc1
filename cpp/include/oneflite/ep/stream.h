// A stream is the ordered queue a primitive launches its work into.
//
// On the CPU a launch runs to completion before it returns, so the CPU stream is trivial. A
// device backend (CUDA) subclasses Stream and exposes its native queue to its own primitives.
#pragma once

#include "oneflite/common/device.h"

namespace oneflite::ep {

class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
  // Blocks the calling thread until all work queued so far has finished.
  virtual void Sync() = 0;
};

}  // namespace oneflite::ep
