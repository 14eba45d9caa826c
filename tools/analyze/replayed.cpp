// SPDX-License-Identifier: Apache-2.0
// tools/analyze/replayed.cpp: see replayed.h.
#include "tools/analyze/replayed.h"

#include <utility>

#include "log/format.h"

#ifndef CUDAPOOL_VERSION
#define CUDAPOOL_VERSION "0.0.0"
#endif

namespace cudapool::analyze {

namespace {

// An event of a record carries no line: no raw fields (its record holds what the line would:
// written_field.h).
const RawFields kNoFields{};

}  // namespace

bool event_of_record(const log::LogRecord& r, Event* e) {
  // What format_event writes and LineDecoder::event_fields reads back: dev as a signed number
  // (a device ordinal below kDeviceLimit), ctx when not 0, block_size, segment and stream when
  // not 0 (a missing block_size reads as size), cache_hit on an alloc.
  if (r.action == log::LogAction::kOom || r.action > log::kLastLogAction || r.device < 0 ||
      static_cast<std::uint64_t>(r.device) >= kDeviceLimit || r.frames != 0 || r.entry != nullptr ||
      r.caller != nullptr) {
    return false;
  }
  *e = Event{};
  e->seq = r.seq;
  e->t_ns = r.t_ns;
  e->tid = r.tid;
  e->ptr = r.ptr;
  e->size = r.size;
  e->block_size = r.block_size != 0 ? r.block_size : r.size;
  e->dev = r.device;
  e->ctx = r.ctx;
  e->has_segment = r.segment != 0;
  e->segment = r.segment;
  e->stream = r.stream;
  e->action = static_cast<int>(r.action);
  e->action_name = log::action_name(r.action);
  e->cache_hit = r.action == log::LogAction::kAlloc && r.cache_hit;
  e->raw = &kNoFields;
  e->record = &r;
  return true;
}

RequestReplay::RequestReplay(const std::string& name, const HeldLevel& level) {
  analysis_.options_.sites = false;
  analysis_.options_.request_sizes = false;
  analysis_.options_.level = level;
  writer_.attach(this);
  replay::ReplaySettings settings;
  settings.write_log = &writer_;
  settings.version = CUDAPOOL_VERSION;
  settings.argv = {"cudapool-replay", "--write-log", "-", name};
  replayer_ = std::make_unique<replay::Replayer>(settings);
}

RequestReplay::~RequestReplay() {
  writer_.discard();
}

void RequestReplay::line(std::string_view text) {
  // One line (the header, the summary) with its newline.
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  analysis_.feed(++lines_, text);
  last_.empty = false;
  last_.length = text.size();
  last_.head.assign(text.substr(0, kLastLinePeek));
  last_.newline = true;
}

void RequestReplay::record(const log::LogRecord& r) {
  Event e;
  if (event_of_record(r, &e)) {
    analysis_.feed_event(++lines_, e);  // never the last line: the summary is (close())
    return;
  }
  char text[log::kMaxEventLine];
  const std::size_t n = log::format_event(r, text, sizeof text);
  if (n > 0) line(std::string_view(text, n));
}

void RequestReplay::finish() {
  replayer_->finish();
  log::Summary summary;
  for (const int dev : replayer_->devices())
    summary.devices.emplace_back(dev, replayer_->stats(dev));
  std::string error;
  writer_.close(std::move(summary), &error);  // to this sink: nothing fails
  analysis_.finish(last_);
  report_ = build_report(analysis_, "the replay's log");
}

}  // namespace cudapool::analyze
