#include "oneflite/framework/trace.h"

#include <memory>

namespace oneflite::trace {

namespace internal {

Recorder*& Current() {
  thread_local Recorder* current = nullptr;
  return current;
}

}  // namespace internal

namespace {

std::unique_ptr<Recorder>& Owned() {
  thread_local std::unique_ptr<Recorder> owned;
  return owned;
}

}  // namespace

void Start() {
  Owned() = std::make_unique<Recorder>();
  internal::Current() = Owned().get();
}

std::vector<Event> Stop() {
  internal::Current() = nullptr;
  std::vector<Event> events;
  if (Owned()) { events = std::move(Owned()->events); }
  Owned().reset();
  return events;
}

void Record(const char* layer, std::string text) {
  Recorder* recorder = internal::Current();
  if (recorder == nullptr) { return; }
  recorder->events.push_back(Event{recorder->depth, layer, std::move(text)});
}

void Begin(const char* layer, std::string text) {
  Recorder* recorder = internal::Current();
  if (recorder == nullptr) { return; }
  recorder->events.push_back(Event{recorder->depth, layer, std::move(text)});
  ++recorder->depth;
}

void End() {
  Recorder* recorder = internal::Current();
  if (recorder != nullptr && recorder->depth > 0) { --recorder->depth; }
}

Scope::Scope(const char* layer, std::string text) : recorder_(internal::Current()) {
  Begin(layer, std::move(text));
}

Scope::~Scope() {
  // The recording may have been stopped inside the scope; then there is nothing to close.
  if (recorder_ != nullptr && recorder_ == internal::Current()) { End(); }
}

}  // namespace oneflite::trace
