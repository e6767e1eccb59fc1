// The GIL at the edges of oneflite's C++: releasing Python references from destructors, and
// carrying a Python exception through C++ code that runs without the GIL.
//
// Why destructors never wait for the GIL: at interpreter exit (Python 3.11 to 3.13), CPython ends
// a daemon thread that asks for the GIL back by unwinding its stack with pthread_exit. If that
// happens inside a destructor (a storage deleter, a Python backend being dropped), the unwind
// leaves a noexcept frame and the process aborts. So a destructor releases its reference at once
// when its thread holds the GIL, and otherwise leaves it in a queue and asks the interpreter, with
// Py_AddPendingCall (which never waits), to empty it on its main thread at the next chance: a
// NumPy array shared with torch through DLPack is freed right after torch drops it (torch calls
// the deleter without the GIL). The next thread coming back into Python through oneflite
// (CallWithoutGil, a Python backend's call) empties the queue too.
#include <Python.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "bindings.h"

namespace oneflite::python {

namespace {

std::mutex pending_mutex;
std::vector<std::function<void()>>& Pending() {
  static auto* pending = new std::vector<std::function<void()>>();  // never destroyed: see below
  return *pending;
}
std::atomic<bool> has_pending{false};

// Run by the interpreter, with the GIL, on its main thread.
int RunPendingReleasesCall(void*) {
  RunPendingReleases();
  return 0;
}

}  // namespace

bool PythonIsAlive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

void ReleaseWithGil(std::function<void()> release) {
  // Once the interpreter is finalizing, Python objects are leaked: they go with the process.
  // The queue itself is never destroyed, so a release from a static destructor after
  // Py_Finalize finds it still there.
  if (!PythonIsAlive()) { return; }
  if (PyGILState_Check()) {
    release();
    return;
  }
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    first = Pending().empty();
    Pending().push_back(std::move(release));
    has_pending.store(true, std::memory_order_release);
  }
  // One interpreter call per batch, not per release: the interpreter's queue of pending calls is
  // small and shared (signal handlers use it too). When that queue is full this fails, and the
  // batch waits for the next thread that comes back into Python through oneflite.
  if (first) { Py_AddPendingCall(&RunPendingReleasesCall, nullptr); }
}

void ReleaseReference(PyObject* object) {
  if (object == nullptr) { return; }
  ReleaseWithGil([object] { Py_DECREF(object); });
}

void RunPendingReleases() {
  if (!has_pending.load(std::memory_order_acquire) || !PythonIsAlive()) { return; }
  std::vector<std::function<void()>> releases;
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    releases.swap(Pending());
    has_pending.store(false, std::memory_order_release);
  }
  // Run outside the lock: a release may run Python code that drops more oneflite objects.
  for (auto& release : releases) { release(); }
}

// ---- PythonError -------------------------------------------------------------------------------

struct PythonError::State {
  PyObject* exception = nullptr;  // a strong reference to the exception instance
  std::string message;
  ~State() { ReleaseReference(exception); }
};

PythonError PythonError::Fetch() {
  PythonError error;
  error.state_ = std::make_shared<State>();
#if PY_VERSION_HEX >= 0x030C0000
  error.state_->exception = PyErr_GetRaisedException();
#else
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (value != nullptr && traceback != nullptr) { PyException_SetTraceback(value, traceback); }
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  error.state_->exception = value;
#endif
  PyObject* exception = error.state_->exception;
  if (exception == nullptr) {
    error.state_->message = "unknown Python error";
    return error;
  }
  error.state_->message = Py_TYPE(exception)->tp_name;
  if (PyObject* text = PyObject_Str(exception)) {
    if (const char* utf8 = PyUnicode_AsUTF8(text)) {
      error.state_->message += std::string(": ") + utf8;
    }
    Py_DECREF(text);
  }
  PyErr_Clear();  // from str() of the exception, if it failed
  return error;
}

const char* PythonError::what() const noexcept { return state_->message.c_str(); }

void PythonError::Restore() const {
  PyObject* exception = state_->exception;
  if (exception == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, state_->message.c_str());
    return;
  }
#if PY_VERSION_HEX >= 0x030C0000
  Py_INCREF(exception);
  PyErr_SetRaisedException(exception);
#else
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(exception));
  Py_INCREF(type);
  Py_INCREF(exception);
  PyErr_Restore(type, exception, PyException_GetTraceback(exception));
#endif
}

}  // namespace oneflite::python
