// SPDX-License-Identifier: Apache-2.0
// log/logger.h: the allocation log of one process. The hook side (append(), on_pool_event()) only
// stamps a LogRecord and copies it into the ring (ring.h); a writer thread formats the records
// (format.h) and writes whole lines; every write to the log after the header, the summary line
// included, is the writer thread's. Lossless: when the writer falls behind, append() waits for
// room, as long as the writer makes progress. Robust: a bad template, an unwritable path, a failed
// write or a writer that made no progress for the stall limit (a reader that stopped reading, a
// hung file system) prints one warning ("cudapool: ...") and the program goes on (after a write
// failure the writer discards; a stalled writer is left where it is, never waited for again). A
// program that closes the log's descriptor, or gives its number to a file of its own, costs
// nothing: the file is opened again by its name (descriptor.h). Whole lines: no event line
// straddles a page of the file, so a SIGKILL during a write (the kernel stops between pages) never
// leaves half a line; an event line may therefore end in padding spaces. Compressed: a name ending
// in ".zst" or ".gz" is written as a zstd or gzip stream (compression.h; the library loaded with
// dlopen at start(), never by the hooks; without it the log is written plain under the name less
// its extension, with one warning): the writer thread compresses in chunks of whole lines that
// end at sync points, about every 0.1 s or 127 KiB of lines (zstd), and lays them out so that the
// file cut at any page boundary still decodes to whole lines (logger_compressed.cpp). Not here:
// what to log and when (the shim decides), symbolizing backtraces, reading the environment.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "log/compression.h"
#include "log/descriptor.h"
#include "log/format.h"
#include "log/path_template.h"
#include "log/record.h"
#include "log/ring.h"
#include "log/stack_table.h"
#include "pool/events.h"

namespace cudapool::log {

// Where the log's warnings go (a bad path, a refused file, a failed write): one message without
// the "cudapool: " prefix. Default (nullptr): "cudapool: MESSAGE" on stderr in one write(2). The
// shim sends them through its own diagnostics (CUDAPOOL_LOG_LEVEL); set it before start().
using WarningSink = void (*)(std::string_view message);
void set_warning_sink(WarningSink sink);

// What Logger::start would say about a template before it writes anything: the same expansion
// and the destination's rules (file.h's check_log_file: nothing created or opened). pid and host
// as the process that will start the log has them (host "": this machine's).
struct TemplateCheck {
  std::string path;     // the expanded path (when the template expands)
  std::string warning;  // "" when a log would be opened, else Logger::start's warning
};
TemplateCheck check_log_template(const std::string& path_template, const EnvLookup& env,
                                 std::uint64_t pid, std::string host = {});

// The glob(3) patterns (backslash escapes) of every file Logger::start can write for the template,
// for any pid, rank and host (path_template_glob): the name, its numbered names when it is taken
// (NAME.1 to NAME.99, file.h) and, for a .zst or .gz name, the plain name written when the
// library is missing (without_compression_extension), numbered too. Empty, with *error set (the
// template's warning, as check_log_template gives it), when the template cannot expand.
std::vector<std::string> log_file_globs(const std::string& path_template, std::string* error);

class Logger : public pool::EventSink {
 public:
  // Expands path_template (env: getenv's shape, for %r), opens the destination (file.h: a new
  // file, which appears with its header line already in it, or an existing character device or
  // FIFO, which gets the header first) and starts the writer thread. header.pid, .host and
  // .start_unix_ns are filled in when 0 or empty. On any failure: one warning and nullptr.
  // stall_ms: how long the writer may make no progress before logging stops (kStallMs).
  static Logger* start(const std::string& path_template, const HeaderInfo& header, EnvLookup env,
                       std::size_t ring_capacity = Ring::kDefaultCapacity,
                       std::uint32_t stall_ms = kStallMs);
  // The same on a descriptor already open (taken over; closed by the logger), writing the header
  // only when one is given; compressed when path's name asks for it and the library loads (else
  // plain, with the warning). path names the target in messages; it is never opened again. For
  // tests (/dev/full, pipes).
  static Logger* start_on_fd(int fd, const std::string& path, const HeaderInfo* header,
                             std::size_t ring_capacity = Ring::kDefaultCapacity,
                             std::uint32_t stall_ms = kStallMs);

