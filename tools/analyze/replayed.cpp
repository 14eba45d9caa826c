// tools/analyze/replayed.cpp: see replayed.h.
#include "tools/analyze/replayed.h"

#include <utility>

#include "log/format.h"

#ifndef CUDAPOOL_VERSION
#define CUDAPOOL_VERSION "0.0.0"
#endif

namespace cudapool::analyze {

RequestReplay::RequestReplay(const std::string& name) {
  cookie_io_functions_t io{};
  io.write = &RequestReplay::write;
  io.close = &RequestReplay::close;
  std::FILE* stream = fopencookie(this, "w", io);
  if (stream != nullptr) {
    setvbuf(stream, nullptr, _IOFBF, 1 << 16);
    writer_.attach(stream, "the replay's log");
  }
  replay::ReplaySettings settings;
  settings.write_log = stream != nullptr ? &writer_ : nullptr;
  settings.version = CUDAPOOL_VERSION;
  settings.argv = {"cudapool-replay", "--write-log", "-", name};
  replayer_ = std::make_unique<replay::Replayer>(settings);
}

RequestReplay::~RequestReplay() {
  writer_.discard();
}

ssize_t RequestReplay::write(void* cookie, const char* data, std::size_t size) {
  static_cast<RequestReplay*>(cookie)->take(std::string_view(data, size));
  return static_cast<ssize_t>(size);
}

int RequestReplay::close(void* cookie) {
  RequestReplay* self = static_cast<RequestReplay*>(cookie);
  if (!self->carry_.empty()) {
    self->analysis_.feed(++self->lines_, self->carry_);
    self->last_ =
        LastLine{false, self->carry_.size(), self->carry_.substr(0, kLastLinePeek), false};
    self->carry_.clear();
  }
  return 0;
}

void RequestReplay::take(std::string_view bytes) {
  std::size_t start = 0;
  for (;;) {
    const std::size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) {
      carry_.append(bytes.substr(start));
      return;
    }
    std::string_view line = bytes.substr(start, nl - start);
    if (!carry_.empty()) {
      carry_.append(line);
      line = carry_;
    }
    analysis_.feed(++lines_, line);
    last_.empty = false;  // assigned in place: the head's buffer is reused, not allocated a line
    last_.length = line.size();
    last_.head.assign(line.substr(0, kLastLinePeek));
    last_.newline = true;
    carry_.clear();
    start = nl + 1;
  }
}

void RequestReplay::finish() {
  replayer_->finish();
  log::Summary summary;
  for (const int dev : replayer_->devices())
    summary.devices.emplace_back(dev, replayer_->stats(dev));
  std::string error;
  writer_.close(std::move(summary), &error);  // an in-memory stream: nothing fails
  analysis_.finish(last_);
  report_ = build_report(analysis_, "the replay's log");
}

}  // namespace cudapool::analyze
