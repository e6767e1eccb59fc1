#include <algorithm>

#include "oneflite/ep/primitive/primitive.h"

namespace oneflite::ep::primitive {

PrimitiveRegistry& PrimitiveRegistry::Global() {
  // Never destroyed: backends registered from Python hold Python objects, which must not be
  // released after the interpreter has shut down.
  static auto* registry = new PrimitiveRegistry();
  return *registry;
}

void PrimitiveRegistry::Register(BackendInfo info, std::shared_ptr<PrimitiveFactoryBase> factory) {
  ONEFLITE_CHECK(factory != nullptr, ValueError, "backend '", info.name, "' has no factory");
  ONEFLITE_CHECK(!info.name.empty(), ValueError, "a backend needs a non-empty name");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& entry : entries_) {
    ONEFLITE_CHECK(!(entry.info.kind == info.kind && entry.info.device_type == info.device_type &&
                     entry.info.name == info.name),
                   ValueError, "a '", info.kind, "' backend named '", info.name,
                   "' is already registered for device '", NameOf(info.device_type),
                   "'; unregister it first or choose another name");
  }
  entries_.push_back(Entry{std::move(info), std::move(factory)});
  // Stable: among equal priorities the earlier registration wins.
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return a.info.priority > b.info.priority;
  });
  ++generation_;
}

void PrimitiveRegistry::Unregister(const std::string& kind, DeviceType device_type,
                                   const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& entry) {
    return entry.info.kind == kind && entry.info.device_type == device_type &&
           entry.info.name == name;
  });
  ONEFLITE_CHECK(it != entries_.end(), ValueError, "no '", kind, "' backend named '", name,
                 "' is registered for device '", NameOf(device_type), "'");
  entries_.erase(it);
  ++generation_;
}

std::vector<PrimitiveRegistry::Entry> PrimitiveRegistry::Candidates(const std::string& kind,
                                                                    DeviceType device_type) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string* forced = nullptr;
  for (const auto& [forced_kind, forced_name] : forced_) {
    if (forced_kind == kind) { forced = &forced_name; }
  }
  std::vector<Entry> candidates;
  for (const Entry& entry : entries_) {
    if (entry.info.kind != kind || entry.info.device_type != device_type) { continue; }
    if (forced != nullptr && entry.info.name != *forced) { continue; }
    candidates.push_back(entry);
  }
  return candidates;
}

std::vector<BackendInfo> PrimitiveRegistry::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<BackendInfo> infos;
  infos.reserve(entries_.size());
  for (const Entry& entry : entries_) { infos.push_back(entry.info); }
  return infos;
}

void PrimitiveRegistry::Force(const std::string& kind, std::optional<std::string> name) {
  std::lock_guard<std::mutex> lock(mutex_);
  forced_.erase(std::remove_if(forced_.begin(), forced_.end(),
                               [&](const auto& item) { return item.first == kind; }),
                forced_.end());
  if (name.has_value()) { forced_.emplace_back(kind, *name); }
  ++generation_;
}

std::optional<std::string> PrimitiveRegistry::Forced(const std::string& kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [forced_kind, forced_name] : forced_) {
    if (forced_kind == kind) { return forced_name; }
  }
  return std::nullopt;
}

std::string PrimitiveRegistry::DescribeForced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  for (const auto& [kind, name] : forced_) {
    text += (text.empty() ? "" : ", ") + kind + "=" + name;
  }
  return text;
}

uint64_t PrimitiveRegistry::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

}  // namespace oneflite::ep::primitive