  // Stops without a summary line unless finish() ran; does nothing after forget_after_fork().
  // Waits for a writer still stuck in a write (its memory is this object): the shim never
  // destroys its logger.
  ~Logger() override;
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Any thread. Sets r.seq (1, 2, ... in the order of the file), and r.t_ns (CLOCK_MONOTONIC) and
  // r.tid (gettid) when they are 0, and queues it; waits while the ring is full and the writer
  // makes progress. Returns the seq given, or 0 when nothing was queued (after finish() or
  // forget_after_fork(), or once the writer stalled: the stall's warning comes from the append that
  // found it). No allocation, no lock, no I/O but that one warning. Not for a signal handler that
  // may interrupt an append() on the same thread (the ring could be full behind that call's own
  // slot).
  std::uint64_t append(LogRecord r);

  // pool::EventSink: the event as a LogRecord (device, action, ptr, size, block_size, segment,
  // stream, cache_hit), appended; returns its seq (as append()).
  std::uint64_t on_pool_event(const pool::PoolEvent& event) override;

  // Once (later calls return at once): stops accepting; the writer writes every queued record,
  // then the summary line (seq, t_ns and events filled in when 0; write_failed and records_lost
  // merged with the logger's own); then joins the writer and closes the file. When the writer
  // makes no progress for the stall limit (or had stalled before): one warning, and it returns
  // without waiting any longer (the writer is left in its write). Records appended concurrently
  // with finish() may be left out (counted in records_lost when they got a seq).
  void finish(const Summary& summary);

  // For a signal handler about to end the process: waits until every record appended before the
  // call is in the file, or the writer made no progress for stall_ms, or logging stopped (a write
  // failure, finish(), a child after fork or vfork). Returns whether every such record is in the
  // file. A compressed log's frame (member) is closed too, so that the file is a complete one;
  // from then on the writer closes it after each write (see resume_after_exit_wait()).
  // Async-signal-safe: atomic loads and stores, a futex wake and nanosleep only. Records of an
  // append() that the signal interrupted on the calling thread cannot be written: the wait ends
  // by the stall.
  bool wait_written_before_exit(std::uint32_t stall_ms);
  // The process goes on after wait_written_before_exit() (an exec that failed): a compressed
  // log's frames stay open again between writes. Async-signal-safe; nothing in a child after fork
  // or vfork.
  void resume_after_exit_wait();

  // In the child after fork(): from now on accepts and writes nothing, never touches the parent's
  // writer thread or locks, and closes this process's copy of the descriptor.
  void forget_after_fork();

  // The Python stacks of this log (CUDAPOOL_BACKTRACE=python): the shim adds to it, and an event
  // whose python_stack names one of its stacks gets the stack's definition lines before it.
  StackTable& python_stacks() { return python_stacks_; }

  // The file written (NAME or NAME.k).
  const std::string& path() const { return path_; }
  // How it is written (kNone: plain).
  Compression compression() const { return compression_; }

  struct Counters {
    std::uint64_t appended;        // records given a seq
    std::uint64_t written;         // event lines written (exact after finish())
    std::uint64_t producer_waits;  // appends that waited for room
    bool write_failed;
  };
  Counters counters() const;
  std::size_t ring_capacity() const { return ring_.capacity(); }

 private:
  Logger(int fd, std::string path, std::size_t ring_capacity, std::uint32_t stall_ms,
         std::unique_ptr<Compressor> compressor);
  // created: path is a file made for this log (removed again if the start fails; never a device).
  // named: path names the file (not start_on_fd's), opened again by it when the program closes
  // the descriptor. compressor: the stream (nullptr: plain), its bytes so far in the file.
  static Logger* launch(int fd, const std::string& path, const HeaderInfo* header,
                        std::size_t ring_capacity, std::uint32_t stall_ms, bool created, bool named,
                        std::unique_ptr<Compressor> compressor);
  void run();  // the writer thread
  std::size_t drain_some();
  void flush_noexcept();
  void turn_noexcept();  // compressed_turn(), an exception stopping the log
  void consume(const LogRecord& record);
  bool lay_out(char* at, std::size_t n);       // see logger_writer.cpp
  void define_python_stack(std::uint32_t id);  // see logger_writer.cpp
  void flush();
  void write_summary_line();  // the writer, at its end

