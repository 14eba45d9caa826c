// SPDX-License-Identifier: Apache-2.0
// shim/recording/python_stack.cpp: see python_stack.h.
#include "shim/recording/python_stack.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "shim/driver/real_driver.h"

namespace cudapool::shim {

namespace {

// The part of the C API used (stable ABI functions present from 3.10 to 3.13; objects are
// opaque). PyGILState_STATE is an enum: an int.
struct PythonApi {
  int (*is_initialized)();
  int (*is_finalizing)();  // Py_IsFinalizing (3.13) or _Py_IsFinalizing (before); may be null
  int (*gil_check)();
  int (*gil_ensure)();
  void (*gil_release)(int);
  void* (*this_thread_state)();
  void* (*thread_frame)(void*);
  void* (*frame_back)(void*);
  void* (*frame_code)(void*);
  int (*frame_line)(void*);
  void* (*get_attr)(void*, const char*);
  const char* (*utf8)(void*, long*);
  void (*incref)(void*);
  void (*decref)(void*);
  void (*err_fetch)(void**, void**, void**);
  void (*err_restore)(void*, void*, void*);
  void (*err_clear)();
};

constexpr int kRetryLookupEvery = 1024;  // captures between lookups while no Python is found

PythonApi g_api;
std::atomic<int> g_api_state{0};  // 0: not looked up, 1: found, 2: missing
std::atomic<int> g_until_retry{0};
std::mutex g_api_mutex;

std::atomic<std::uint64_t> g_taken{0}, g_no_thread_state{0}, g_no_frames{0}, g_not_running{0},
    g_failed{0};

template <typename Fn>
bool find(Fn* fn, const char* name) {
  *fn = reinterpret_cast<Fn>(real_dlsym(RTLD_DEFAULT, name));
  return *fn != nullptr;
}

bool look_up(PythonApi* a) {
  bool ok =
      find(&a->is_initialized, "Py_IsInitialized") && find(&a->gil_check, "PyGILState_Check") &&
      find(&a->gil_ensure, "PyGILState_Ensure") && find(&a->gil_release, "PyGILState_Release") &&
      find(&a->this_thread_state, "PyGILState_GetThisThreadState") &&
      find(&a->thread_frame, "PyThreadState_GetFrame") && find(&a->frame_back, "PyFrame_GetBack") &&
      find(&a->frame_code, "PyFrame_GetCode") && find(&a->frame_line, "PyFrame_GetLineNumber") &&
      find(&a->get_attr, "PyObject_GetAttrString") && find(&a->utf8, "PyUnicode_AsUTF8AndSize") &&
      find(&a->incref, "Py_IncRef") && find(&a->decref, "Py_DecRef") &&
      find(&a->err_fetch, "PyErr_Fetch") && find(&a->err_restore, "PyErr_Restore") &&
      find(&a->err_clear, "PyErr_Clear");
  if (ok && !find(&a->is_finalizing, "Py_IsFinalizing"))
    find(&a->is_finalizing, "_Py_IsFinalizing");
  return ok;
}

// The API, looked up at the first capture and, while missing (a program that loads Python later),
// again every kRetryLookupEvery captures.
const PythonApi* api() {
  const int state = g_api_state.load(std::memory_order_acquire);
  if (state == 1) return &g_api;
  if (state == 2 && g_until_retry.fetch_sub(1, std::memory_order_relaxed) > 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_api_mutex);
  if (g_api_state.load(std::memory_order_relaxed) == 1) return &g_api;
  PythonApi a{};
  if (!look_up(&a)) {
    g_until_retry.store(kRetryLookupEvery, std::memory_order_relaxed);
    g_api_state.store(2, std::memory_order_release);
    return nullptr;
  }
  g_api = a;
  g_api_state.store(1, std::memory_order_release);
  return &g_api;
}

struct CodeNames {
  std::string file, function;
};

struct FrameKey {
  const void* code;
  std::uint32_t line;
  bool operator==(const FrameKey&) const = default;
};
struct FrameKeyHash {
  std::size_t operator()(const FrameKey& k) const {
    return std::hash<const void*>()(k.code) ^
           (static_cast<std::size_t>(k.line) * 0x9E3779B97F4A7C15u);
  }
};

// The code objects seen (each kept alive by one reference, never dropped), and the frame ids of
// the current log's table (a new table, a new log, starts them anew).
struct Interned {
  std::mutex mutex;
  std::unordered_map<const void*, CodeNames> names;
  const log::StackTable* table = nullptr;
  std::unordered_map<FrameKey, std::uint32_t, FrameKeyHash> frame_ids;
};
Interned& interned() {
  static Interned* const it = new Interned;  // never destroyed: hooks run after exit's destructors
  return *it;
}

// A str attribute of a code object as UTF-8 ("" when it has none); any error it raises cleared.
std::string text_attribute(const PythonApi& py, void* code, const char* name) {
  std::string out;
  void* value = py.get_attr(code, name);
  if (value == nullptr) {  // an AttributeError (co_qualname before 3.11): dropped
    py.err_clear();
    return out;
  }
  long size = 0;
  const char* text = py.utf8(value, &size);
  if (text != nullptr && size > 0) out.assign(text, static_cast<std::size_t>(size));
  if (text == nullptr) py.err_clear();
  py.decref(value);
  return out;
}

// The names of a code object met for the first time; the GIL is held, a pending exception of the
// program kept aside while attributes are read.
CodeNames names_of(const PythonApi& py, void* code) {
  void *type = nullptr, *value = nullptr, *traceback = nullptr;
  py.err_fetch(&type, &value, &traceback);
  CodeNames n;
  n.file = text_attribute(py, code, "co_filename");
  n.function = text_attribute(py, code, "co_qualname");  // 3.11 on
  if (n.function.empty()) n.function = text_attribute(py, code, "co_name");
  py.err_restore(type, value, traceback);
  return n;
}

// Set while this thread takes a stack: Python code run meanwhile (a destructor) that allocates
// comes back here and is skipped rather than wait on the locks taken.
thread_local bool t_capturing = false;

}  // namespace

std::uint32_t capture_python_stack(log::StackTable& table, int depth) {
  if (depth <= 0) return 0;
  if (depth > static_cast<int>(log::kMaxPythonFrames)) depth = log::kMaxPythonFrames;
  if (t_capturing) {  // Python code run while this thread took a stack allocated
    g_failed.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const PythonApi* api_found = api();
  if (api_found == nullptr) {
    g_not_running.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const PythonApi& py = *api_found;
  if (py.is_initialized() == 0) {
    g_not_running.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  if (py.this_thread_state() == nullptr) {
    g_no_thread_state.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  // A thread that does not hold the GIL during finalization would be ended by PyGILState_Ensure.
  const bool holds = py.gil_check() != 0;
  if (!holds && py.is_finalizing != nullptr && py.is_finalizing() != 0) {
    g_not_running.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  t_capturing = true;
  const int gil = py.gil_ensure();
  void* codes[log::kMaxPythonFrames];
  std::uint32_t lines[log::kMaxPythonFrames];
  int n = 0;
  void* frame = py.thread_frame(py.this_thread_state());
  while (frame != nullptr && n < depth) {
    codes[n] = py.frame_code(frame);
    const int line = py.frame_line(frame);
    lines[n] = line > 0 ? static_cast<std::uint32_t>(line) : 0;
    if (codes[n] != nullptr) ++n;
    void* back = py.frame_back(frame);
    py.decref(frame);
    frame = back;
  }
  if (frame != nullptr) py.decref(frame);
  // Names of code objects met for the first time, read with the GIL held and no lock of ours.
  Interned& in = interned();
  for (int i = 0; i < n; ++i) {
    bool known = false;
    {
      std::lock_guard<std::mutex> lock(in.mutex);
      known = in.names.count(codes[i]) != 0;
    }
    if (known) continue;
    CodeNames names = names_of(py, codes[i]);
    std::lock_guard<std::mutex> lock(in.mutex);
    if (in.names.emplace(codes[i], std::move(names)).second) py.incref(codes[i]);  // kept alive
  }
  for (int i = 0; i < n; ++i) py.decref(codes[i]);  // the names map's reference keeps each alive
  py.gil_release(gil);
  t_capturing = false;
  if (n == 0) {  // a thread state but no Python code running (PyTorch's autograd threads)
    g_no_frames.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  std::uint32_t ids[log::kMaxPythonFrames];
  {
    std::lock_guard<std::mutex> lock(in.mutex);
    if (in.table != &table) {  // a new log: its frames numbered anew
      in.frame_ids.clear();
      in.table = &table;
    }
    for (int i = 0; i < n; ++i) {
      const FrameKey key{codes[i], lines[i]};
      auto found = in.frame_ids.find(key);
      if (found == in.frame_ids.end()) {
        const CodeNames& names = in.names.at(codes[i]);
        found =
            in.frame_ids.emplace(key, table.add_frame(names.file, names.function, lines[i])).first;
      }
      ids[i] = found->second;
    }
  }
  g_taken.fetch_add(1, std::memory_order_relaxed);
  return table.intern_stack(ids, static_cast<std::size_t>(n));
}

log::Summary::PythonStacks python_stack_counts() {
  log::Summary::PythonStacks s;
  s.recorded = true;
  s.taken = g_taken.load(std::memory_order_relaxed);
  s.no_thread_state = g_no_thread_state.load(std::memory_order_relaxed);
  s.no_frames = g_no_frames.load(std::memory_order_relaxed);
  s.not_running = g_not_running.load(std::memory_order_relaxed);
  s.failed = g_failed.load(std::memory_order_relaxed);
  return s;
}

}  // namespace cudapool::shim
