// SPDX-License-Identifier: Apache-2.0
// log/compression_codecs.h: what compression.cpp and the two codecs (compression_zstd.cpp,
// compression_gzip.cpp) share, and nothing else includes: the library loader and the codecs'
// factories. Not a public interface of log/.
#pragma once

#include <dlfcn.h>

#include <memory>
#include <string>

#include "log/compression.h"

namespace cudapool::log::detail {

// dlopen of the kind's library (or of set_compression_library's name): the handle, never closed,
// or nullptr and *error (dlerror's text).
void* load_compression_library(Compression kind, std::string* error);

// Resolves name in handle into fn; false (and *error) when the library lacks it.
template <class F>
bool resolve(void* handle, const char* name, F& fn, std::string* error) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (fn == nullptr) *error = std::string("no ") + name + " in it";
  return fn != nullptr;
}

// The codecs (level 0: the log's): nullptr and *error when the library cannot be loaded or used.
std::unique_ptr<Compressor> make_zstd(int level, std::string* error);
std::unique_ptr<Compressor> make_gzip(int level, std::string* error);

}  // namespace cudapool::log::detail
