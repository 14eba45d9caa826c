// SPDX-License-Identifier: Apache-2.0
// shim/reports/oom_snapshot_pickle.cpp: see oom_snapshot_pickle.h.
#include "shim/reports/oom_snapshot_pickle.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "log/pickle_out.h"

namespace cudapool::shim {

namespace {

struct Frame {
  std::string name, filename;
  std::uint32_t line = 0;
};

// A dict's entry of each kind.
void field(log::PickleOut& out, std::string_view key, std::uint64_t value) {
  out.key(key);
  out.unsigned_integer(value);
}
void field(log::PickleOut& out, std::string_view key, std::string_view value) {
  out.key(key);
  out.text(value);
}
void empty_list(log::PickleOut& out, std::string_view key) {
  out.key(key);
  out.begin_list();
  out.end_list();
}

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Frames as memory_viz shows them, each name found once; at most kMaxSnapshotFrames written.
class Frames {
 public:
  explicit Frames(const log::StackTable* stacks) : stacks_(stacks) {}

  // The frames of one block or request: innermost first, the native ones with the next Python
  // frame put before each one of the interpreter's loop (PyEval_EvalFrame), the Python frames
  // left after them (memviz_snapshot.py's combined(), PyTorch's symbolize()).
  void write(log::PickleOut& out, const std::vector<std::uint64_t>& native, std::uint32_t stack) {
    const std::vector<Frame>& python = this->python(stack);
    out.begin_list();
    std::size_t k = 0;
    for (std::uint64_t address : native) {
      const Frame& f = this->native(address);
      if (k < python.size() && f.name.find("PyEval_EvalFrame") != std::string::npos) {
        one(out, python[k++]);
      }
      one(out, f);
    }
    for (; k < python.size(); ++k) one(out, python[k]);
    out.end_list();
  }

  std::size_t left_out() const { return left_out_; }

 private:
  void one(log::PickleOut& out, const Frame& f) {
    if (written_ == kMaxSnapshotFrames) {
      ++left_out_;
      return;
    }
    ++written_;
    out.begin_dict();
    field(out, "name", f.name);
    field(out, "filename", f.filename);
    field(out, "line", f.line);
    out.end_dict();
  }

  const Frame& native(std::uint64_t address) {
    auto [it, added] = natives_.try_emplace(address);
    if (!added) return it->second;
    Frame& f = it->second;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fname == nullptr) {
      f.name = hex(address);
      f.filename = "??";
    } else if (info.dli_sname != nullptr && info.dli_saddr != nullptr) {
      f.name = std::string(info.dli_sname) + "+" +
               hex(address - reinterpret_cast<std::uint64_t>(info.dli_saddr));
      f.filename = info.dli_fname;
    } else {
      const char* base = std::strrchr(info.dli_fname, '/');
      f.name = std::string(base != nullptr ? base + 1 : info.dli_fname) + "+" +
               hex(address - reinterpret_cast<std::uint64_t>(info.dli_fbase));
      f.filename = info.dli_fname;
    }
    return f;
  }

  const std::vector<Frame>& python(std::uint32_t stack) {
    static const std::vector<Frame> kNone;
    if (stack == 0 || stacks_ == nullptr) return kNone;
    auto [it, added] = pythons_.try_emplace(stack);
    if (!added) return it->second;
    for (std::uint32_t id : stacks_->stack(stack)) {
      log::PythonFrame p;
      Frame& f = it->second.emplace_back();
      if (stacks_->frame(id, &p)) {
        f.filename = std::move(p.file);
        f.name = std::move(p.function);
        f.line = p.line;
      } else {
        f.filename = f.name = "??";
      }
    }
    return it->second;
  }