  // Compressed (logger_compressed.cpp). Lines [data, data + size) into the stream, a sync point
  // whenever the next line would pass a chunk's input; events: they are event lines (counted).
  void compress_lines(const char* data, std::size_t size, bool events);
  // A sync point (and the frame's end when close_frame): the chunk, laid out for the pages,
  // joins ready_.
  bool end_chunk(bool close_frame);
  // Writes ready_ at file_offset_; on failure the file is cut back to where it was and the lines
  // of ready_ and of the chunk not synced are counted out.
  bool write_ready(bool quiet);
  // At each turn of the writer: a sync point and a write when the chunk is old enough, and the
  // frame closed when wait_written_before_exit() asks for it.
  void compressed_turn();
  // The writer's end: the summary line (when given), the last chunk and the frame's end.
  void finish_compressed(const std::string* summary_line, bool quiet);
  // The library failed: logging stops as after a failed write.
  void stream_failed();
  // What was not written is counted out, the stream told.
  void lose_unwritten();
  // Stops accepting and waits for the writer thread to end (bounded by the stall limit); joins it.
  // False when it stalled (then it is not joined).
  bool stop_writer();
  void report_stall();
  // Writes [data, data + size), whole lines, at file_offset_; returns the bytes of whole lines
  // written (size when all went). On failure: cuts a partly written line off the file, sets
  // write_failed_ and errno and, unless quiet, warns once.
  std::size_t write_lines(const char* data, std::size_t size, bool quiet);
  // Moves the '\n' ending the file (mid-page) to the end of its page, padding with spaces.
  bool pad_last_line(std::size_t room);
  std::size_t write_at(const char* data, std::size_t size, std::uint64_t offset);
  // Whether fd_ is the file the logger opened; when the program closed it or gave its number to
  // a file of its own, the file is opened again by its name (when still the same file) into fd_.
  bool descriptor_is_ours(int* err, std::string* why);
  void failed(const std::string& why, bool quiet);
  void close_if_ours();

  std::string path_;
  std::string reopen_path_;  // absolute; "" when the file is not to be opened again
  int fd_;
  const std::uint32_t stall_ms_;
  Ring ring_;
  std::unique_ptr<std::thread> writer_;
  // Read by every append(): a cache line that the writer's counting never touches.
  alignas(64) std::atomic<bool> accepting_{true};
  std::atomic<bool> finished_{false};
  std::atomic<bool> forgotten_{false};
  // The process whose writer thread this is: a vfork child shares the logger's memory and runs no
  // fork handlers, so only the pid tells it the writer is not its own.
  const pid_t process_ = getpid();
  alignas(64) std::atomic<bool> stop_{false};
  std::atomic<bool> write_failed_{false};
  std::atomic<std::uint64_t> written_{0};  // changed by the writer only (no atomic add needed)
  std::atomic<std::uint64_t> in_file_{0};  // records whose lines the file holds (writer only)
  std::atomic<bool> writer_done_{false};   // the writer thread has ended its work
  std::atomic<bool> stall_reported_{false};
  std::unique_ptr<Summary> summary_;  // set by finish() before stop_, then the writer's
  StackTable python_stacks_;

  // Writer side.
  bool identity_known_ = false;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  std::size_t page_ = 0;  // page size for a regular file, 0 for anything else (pipe, device)
  std::size_t buffer_bytes_ = 0;
  std::unique_ptr<char[]> buffer_;  // whole lines, to go at file_offset_
  std::size_t buffered_ = 0;
  std::unique_ptr<char[]> pad_;    // page_ + 1 bytes
  std::uint64_t file_offset_ = 0;  // end of the whole lines written (compressed: of the chunks)
  std::vector<bool> stacks_defined_, frames_defined_;  // Python stacks and frames written, by id

  // Compressed writing (logger_compressed.cpp): the writer's, but for the two atomics.
  const Compression compression_;
  std::unique_ptr<Compressor> compressor_;
  std::string ready_;                   // whole chunks, padded for the pages, for file_offset_
  std::string chunk_;                   // the stream's bytes of the chunk not synced yet
  std::size_t chunk_input_ = 0;         // bytes of lines in that chunk
  std::size_t chunk_limit_ = 0;         // the most a chunk takes (Compressor::max_chunk_input)
  std::uint64_t chunk_lines_ = 0;       // lines in that chunk
  std::uint64_t ready_lines_ = 0;       // lines in ready_
  std::uint64_t chunk_started_ns_ = 0;  // when its first line went in
  alignas(64) std::atomic<bool> close_frames_{false};  // wait_written_before_exit() asked
  std::atomic<std::uint64_t> closed_at_{0};  // 1 + in_file_ when the writer last closed a frame
};

}  // namespace cudapool::log
