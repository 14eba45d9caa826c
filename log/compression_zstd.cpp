// SPDX-License-Identifier: Apache-2.0
// log/compression_zstd.cpp: the zstd codec of compression.h, through libzstd.so.1 loaded with
// dlopen (its stable streaming API, 1.4.0 or later). Level 1 (docs/benchmarks.md, "Compressed
// logs"), no checksum. Each chunk (the lines between two sync points, less than a block, 128 KiB,
// of input) is a frame of its own, ended with ZSTD_e_end: one compressed block, all or nothing for
// a decoder (its entropy tables and bit streams need all of it), and the zstd program decodes a
// file cut after any frame to its last whole frame. After a loss inside an open frame, its end is
// one empty last block that this file writes itself. Padding: a skippable frame between frames,
// empty raw blocks (3 zero bytes each) inside one. Not here: the stream's states (compression.cpp),
// where chunks go (logger_compressed.cpp).
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "log/compression_codecs.h"
#include "log/format.h"

namespace cudapool::log::detail {

namespace {

constexpr int kLevel = 1;
// Below the format's largest block (128 KiB), less the longest event line: a chunk is one frame of
// one block.
constexpr std::size_t kMaxChunkInput = (std::size_t{128} << 10) - kMaxEventLine;
constexpr unsigned kOldestVersion = 10400;  // ZSTD_compressStream2, ZSTD_CCtx_setParameter
constexpr std::size_t kBlockHeader = 3;
constexpr unsigned char kMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
// The last block of a frame, empty: Last_Block 1, Raw_Block, Block_Size 0.
constexpr char kFrameEnd[3] = {1, 0, 0};
// A skippable frame's magic number (0x184D2A50, little-endian) and its header (magic and size).
constexpr unsigned char kSkippableMagic[4] = {0x50, 0x2a, 0x4d, 0x18};
constexpr std::size_t kSkippableHeader = 8;

struct ZstdApi {
  decltype(&ZSTD_versionNumber) version = nullptr;
  decltype(&ZSTD_createCCtx) create = nullptr;
  decltype(&ZSTD_freeCCtx) free = nullptr;
  decltype(&ZSTD_CCtx_setParameter) set = nullptr;
  decltype(&ZSTD_CCtx_reset) reset = nullptr;
  decltype(&ZSTD_compressStream2) compress = nullptr;
  decltype(&ZSTD_isError) is_error = nullptr;
  decltype(&ZSTD_getErrorName) error_name = nullptr;
  decltype(&ZSTD_CStreamOutSize) out_size = nullptr;

  bool load(std::string* error) {
    void* h = load_compression_library(Compression::kZstd, error);
    return h != nullptr && resolve(h, "ZSTD_versionNumber", version, error) &&
           resolve(h, "ZSTD_createCCtx", create, error) &&
           resolve(h, "ZSTD_freeCCtx", free, error) &&
           resolve(h, "ZSTD_CCtx_setParameter", set, error) &&
           resolve(h, "ZSTD_CCtx_reset", reset, error) &&
           resolve(h, "ZSTD_compressStream2", compress, error) &&
           resolve(h, "ZSTD_isError", is_error, error) &&
           resolve(h, "ZSTD_getErrorName", error_name, error) &&
           resolve(h, "ZSTD_CStreamOutSize", out_size, error);
  }
};

std::uint32_t le24(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return u[0] | (std::uint32_t{u[1]} << 8) | (std::uint32_t{u[2]} << 16);
}

// The size of the frame header at p (magic number included), or 0 when p is not one.
std::size_t frame_header_size(const char* p, std::size_t n) {
  if (n < 5 || std::memcmp(p, kMagic, 4) != 0) return 0;
  const auto descriptor = static_cast<unsigned char>(p[4]);
  const unsigned content_size_flag = descriptor >> 6;
  const bool single_segment = (descriptor >> 5) & 1;
  constexpr std::size_t kDictionaryId[4] = {0, 1, 2, 4};
  std::size_t size = 5 + (single_segment ? 0 : 1) + kDictionaryId[descriptor & 3];
  size += content_size_flag == 0 ? (single_segment ? 1 : 0) : std::size_t{1} << content_size_flag;
  return size;
}

class ZstdCompressor final : public Compressor {
 public:
  ZstdCompressor(const ZstdApi& api, ZSTD_CCtx* cctx)
      : Compressor(Compression::kZstd), api_(api), cctx_(cctx), scratch_(api.out_size(), '\0') {}
  ~ZstdCompressor() override { api_.free(cctx_); }

