// Tracing: a record of how one call travelled through the layers, for `oneflite.trace()`.
//
// Recording is per thread and off by default. Every hook is guarded by IsEnabled(), a read of
// one thread-local pointer, and builds its text only when tracing is on, so the hooks cost
// nothing measurable on the normal path.
//
// Recordings nest: a thread may have several open at once (a trace inside a trace, or inside a
// Python backend called from a traced call). Each event goes to every open recording on the
// thread, at its depth in that recording, so each one holds every call made while it was open.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oneflite::trace {

struct Event {
  int depth;          // nesting: a functor called by a functor is one deeper
  std::string layer;  // "functional", "functor", "op", "kernel" or "primitive"
  std::string text;
};

class Recorder {
 public:
  uint64_t id = 0;
  std::vector<Event> events;
  int depth = 0;
};

namespace internal {
// The innermost open recording on this thread, or null.
Recorder*& Current();
}  // namespace internal

inline bool IsEnabled() { return internal::Current() != nullptr; }

// Opens a recording on this thread, nested in any already open, and returns its id.
uint64_t Start();
// Closes the recording `id` of this thread (whatever else is open) and returns its events. Throws
// RuntimeError if this thread has no open recording with that id.
std::vector<Event> Stop(uint64_t id);

// Adds one event at the current depth. Call only when IsEnabled().
void Record(const char* layer, std::string text);

// Begin records an event and nests the events recorded until the matching End under it.
// Call only when IsEnabled(); End is safe to call after recording stopped.
void Begin(const char* layer, std::string text);
void End();

// Begin/End tied to a C++ scope.
class Scope {
 public:
  Scope(const char* layer, std::string text);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

}  // namespace oneflite::trace

// Opens a trace scope named `var` whose text is built only while tracing is on.
#define ONEFLITE_TRACE_SCOPE(var, layer, text) \
  std::optional<::oneflite::trace::Scope> var; \
  if (::oneflite::trace::IsEnabled()) { var.emplace(layer, text); }

// Records one event whose text is built only while tracing is on.
#define ONEFLITE_TRACE(layer, text)                                                 \
  do {                                                                              \
    if (::oneflite::trace::IsEnabled()) { ::oneflite::trace::Record(layer, text); } \
  } while (0)
