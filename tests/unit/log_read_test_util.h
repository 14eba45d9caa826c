// SPDX-License-Identifier: Apache-2.0
// tests/unit/log_read_test_util.h: what the tests of the reading side (log/read/) share: a log of
// lines like the shim's, compressed here with zlib and libzstd as the gzip and zstd programs
// write them, written to a file. Not a test itself, and nothing here checks the code under test.
#pragma once

#include <zlib.h>
#include <zstd.h>

#include <cstddef>
#include <fstream>
#include <string>

#include "tests/unit/catch.h"

namespace logtest::compressed {

// Lines like the shim's, about 180 bytes each, numbered so that no two are alike.
inline std::string sample_log(std::size_t lines) {
  std::string text = R"({"schema":"cudapool.log/1","version":"0.1.0"})"
                     "\n";
  for (std::size_t i = 0; i < lines; ++i) {
    text += R"({"seq":)" + std::to_string(i) + R"(,"t_ns":)" + std::to_string(i * 977) +
            R"(,"tid":7,"dev":0,"action":"alloc","ptr":"0x7f00)" + std::to_string(i % 9973) +
            R"(","size":)" + std::to_string((i * 7919) % 1048576) +
            R"(,"block_size":1048576,"segment":"0x7f000000","stream":"0x0"})"
            "\n";
  }
  return text;
}

inline std::string gzip(const std::string& text) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// With a checksum, as the zstd program writes it.
inline std::string zstd(const std::string& text, int level = 3) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  REQUIRE(c != nullptr);
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), text.data(), text.size());
  ZSTD_freeCCtx(c);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

inline void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace logtest::compressed