  bool all_or_nothing(std::string_view chunk) const override {
    // Frames' ends, frame headers and empty blocks carry no line; at most one block may, and it
    // must be a compressed one.
    int carriers = 0;
    std::size_t at = 0;
    while (at < chunk.size()) {
      if (const std::size_t header = frame_header_size(chunk.data() + at, chunk.size() - at)) {
        at += header;
        continue;
      }
      if (chunk.size() - at < kBlockHeader) return false;
      const std::uint32_t block = le24(chunk.data() + at);
      const unsigned type = (block >> 1) & 3;
      const std::size_t size = block >> 3;
      const std::size_t content = type == 1 ? 1 : size;  // an RLE block holds its one byte
      if (size != 0) {
        if (type != 2 || ++carriers > 1) return false;
      }
      at += kBlockHeader + content;
    }
    return at == chunk.size();
  }

  std::size_t padding(std::size_t room, std::string& out) const override {
    if (!chunk_starts_open()) {  // between frames: a skippable frame (decoders pass over it)
      const std::size_t n = std::max(room, kSkippableHeader);
      const auto content = static_cast<std::uint32_t>(n - kSkippableHeader);
      out.append(reinterpret_cast<const char*>(kSkippableMagic), sizeof kSkippableMagic);
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((content >> (8 * i)) & 0xff));
      out.append(content, '\0');
      return n;
    }
    std::size_t n = (room + kBlockHeader - 1) / kBlockHeader * kBlockHeader;
    if (n == 0) n = kBlockHeader;
    out.append(n, '\0');  // empty raw blocks, none the last
    return n;
  }

  std::size_t max_chunk_input(std::size_t) const override { return kMaxChunkInput; }

 protected:
  // Each sync point ends the frame: the zstd program, given a file cut after one, decodes every
  // frame before the cut to its end (inside an open frame it may stop short of the last block).
  bool frame_per_chunk() const override { return true; }
  void begin(std::string&) override {}  // the library writes the frame header

  bool compress(std::string_view input, bool flush, std::string& out) override {
    ZSTD_inBuffer in{input.data(), input.size(), 0};
    for (;;) {
      ZSTD_outBuffer o{scratch_.data(), scratch_.size(), 0};
      const std::size_t left = api_.compress(cctx_, &o, &in, flush ? ZSTD_e_end : ZSTD_e_continue);
      out.append(scratch_.data(), o.pos);
      if (api_.is_error(left)) return false;
      if (flush ? left == 0 : in.pos == in.size) return true;
    }
  }

  void close(bool, std::string& out) override {
    out.append(kFrameEnd, sizeof kFrameEnd);
    reset();
  }

  void reset() override { api_.reset(cctx_, ZSTD_reset_session_only); }

 private:
  const ZstdApi api_;
  ZSTD_CCtx* const cctx_;
  std::string scratch_;
};

}  // namespace

std::unique_ptr<Compressor> make_zstd(int level, std::string* error) {
  ZstdApi api;
  if (!api.load(error)) return nullptr;
  if (api.version() < kOldestVersion) {
    *error = "version " + std::to_string(api.version()) + ", older than 1.4.0";
    return nullptr;
  }
  ZSTD_CCtx* cctx = api.create();
  if (cctx == nullptr) {
    *error = "ZSTD_createCCtx failed";
    return nullptr;
  }
  const std::size_t leveled = api.set(cctx, ZSTD_c_compressionLevel, level != 0 ? level : kLevel);
  const std::size_t checksum = api.set(cctx, ZSTD_c_checksumFlag, 0);
  if (api.is_error(leveled) || api.is_error(checksum)) {
    *error = api.error_name(api.is_error(leveled) ? leveled : checksum);
    api.free(cctx);
    return nullptr;
  }
  try {
    return std::make_unique<ZstdCompressor>(api, cctx);
  } catch (...) {
    api.free(cctx);
    throw;
  }
}

}  // namespace cudapool::log::detail
