// The primitive layer: small device-specific compute routines behind type-erased interfaces.
//
// Each primitive *kind* ("softmax", "permute", ...) is an abstract interface plus an abstract
// factory whose New(...) returns the primitive, or nullptr when it cannot serve the arguments
// (an unsupported dtype, say). Factories are registered in one registry keyed by
// (kind, device type). Unlike a registry with one factory per key, a key here holds several
// named *backends* with priorities: NewPrimitive asks them from the highest priority down and
// returns the first primitive it gets, so a user can add a backend, force one, and list them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "oneflite/common/data_type.h"
#include "oneflite/common/device.h"
#include "oneflite/common/error.h"

namespace oneflite::ep::primitive {

class Primitive {
 public:
  virtual ~Primitive() = default;

  // The registry name of the backend whose factory made this primitive ("reference", "cuda").
  const std::string& backend_name() const { return backend_name_; }
  void set_backend_name(std::string name) { backend_name_ = std::move(name); }

 private:
  std::string backend_name_;
};

class PrimitiveFactoryBase {
 public:
  virtual ~PrimitiveFactoryBase() = default;
};

// The factory interface of one kind: New(args...) -> the primitive, or nullptr.
template <typename PrimitiveT, typename... NewArgs>
class PrimitiveFactory : public PrimitiveFactoryBase {
 public:
  using PrimitiveType = PrimitiveT;
  virtual std::unique_ptr<PrimitiveT> New(NewArgs... args) = 0;
};

struct BackendInfo {
  std::string kind;
  DeviceType device_type;
  std::string name;
  int priority;
  // Dtypes the backend declared it serves. Informational (listing, error messages); New() is
  // still the authority.
  std::vector<DataType> dtypes;
};

class PrimitiveRegistry {
 public:
  static PrimitiveRegistry& Global();

  // Adds a backend. Throws ValueError if (kind, device_type) already has a backend of that name.
  void Register(BackendInfo info, std::shared_ptr<PrimitiveFactoryBase> factory);
  // Removes a backend; primitives it already made stay valid. Throws ValueError if absent.
  void Unregister(const std::string& kind, DeviceType device_type, const std::string& name);

  struct Entry {
    BackendInfo info;
    std::shared_ptr<PrimitiveFactoryBase> factory;
  };
  // The backends to try for (kind, device_type), in order: when a backend is forced for the
  // kind (see Force), only that one; otherwise all of them, highest priority first.
  std::vector<Entry> Candidates(const std::string& kind, DeviceType device_type) const;
  // Every registered backend, for listing.
  std::vector<BackendInfo> List() const;

  // Forces backend `name` for `kind` on every device type that has it (nullopt: stop forcing).
  // NewPrimitive then uses that backend alone and returns nullptr if it cannot serve the call,
  // rather than quietly falling back to another.
  void Force(const std::string& kind, std::optional<std::string> name);
  std::optional<std::string> Forced(const std::string& kind) const;
  // "softmax=reference, log_softmax=mine", or "" when nothing is forced: for error messages.
  std::string DescribeForced() const;

  // Increments on every change (register, unregister, force). Layers above cache primitives and
  // drop their caches when it moves.
  uint64_t generation() const;

 private:
  PrimitiveRegistry() = default;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, std::string>> forced_;  // (kind, backend name)
  uint64_t generation_ = 0;
};

// Builds a primitive of FactoryT's kind for `device_type` from the first backend whose factory
// returns one; nullptr if none does. The primitive remembers which backend made it.
template <typename FactoryT, typename... Args>
std::unique_ptr<typename FactoryT::PrimitiveType> NewPrimitive(DeviceType device_type,
                                                               Args&&... args) {
  for (const auto& entry : PrimitiveRegistry::Global().Candidates(FactoryT::kKind, device_type)) {
    auto* factory = dynamic_cast<FactoryT*>(entry.factory.get());
    if (factory == nullptr) { continue; }
    if (auto primitive = factory->New(args...)) {
      primitive->set_backend_name(entry.info.name);
      return primitive;
    }
  }
  return nullptr;
}

}  // namespace oneflite::ep::primitive

// ONEFLITE_REGISTER_PRIMITIVE(KindFactory, device_type, "name", priority, Impl, dtypes...)
// registers `Impl` (a subclass of KindFactory with a default constructor) as backend "name" of
// KindFactory::kKind on `device_type`, when the shared library holding the line is loaded. The
// dtypes list what the backend serves, for listings; Impl::New stays the authority.
#define ONEFLITE_REGISTER_PRIMITIVE(KindFactory, device_type, name, priority, Impl, ...)          \
  [[maybe_unused]] static const bool ONEFLITE_PRIMITIVE_CONCAT(oneflite_primitive_registered_,    \
                                                               __LINE__) = [] {                   \
    static_assert(std::is_base_of_v<KindFactory, Impl>, #Impl " must derive from " #KindFactory); \
    ::oneflite::ep::primitive::PrimitiveRegistry::Global().Register(                              \
        {KindFactory::kKind, device_type, name, priority,                                         \
         std::vector<::oneflite::DataType>{__VA_ARGS__}},                                         \
        std::make_shared<Impl>());                                                                \
    return true;                                                                                  \
  }()

#define ONEFLITE_PRIMITIVE_CONCAT_INNER(a, b) a##b
#define ONEFLITE_PRIMITIVE_CONCAT(a, b) ONEFLITE_PRIMITIVE_CONCAT_INNER(a, b)
