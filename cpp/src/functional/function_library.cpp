#include "oneflite/functional/function_library.h"

namespace oneflite::functional {

FunctionLibrary& FunctionLibrary::Global() {
  static auto* library = new FunctionLibrary();
  return *library;
}

void FunctionLibrary::AddEntry(const std::string& name, const std::string& signature,
                               std::type_index type, std::function<std::any()> create) {
  std::lock_guard<std::mutex> lock(mutex_);
  ONEFLITE_CHECK(entries_.count(name) == 0, ValueError, "functor '", name,
                 "' is already registered");
  entries_.emplace(name, Entry{signature, type, std::move(create), {}});
}

const std::any& FunctionLibrary::FindEntry(const std::string& name, std::type_index type) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = entries_.find(name);
  ONEFLITE_CHECK(it != entries_.end(), ValueError, "no functor named '", name, "' is registered");
  Entry& entry = it->second;
  ONEFLITE_CHECK(entry.signature_type == type, TypeError, "functor '", name,
                 "' was asked for with another signature than its own: ", entry.signature);
  if (!entry.instance.has_value()) {
    // Constructing a functor builds its OpExprs, which only reads other registries, so holding
    // this lock meanwhile cannot deadlock.
    entry.instance = entry.create();
  }
  return entry.instance;  // entries are never erased, so the reference stays valid
}

std::vector<FunctorInfo> FunctionLibrary::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FunctorInfo> infos;
  for (const auto& [name, entry] : entries_) { infos.push_back({name, entry.signature}); }
  return infos;
}

}  // namespace oneflite::functional
