#include "oneflite/framework/trace.h"

#include <atomic>
#include <memory>

#include "oneflite/common/error.h"

namespace oneflite::trace {

namespace internal {

Recorder*& Current() {
  thread_local Recorder* current = nullptr;
  return current;
}

}  // namespace internal

namespace {

// This thread's open recordings, outermost first.
std::vector<std::unique_ptr<Recorder>>& Open() {
  thread_local std::vector<std::unique_ptr<Recorder>> open;
  return open;
}

std::atomic<uint64_t> next_id{1};

}  // namespace

uint64_t Start() {
  auto recorder = std::make_unique<Recorder>();
  recorder->id = next_id.fetch_add(1, std::memory_order_relaxed);
  const uint64_t id = recorder->id;
  Open().push_back(std::move(recorder));
  internal::Current() = Open().back().get();
  return id;
}

std::vector<Event> Stop(uint64_t id) {
  auto& open = Open();
  for (auto it = open.begin(); it != open.end(); ++it) {
    if ((*it)->id != id) { continue; }
    std::vector<Event> events = std::move((*it)->events);
    open.erase(it);
    internal::Current() = open.empty() ? nullptr : open.back().get();
    return events;
  }
  ONEFLITE_THROW(RuntimeError,
                 "this trace is not recording on this thread; a trace ends on the "
                 "thread that started it, once");
}

void Record(const char* layer, std::string text) {
  for (auto& recorder : Open()) { recorder->events.push_back(Event{recorder->depth, layer, text}); }
}

void Begin(const char* layer, std::string text) {
  for (auto& recorder : Open()) {
    recorder->events.push_back(Event{recorder->depth, layer, text});
    ++recorder->depth;
  }
}

void End() {
  // A recording opened inside this Begin's scope saw no Begin: it stays at depth 0. One already
  // stopped is no longer here.
  for (auto& recorder : Open()) {
    if (recorder->depth > 0) { --recorder->depth; }
  }
}

Scope::Scope(const char* layer, std::string text) { Begin(layer, std::move(text)); }

Scope::~Scope() { End(); }

}  // namespace oneflite::trace