  const log::StackTable* stacks_;
  std::unordered_map<std::uint64_t, Frame> natives_;
  std::unordered_map<std::uint32_t, std::vector<Frame>> pythons_;
  std::size_t written_ = 0, left_out_ = 0;
};

// A segment as memory_viz lists it: a run of one pool's blocks.
struct Segment {
  int device = 0;
  std::uint64_t address = 0, size = 0, stream = 0;
  bool small = false, expandable = false;
  std::vector<const BlockReading*> blocks;  // in address order, touching
};

// The pools' segments in device and address order. An ordinary segment's blocks cover it; an
// expandable segment's mapped blocks make a segment of each run of touching pages.
std::vector<Segment> segments_of(const std::vector<PoolBlocks>& pools) {
  std::vector<Segment> out;
  for (const PoolBlocks& p : pools) {
    std::vector<const BlockReading*> blocks;
    blocks.reserve(p.blocks.size());
    for (const BlockReading& b : p.blocks) blocks.push_back(&b);
    std::sort(blocks.begin(), blocks.end(),
              [](const BlockReading* a, const BlockReading* b) { return a->ptr < b->ptr; });
    Segment* open = nullptr;
    std::uint64_t open_base = 0;
    for (const BlockReading* b : blocks) {
      if (b->state == BlockState::kUnmapped) {
        open = nullptr;
        continue;
      }
      if (open == nullptr || b->segment != open_base || b->ptr != open->address + open->size) {
        open = &out.emplace_back();
        open_base = b->segment;
        open->device = p.device;
        open->address = b->ptr;
        open->stream = b->stream;
        open->small = b->small;
        open->expandable = b->expandable;
      }
      open->size += b->size;
      open->blocks.push_back(b);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Segment& a, const Segment& b) {
    return a.device != b.device ? a.device < b.device : a.address < b.address;
  });
  return out;
}

void write_block(log::PickleOut& out, Frames& frames, std::uint64_t address, std::uint64_t size,
                 const BlockReading* b) {
  out.begin_dict();
  field(out, "address", address);
  field(out, "size", size);
  field(out, "requested_size", b != nullptr ? b->requested : 0);
  field(out, "state",
        b == nullptr                      ? "inactive"
        : b->state == BlockState::kFenced ? "active_pending_free"
                                          : "active_allocated");
  if (b != nullptr) {
    out.key("frames");
    frames.write(out, b->frames, b->python_stack);
  } else {
    empty_list(out, "frames");
  }
  out.end_dict();
}

void write_segment(log::PickleOut& out, Frames& frames, const Segment& s) {
  std::uint64_t allocated = 0, active = 0, requested = 0;
  for (const BlockReading* b : s.blocks) {
    if (b->state == BlockState::kFree) continue;
    if (b->state != BlockState::kFenced) allocated += b->size;
    active += b->size;
    requested += b->requested;
  }
  out.begin_dict();
  out.key("device");
  out.integer(s.device);
  field(out, "address", s.address);
  field(out, "total_size", s.size);
  field(out, "allocated_size", allocated);
  field(out, "active_size", active);
  field(out, "requested_size", requested);
  field(out, "stream", s.stream);
  field(out, "segment_type", s.small ? "small" : "large");
  out.key("segment_pool_id");
  out.begin_tuple();
  out.integer(0);
  out.integer(0);
  out.end_tuple();
  out.key("is_expandable");
  out.boolean(s.expandable);
  empty_list(out, "frames");
  out.key("blocks");
  out.begin_list();
  // Free blocks that touch are one inactive range, as the export lists them.
  std::uint64_t free_start = 0, free_size = 0;
  for (const BlockReading* b : s.blocks) {
    if (b->state == BlockState::kFree) {
      if (free_size == 0) free_start = b->ptr;
      free_size += b->size;
      continue;
    }
    if (free_size != 0) write_block(out, frames, free_start, free_size, nullptr);
    free_size = 0;
    write_block(out, frames, b->ptr, b->size, b);
  }
  if (free_size != 0) write_block(out, frames, free_start, free_size, nullptr);
  out.end_list();
  out.end_dict();
}

void write_setting(log::PickleOut& out, const config::EffectiveSetting& s) {
  out.key(s.name);
  switch (s.type) {
    case config::SettingType::kBool:
      out.boolean(s.value == "True");
      return;
    case config::SettingType::kNumber: {
      char* end = nullptr;
      const long long n = std::strtoll(s.value.c_str(), &end, 10);
      if (!s.value.empty() && *end == '\0') {
        out.integer(n);
        return;
      }
      const double d = std::strtod(s.value.c_str(), &end);
      if (!s.value.empty() && *end == '\0') {
        out.real(d);
        return;
      }
      break;
    }
    case config::SettingType::kText:
      break;
  }
  out.text(s.value);
}

void write_oom_entry(log::PickleOut& out, Frames& frames, const OomRequest& r) {
  out.begin_dict();
  field(out, "action", "oom");
  field(out, "device_free", r.device_free);  // PyTorch's oom entry: device_free, no addr
  field(out, "size", r.size);
  field(out, "stream", r.stream);
  field(out, "time_us", r.time_us);
  field(out, "compile_context", "N/A");
  field(out, "user_metadata", "");
  out.key("frames");
  frames.write(out, r.frames, r.python_stack);
  out.end_dict();
}

}  // namespace

std::string oom_snapshot_pickle(const std::vector<PoolBlocks>& pools, const OomRequest& request,
                                const std::vector<config::EffectiveSetting>& settings,
                                const log::StackTable* stacks, std::size_t* frames_left_out) {
  Frames frames(stacks);
  log::PickleOut out;
  out.begin_dict();
  out.key("segments");
  out.begin_list();
  int devices = request.device + 1;
  for (const Segment& s : segments_of(pools)) {
    write_segment(out, frames, s);
    devices = std::max(devices, s.device + 1);
  }
  out.end_list();
  out.key("device_traces");
  out.begin_list();
  for (int d = 0; d < devices; ++d) {
    out.begin_list();
    if (d == request.device) write_oom_entry(out, frames, request);
    out.end_list();
  }
  out.end_list();
  out.key("allocator_settings");
  out.begin_dict();
  for (const config::EffectiveSetting& s : settings) write_setting(out, s);
  out.end_dict();
  empty_list(out, "external_annotations");
  out.end_dict();
  *frames_left_out = frames.left_out();
  return out.finish();
}

}  // namespace cudapool::shim
