// SPDX-License-Identifier: Apache-2.0
// log/compression.cpp: see compression.h. The names, the library loading and the stream's states
// (a frame or member open or not, in what was handed out and in the file). Not here: the codecs
// (compression_zstd.cpp, compression_gzip.cpp).
#include "log/compression.h"

#include <dlfcn.h>

#include <mutex>

#include "log/compression_codecs.h"

namespace cudapool::log {

namespace {

std::mutex g_library_mutex;
std::string g_library_override;

bool ends_with(std::string_view s, std::string_view end) {
  return s.size() > end.size() && s.substr(s.size() - end.size()) == end;
}

}  // namespace

Compression compression_of(std::string_view path) {
  if (ends_with(path, ".zst") && path[path.size() - 5] != '/') return Compression::kZstd;
  if (ends_with(path, ".gz") && path[path.size() - 4] != '/') return Compression::kGzip;
  return Compression::kNone;
}

const char* compression_name(Compression kind) {
  switch (kind) {
    case Compression::kZstd:
      return "zstd";
    case Compression::kGzip:
      return "gzip";
    default:  // plain, and the formats only read (compressions.def)
      break;
  }
  return "plain";
}

const char* compression_library(Compression kind) {
  switch (kind) {
    case Compression::kZstd:
      return "libzstd.so.1";
    case Compression::kGzip:
      return "libz.so.1";
    default:  // plain, and the formats only read (compressions.def)
      break;
  }
  return "";
}

std::string without_compression_extension(const std::string& path) {
  switch (compression_of(path)) {
    case Compression::kZstd:
      return path.substr(0, path.size() - 4);
    case Compression::kGzip:
      return path.substr(0, path.size() - 3);
    default:  // plain, and the formats only read (compressions.def)
      break;
  }
  return path;
}

void set_compression_library(const char* name) {
  std::lock_guard<std::mutex> lock(g_library_mutex);
  g_library_override = name != nullptr ? name : "";
}

namespace detail {

void* load_compression_library(Compression kind, std::string* error) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(g_library_mutex);
    name = g_library_override.empty() ? compression_library(kind) : g_library_override;
  }
  dlerror();
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : name + ": cannot be loaded";
  }
  return handle;
}

}  // namespace detail

std::unique_ptr<Compressor> Compressor::create(Compression kind, std::string* error, int level) {
  std::string why;
  std::unique_ptr<Compressor> made;
  try {
    if (kind == Compression::kZstd) made = detail::make_zstd(level, &why);
    if (kind == Compression::kGzip) made = detail::make_gzip(level, &why);
  } catch (const std::bad_alloc&) {
    why = "out of memory";
  }
  if (made == nullptr && error != nullptr) {
    *error = std::string(compression_name(kind)) + " needs " + compression_library(kind) + " (" +
             (why.empty() ? "not a compression" : why) + ")";
  }
  return made;
}

// A chunk's first bytes: where it begins, a frame or member is open or not (padding goes there).
void Compressor::begin_chunk() {
  if (in_chunk_) return;
  in_chunk_ = true;
  chunk_start_open_ = next_chunk_open_;
}

// A sync point: the chunk ends; the next begins in the state the stream is in now.
void Compressor::end_chunk() {
  in_chunk_ = false;
  synced_open_ = open_;
  next_chunk_open_ = open_;
}

bool Compressor::add(std::string_view lines, std::string& out) {
  recover(out);
  begin_chunk();
  if (!open_) {
    begin(out);
    open_ = true;
    unsynced_ = true;  // the frame's or member's first bytes: a sync point makes them count
  }
  if (lines.empty()) return true;
  unsynced_ = true;
  return compress(lines, /*flush=*/false, out);
}

bool Compressor::sync(std::string& out) {
  recover(out);
  if (!unsynced_) {
    if (in_chunk_) end_chunk();  // recover()'s bytes alone
    return true;
  }
  unsynced_ = false;
  const bool ok = compress({}, /*flush=*/true, out);
  if (frame_per_chunk()) open_ = false;
  end_chunk();
  return ok;
}

bool Compressor::end(std::string& out) {
  recover(out);
  if (open_) {
    begin_chunk();
    if (unsynced_) {
      unsynced_ = false;
      if (!compress({}, /*flush=*/true, out)) return false;
      if (frame_per_chunk()) open_ = false;
    }
    if (open_) close(/*as_in_file=*/false, out);
    open_ = false;
  }
  if (in_chunk_) end_chunk();
  return true;
}

void Compressor::commit() {
  if (diverged_) return;  // lost() since: the file has none of it
  file_open_ = synced_open_;
  commit_codec();
}

void Compressor::lost() {
  diverged_ = true;
}

void Compressor::recover(std::string& out) {
  if (!diverged_) return;
  diverged_ = false;
  // What follows goes where the file ends: a chunk beginning in the file's state.
  in_chunk_ = false;
  next_chunk_open_ = file_open_;
  begin_chunk();
  if (file_open_) {
    close(/*as_in_file=*/true, out);
  } else {
    reset();
  }
  open_ = false;
  unsynced_ = false;
  synced_open_ = false;
}

}  // namespace cudapool::log
