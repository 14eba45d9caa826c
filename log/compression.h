// SPDX-License-Identifier: Apache-2.0
// log/compression.h: the log written compressed (docs/log-files.md, "Compressed logs"). A log whose
// name ends in ".zst" is written as zstd, ".gz" as gzip; nothing else is. The libraries are loaded
// with dlopen (libzstd.so.1, libz.so.1) the first time a log's name asks for one, never otherwise:
// the shim links neither. A Compressor is the writer thread's stream: it takes whole lines and
// hands out compressed bytes; a sync point (sync()) makes everything added so far decodable from
// the bytes handed out, so that the file, cut after any write, still decodes to whole lines. zstd
// makes each chunk (the bytes between two sync points) a frame of its own: any decoder, the zstd
// program included, then reads a cut file up to its last whole chunk. gzip keeps one member open
// across sync points (a deflate sync flush) and end() closes it so that the file is a complete
// one. When bytes it handed out did not reach the file (a failed write), lost() says so, and the
// next bytes first close the stream where the file has it, then start a new frame or member: what
// is on disk stays valid (frames and members may follow one another). Not here: when to sync,
// where the bytes go in the file and the padding between pages (the logger:
// logger_compressed.cpp), the codecs themselves (compression_zstd.cpp, compression_gzip.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "log/compression_kind.h"

namespace cudapool::log {

// By the name's end: ".zst" is kZstd, ".gz" kGzip, anything else kNone (also a name that is only
// the extension).
Compression compression_of(std::string_view path);
// "zstd", "gzip" (kNone: "plain").
const char* compression_name(Compression kind);
// The library dlopen loads for it: "libzstd.so.1", "libz.so.1" (kNone: "").
const char* compression_library(Compression kind);
// path without the extension that asks for compression ("run.jsonl.zst" -> "run.jsonl").
std::string without_compression_extension(const std::string& path);

// For tests: dlopen `name` instead of the library above for either kind (nullptr or "": the
// usual ones). A name that does not exist makes a machine without the library. Set before a log
// starts; the libraries already loaded stay loaded.
void set_compression_library(const char* name);

class Compressor {
 public:
  // The stream of a kind (not kNone), its library loaded on first use (then kept for the
  // process's life). nullptr and *error ("zstd needs libzstd.so.1 (REASON)") when the library
  // cannot be loaded, is too old or the stream cannot be made. level: 0 for the log's (zstd 1,
  // gzip 6); another for benchmarks (bench/log_compress.cpp).
  static std::unique_ptr<Compressor> create(Compression kind, std::string* error, int level = 0);
  virtual ~Compressor() = default;
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  Compression kind() const { return kind_; }

  // Whole lines into the stream (a new frame or member begins when none is open). The bytes the
  // stream gives now are appended to out: maybe none, maybe a part of the next sync point's. False
  // when the library fails (out of memory): the stream is then unusable.
  bool add(std::string_view lines, std::string& out);
  // A sync point: after it, the bytes handed out decode to every line added (zstd: they end a
  // frame; gzip: a decoder given no more bytes waits for more). Nothing when nothing was added
  // since the last one.
  bool sync(std::string& out);
  // A sync point, then the frame or member closed (nothing when none is open): the bytes handed
  // out are a complete file. The next add() begins a new one.
  bool end(std::string& out);
  // The bytes handed out up to the last sync point (or end()) are in the file (the ones after it,
  // of a chunk not synced yet, are not).
  void commit();
  // The bytes handed out since the last commit() are not in the file (it ends where it did at the
  // last commit). The next add(), sync() or end() first closes the stream the file holds.
  void lost();
  // Whether a frame or member is open in what was handed out.
  bool open() const { return open_; }

  // A decoder given any part of chunk (bytes handed out between two sync points, the file ending
  // at the first one) decodes none of its lines unless it has all of them. zstd: one compressed
  // block (a decoder needs all of a block to decode it). gzip: never (deflate decodes as it goes).
  virtual bool all_or_nothing(std::string_view chunk) const = 0;
  // No-op padding for the place where the last chunk (the bytes of the last sync() or end())
  // begins: at least `room` bytes and fewer than room + 8, that decode to nothing, appended to out
  // (written before that chunk, it moves the chunk to the next page). Returns its size, or 0 when
  // none is possible there (gzip between members: the chunk begins a new one).
  virtual std::size_t padding(std::size_t room, std::string& out) const = 0;
  // The most input one chunk takes, for a file of pages of `page` bytes (0: a FIFO or device).
  virtual std::size_t max_chunk_input(std::size_t page) const = 0;

 protected:
  explicit Compressor(Compression kind) : kind_(kind) {}
  // zstd: every sync point ends the frame (the next lines begin a new one).
  virtual bool frame_per_chunk() const { return false; }
  // The codec: bytes of a new frame or member that the library does not write itself.
  virtual void begin(std::string& out) = 0;
  // Compresses input (flush: then a sync point) appending to out.
  virtual bool compress(std::string_view input, bool flush, std::string& out) = 0;
  // The last bytes of the open frame or member, as the file has it when `as_in_file` (after a
  // loss), else as handed out; then the codec is ready for a new one.
  virtual void close(bool as_in_file, std::string& out) = 0;
  // Forget the state of the frame or member (the codec's own), ready for a new one.
  virtual void reset() = 0;
  // commit() for the codec's own figures (gzip's CRC and length, as of the last sync point).
  virtual void commit_codec() {}
  // Whether a frame or member was open where the last chunk begins: padding may go there.
  bool chunk_starts_open() const { return chunk_start_open_; }

 private:
  // After lost(): closes the frame or member the file holds, if any, and starts afresh.
  void recover(std::string& out);
  void begin_chunk();
  void end_chunk();

  Compression kind_;
  bool open_ = false;              // a frame or member open in what was handed out
  bool unsynced_ = false;          // bytes added since the last sync point
  bool in_chunk_ = false;          // bytes of a chunk handed out (or lines added) since then
  bool synced_open_ = false;       // open_ as of the last sync point
  bool next_chunk_open_ = false;   // open_ where the next chunk will begin
  bool chunk_start_open_ = false;  // open_ where the last chunk began
  bool file_open_ = false;         // a frame or member open in the file (at the last commit)
  bool diverged_ = false;          // lost(): the stream is ahead of the file
};

}  // namespace cudapool::log
