// SPDX-License-Identifier: Apache-2.0
// log/compression_gzip.cpp: the gzip codec of compression.h, through libz.so.1 loaded with dlopen:
// raw deflate (level 6, gzip's own default) inside a gzip member whose header and trailer this
// file writes itself, so that the trailer's CRC-32 and length can be the ones of what the file
// holds (after a loss too). A sync point is Z_SYNC_FLUSH (the deflate stream byte-aligned, every
// byte added decodable); the member's end is an empty final block and the trailer. Deflate decodes
// as it goes, so no chunk is all or nothing: the logger keeps each one within a page (at most a
// page less 256 bytes of input) and pads to the next page with empty stored blocks (5 bytes each,
// valid inside a member). Not here: the stream's states (compression.cpp), where chunks go
// (logger_compressed.cpp).
#include <zlib.h>

#include "log/compression_codecs.h"

namespace cudapool::log::detail {

namespace {

constexpr int kLevel = 6;
constexpr std::size_t kMaxStreamChunk = std::size_t{64} << 10;  // a FIFO or device: no pages
constexpr std::size_t kPageSlack = 256;  // a member's header and end, the flush's bytes, ...
constexpr std::size_t kScratch = std::size_t{64} << 10;
// A member's header: ID1 ID2, CM deflate, no flags, no time, no extra flags, OS Unix.
constexpr char kHeader[10] = {0x1f, static_cast<char>(0x8b), 8, 0, 0, 0, 0, 0, 0, 3};
// An empty final block (BFINAL 1, fixed codes, end of block): 10 bits, byte-aligned after a sync.
constexpr char kFinalBlock[2] = {3, 0};
// An empty stored block, not the last: BFINAL 0, BTYPE 00, LEN 0, NLEN 0xffff.
constexpr char kEmptyStored[5] = {0, 0, 0, static_cast<char>(0xff), static_cast<char>(0xff)};

struct ZlibApi {
  decltype(&zlibVersion) version = nullptr;
  decltype(&deflateInit2_) init = nullptr;
  decltype(&::deflate) compress = nullptr;
  decltype(&deflateReset) reset = nullptr;
  decltype(&deflateEnd) end = nullptr;
  decltype(&crc32) crc = nullptr;

  bool load(std::string* error) {
    void* h = load_compression_library(Compression::kGzip, error);
    return h != nullptr && resolve(h, "zlibVersion", version, error) &&
           resolve(h, "deflateInit2_", init, error) && resolve(h, "deflate", compress, error) &&
           resolve(h, "deflateReset", reset, error) && resolve(h, "deflateEnd", end, error) &&
           resolve(h, "crc32", crc, error);
  }
};

void append_le32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A member's CRC-32 and length (mod 2^32, as the trailer has it).
struct Figures {
  std::uint32_t crc = 0, length = 0;
};

class GzipCompressor final : public Compressor {
 public:
  GzipCompressor(const ZlibApi& api, int level)
      : Compressor(Compression::kGzip), api_(api), level_(level), scratch_(kScratch, '\0') {}
  ~GzipCompressor() override { api_.end(&z_); }

  bool init(std::string* error) {
    z_ = z_stream{};
    const int rc = api_.init(&z_, level_, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY,
                             ZLIB_VERSION, static_cast<int>(sizeof(z_stream)));
    if (rc != Z_OK) *error = std::string("deflateInit2 failed (") + std::to_string(rc) + ")";
    return rc == Z_OK;
  }

  bool all_or_nothing(std::string_view) const override { return false; }

  std::size_t padding(std::size_t room, std::string& out) const override {
    if (!chunk_starts_open()) return 0;
    std::size_t n = (room + sizeof kEmptyStored - 1) / sizeof kEmptyStored;
    if (n == 0) n = 1;
    for (std::size_t i = 0; i < n; ++i) out.append(kEmptyStored, sizeof kEmptyStored);
    return n * sizeof kEmptyStored;
  }

  std::size_t max_chunk_input(std::size_t page) const override {
    return page > 2 * kPageSlack ? page - kPageSlack : kMaxStreamChunk;
  }

 protected:
  void begin(std::string& out) override { out.append(kHeader, sizeof kHeader); }

  bool compress(std::string_view input, bool flush, std::string& out) override {
    if (!input.empty()) {
      now_.crc = static_cast<std::uint32_t>(api_.crc(
          now_.crc, reinterpret_cast<const Bytef*>(input.data()), static_cast<uInt>(input.size())));
      now_.length += static_cast<std::uint32_t>(input.size());
    }
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
    z_.avail_in = static_cast<uInt>(input.size());
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(scratch_.data());
      z_.avail_out = static_cast<uInt>(scratch_.size());
      const int rc = api_.compress(&z_, flush ? Z_SYNC_FLUSH : Z_NO_FLUSH);
      out.append(scratch_.data(), scratch_.size() - z_.avail_out);
      if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
      if (z_.avail_out != 0 && z_.avail_in == 0) break;
    }
    if (flush) synced_ = now_;
    return true;
  }

  void close(bool as_in_file, std::string& out) override {
    const Figures f = as_in_file ? in_file_ : now_;
    out.append(kFinalBlock, sizeof kFinalBlock);
    append_le32(out, f.crc);
    append_le32(out, f.length);
    reset();
  }

  void reset() override {
    api_.reset(&z_);
    now_ = synced_ = Figures{};
  }

  void commit_codec() override { in_file_ = synced_; }

 private:
  const ZlibApi api_;
  const int level_;
  z_stream z_{};
  std::string scratch_;
  Figures now_, synced_, in_file_;  // of the open member: all added, at the last sync, in the file
};

}  // namespace

std::unique_ptr<Compressor> make_gzip(int level, std::string* error) {
  ZlibApi api;
  if (!api.load(error)) return nullptr;
  const char* version = api.version();
  if (version == nullptr || version[0] != ZLIB_VERSION[0]) {
    *error = std::string("version ") + (version != nullptr ? version : "?") + ", not " +
             std::string(1, ZLIB_VERSION[0]) + ".x";
    return nullptr;
  }
  auto made = std::make_unique<GzipCompressor>(api, level != 0 ? level : kLevel);
  if (!made->init(error)) return nullptr;
  return made;
}

}  // namespace cudapool::log::detail
