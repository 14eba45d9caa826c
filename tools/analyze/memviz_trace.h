// SPDX-License-Identifier: Apache-2.0
// tools/analyze/memviz_trace.h: what `cudapool export --memory-viz` draws of one log
// (scripts/cudapool_analysis/memviz.py renders the PyTorch snapshot from it;
// docs/analysis-format.md, "memviz"): per device the pool as its events leave it (segments,
// expandable ranges, blocks) and the trace of its actions, the last max_entries entries in a ring
// (0: all), with memviz.py's consistency rules: entries added for what the log leaves out (a free
// implied, a completion missing, memory the driver took with its context), events that fit
// nothing counted. The port of the memviz oracle's Device (tests/oracle/memviz_pass.py), kept
// exact: the same entries in the same order (blocks and regions are visited in the order Python's
// dicts keep, by insertion). Memory: the live blocks and regions, the ring, each distinct stack
// once (native frames, then the Python stack's frames, python_stacks.h); write() is in
// memviz_write.cpp, what the two files share in memviz_order.h. Not here: the snapshot's
// dicts, frame names, combining native and Python frames, and the file (memviz_snapshot.py).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/event_hook.h"
#include "tools/analyze/figure.h"
#include "tools/analyze/json_out.h"

namespace cudapool::analyze {

class MemvizTrace : public EventHook {
 public:
  explicit MemvizTrace(std::size_t max_entries) : max_entries_(max_entries) {}
  void event(std::uint64_t line, const Event& e, const DeviceState& d) override;
  // The log's end (memviz.py finish()): blocks of a log without free_completed events leave at
  // their free_requested.
  void finish() override;
  // The log's "memviz" object, of the analysis this trace followed (the replay's for a log of
  // requests: replayed).
  const char* key() const override { return "memviz"; }
  void write(JsonOut& out, const ExportInputs& in) const override;

  struct Region {
    std::uint64_t base = 0, size = 0, stream = 0, first_map = 0, largest_block = 0, blocks = 0;
    std::uint64_t order = 0;  // insertion, as Python's dicts keep it
    int ctx = 0;
    bool expandable = false;
    std::vector<std::pair<UFigure, UFigure>> ranges;  // expandable: mapped [s, e)
    bool covers(std::uint64_t start, UFigure end) const;
  };
  struct Block {
    std::uint64_t size = 0, requested = 0, stream = 0, order = 0;
    std::uint32_t frames = 0;
    int ctx = 0;
    bool pending = false;
    std::int64_t free_entry = -1;  // the entry's number in the device's trace
    std::shared_ptr<Region> region;
  };
  struct Entry {
    std::uint8_t action;         // log::LogAction
    std::uint8_t meta = 0;       // index in kMetas
    std::uint8_t completed = 0;  // 1 + the meta of a completion right after it (free_requested)
    std::uint32_t frames = 0;
    std::uint64_t addr = 0, size = 0, stream = 0, t_ns = 0;
  };
  struct Device {
    int dev = 0;
    std::unordered_map<std::uint64_t, Block> blocks;
    std::map<std::uint64_t, std::shared_ptr<Region>> segments, expandable;
    std::uint64_t free_requested = 0, free_completed = 0, regions_seen = 0;
    std::map<std::string, std::uint64_t> count;
    std::vector<Entry> ring;  // entries[first % capacity ...]
    std::uint64_t added = 0;  // entries ever added
  };

 private:
  Device& device(int dev);
  void add(Device& d, const Entry& e);
  Entry* entry(Device& d, std::int64_t n);
  void alloc(Device& d, const Event& e, std::uint64_t stream, std::uint32_t frames);
  void request_free(Device& d, std::uint64_t ptr, Block& b, std::uint64_t t, std::uint8_t meta);
  void gone(Device& d, std::uint64_t ptr, std::uint64_t t, std::uint8_t meta,
            bool at_request = true);
  void free(Device& d, bool requested, std::uint64_t ptr, std::uint64_t t);
  void segment(Device& d, int action, std::uint64_t ptr, std::uint64_t size,
               std::optional<std::uint64_t> seg, int ctx, std::uint64_t stream, std::uint64_t t,
               std::uint8_t meta = 0);
  void drop_context(Device& d, int ctx, std::uint64_t t);
  std::shared_ptr<Region> region_of(Device& d, std::uint64_t start, UFigure end,
                                    std::optional<std::uint64_t> seg) const;
  // The id of an alloc event's frames: its backtrace (JSON text, or empty) and its Python stack
  // (or null); 0: none.
  std::uint32_t stack(std::string_view raw, const PythonStack* python);

  std::size_t max_entries_;
  std::uint64_t order_ = 0;
  std::vector<std::unique_ptr<Device>> devices_;  // in the order first seen
  std::map<int, Device*> by_dev_;
  std::map<std::string, std::uint64_t> left_out_;
  // An alloc event's frames: its native ones (when its backtrace is a list of strings), then its
  // Python stack's, innermost first (memviz_snapshot.py combines them as PyTorch does).
  struct Stack {
    std::vector<std::string> native;
    const PythonStack* python = nullptr;
  };
  std::unordered_map<std::string, std::uint32_t> stack_ids_;
  std::vector<Stack> stacks_{Stack{}};  // id -> frames; 0: none
};

}  // namespace cudapool::analyze
