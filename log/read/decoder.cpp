// SPDX-License-Identifier: Apache-2.0
// log/read/decoder.cpp: make_decoder() (decoder.h), the one place that maps a format to its
// decoder. Not here: the decoders (gzip_decoder.cpp, zstd_decoder.cpp).
#include "log/read/decoder.h"

namespace cudapool::log {

std::unique_ptr<Decoder> make_decoder(Compression format) {
  switch (format) {
    case Compression::kGzip:
      return make_gzip_decoder();
    case Compression::kZstd:
      return make_zstd_decoder();
    default:
      return nullptr;
  }
}

}  // namespace cudapool::log
