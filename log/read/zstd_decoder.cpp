// SPDX-License-Identifier: Apache-2.0
// log/read/zstd_decoder.cpp: the zstd decoder of decoder.h, on libzstd's streaming decompression
// (ZSTD_decompressStream), with libzstd's default window limit (128 MiB: memory stays bounded;
// a frame that needs more, written with zstd --long=28 or above, is refused as corrupt would be,
// with libzstd's reason). Frames follow one another, skippable frames are skipped, as zstdcat
// does. Not here: gzip (gzip_decoder.cpp).
#include <zstd.h>
#include <zstd_errors.h>

#include <new>

#include "log/read/decoder.h"

namespace cudapool::log {

namespace {

class ZstdDecoder final : public Decoder {
 public:
  ZstdDecoder() : d_(ZSTD_createDStream()) {
    if (d_ == nullptr) throw std::bad_alloc();
  }
  ~ZstdDecoder() override { ZSTD_freeDStream(d_); }
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;

  Step decode(std::string_view in, char* out, std::size_t capacity) override {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    ZSTD_outBuffer output{out, capacity, 0};
    const std::size_t rc = ZSTD_decompressStream(d_, &output, &input);
    Step step;
    step.consumed = input.pos;
    step.produced = output.pos;
    if (ZSTD_isError(rc)) {
      step.corrupt = true;
      what_ = ZSTD_getErrorName(rc);
      if (ZSTD_getErrorCode(rc) == ZSTD_error_frameParameter_windowTooLarge) {
        what_ += ": a window over 128 MiB (zstd --long=28 or above)";
      }
    } else if (step.consumed != 0 || step.produced != 0) {
      inside_ = rc != 0;  // 0: a frame decoded and flushed whole
    }
    return step;
  }

  bool inside_frame() const override { return inside_; }
  std::string what() const override { return what_; }

 private:
  ZSTD_DStream* d_;
  bool inside_ = false;
  std::string what_;
};

}  // namespace

std::unique_ptr<Decoder> make_zstd_decoder() {
  return std::make_unique<ZstdDecoder>();
}

}  // namespace cudapool::log
