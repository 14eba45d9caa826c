// SPDX-License-Identifier: Apache-2.0
// log/read/decoder.h: a streaming decoder of one compressed format a log may come in (gzip, with
// zlib; zstd, with libzstd): fed the compressed bytes in pieces as they are read, it gives the
// plain bytes in pieces, in bounded memory (gzip: a 32 KiB window; zstd: a window of at most
// 128 MiB, libzstd's default limit, which the zstd program's levels stay within). Several frames
// (gzip members, zstd frames) one after the other are one stream, as zcat and zstdcat read them.
// Not here: reading the file, the messages (input.h), which format a file is (compression.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "log/read/compression.h"

namespace cudapool::log {

class Decoder {
 public:
  struct Step {
    std::size_t consumed = 0;  // bytes of the input taken
    std::size_t produced = 0;  // bytes written to the output
    bool corrupt = false;      // the input is not valid data of the format (what() says why)
  };
  virtual ~Decoder() = default;
  // Decodes from in into [out, out + capacity) (capacity > 0). Progress is made unless the input
  // is empty and nothing is pending; once corrupt, the decoder is not called again.
  virtual Step decode(std::string_view in, char* out, std::size_t capacity) = 0;
  // Whether the bytes taken so far stop inside a frame: at the end of the input, the stream
  // ended early (cut short).
  virtual bool inside_frame() const = 0;
  // Why the last decode() was corrupt: the library's words.
  virtual std::string what() const = 0;
};

// The decoder of a format the readers decode (CompressionFormat::read: gzip, zstd); nullptr for
// any other. Throws std::bad_alloc when the library cannot set one up.
std::unique_ptr<Decoder> make_decoder(Compression format);
std::unique_ptr<Decoder> make_gzip_decoder();  // gzip_decoder.cpp
std::unique_ptr<Decoder> make_zstd_decoder();  // zstd_decoder.cpp

}  // namespace cudapool::log
