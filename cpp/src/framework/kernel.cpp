#include "oneflite/framework/kernel.h"

#include <algorithm>

#include "oneflite/common/error.h"

namespace oneflite {

KernelRegistry& KernelRegistry::Global() {
  static auto* registry = new KernelRegistry();
  return *registry;
}

void KernelRegistry::Register(KernelRegistration registration) {
  ONEFLITE_CHECK(registration.match != nullptr && registration.create != nullptr, ValueError,
                 "kernel '", registration.kernel_name, "' for op '", registration.op_name,
                 "' needs a match rule and a constructor");
  std::lock_guard<std::mutex> lock(mutex_);
  registrations_.push_back(std::make_unique<KernelRegistration>(std::move(registration)));
  std::stable_sort(registrations_.begin(), registrations_.end(),
                   [](const auto& a, const auto& b) { return a->priority > b->priority; });
  ++generation_;
}

const KernelRegistration* KernelRegistry::Find(const std::string& op_name,
                                               const KernelMatchContext& ctx) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& registration : registrations_) {
    if (registration->op_name == op_name && registration->match(ctx)) { return registration.get(); }
  }
  return nullptr;
}

std::vector<const KernelRegistration*> KernelRegistry::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const KernelRegistration*> list;
  for (const auto& registration : registrations_) { list.push_back(registration.get()); }
  return list;
}

uint64_t KernelRegistry::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

KernelRegistrationBuilder::KernelRegistrationBuilder(std::string op_name, std::string kernel_name,
                                                     KernelCreateFn create) {
  registration_.op_name = std::move(op_name);
  registration_.kernel_name = std::move(kernel_name);
  registration_.create = std::move(create);
}

KernelRegistrationBuilder& KernelRegistrationBuilder::SetMatch(KernelMatchFn match,
                                                               std::string doc) {
  registration_.match = std::move(match);
  registration_.match_doc = std::move(doc);
  return *this;
}

KernelRegistrationBuilder& KernelRegistrationBuilder::SetPriority(int priority) {
  registration_.priority = priority;
  return *this;
}

KernelRegistrar::KernelRegistrar(KernelRegistrationBuilder& builder) {
  KernelRegistry::Global().Register(std::move(builder).Finish());
}

}  // namespace oneflite
