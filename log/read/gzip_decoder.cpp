// SPDX-License-Identifier: Apache-2.0
// log/read/gzip_decoder.cpp: the gzip decoder of decoder.h, on zlib's inflate (gzip headers only:
// windowBits 15 + 16). After a member's end another must follow (a header check otherwise fails:
// corrupt), as zcat reads concatenated members. Not here: zstd (zstd_decoder.cpp).
#include <zlib.h>

#include <new>

#include "log/read/decoder.h"

namespace cudapool::log {

namespace {

class GzipDecoder final : public Decoder {
 public:
  GzipDecoder() {
    if (inflateInit2(&z_, 15 + 16) != Z_OK) throw std::bad_alloc();
  }
  ~GzipDecoder() override { inflateEnd(&z_); }
  GzipDecoder(const GzipDecoder&) = delete;
  GzipDecoder& operator=(const GzipDecoder&) = delete;

  Step decode(std::string_view in, char* out, std::size_t capacity) override {
    Step step;
    if (member_done_) {
      if (in.empty()) return step;
      inflateReset(&z_);  // the next member's header is checked by inflate
      member_done_ = false;
    }
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(capacity);
    const int rc = inflate(&z_, Z_NO_FLUSH);
    step.consumed = in.size() - z_.avail_in;
    step.produced = capacity - z_.avail_out;
    if (step.consumed != 0 || step.produced != 0) inside_ = true;
    switch (rc) {
      case Z_OK:
      case Z_BUF_ERROR:  // no progress possible now: more input is needed
        break;
      case Z_STREAM_END:
        member_done_ = true;
        inside_ = false;
        break;
      default:  // Z_DATA_ERROR, Z_NEED_DICT, Z_MEM_ERROR, Z_STREAM_ERROR
        step.corrupt = true;
        what_ = z_.msg != nullptr ? z_.msg : rc == Z_MEM_ERROR ? "out of memory" : zError(rc);
        break;
    }
    return step;
  }

  bool inside_frame() const override { return inside_; }
  std::string what() const override { return what_; }

 private:
  z_stream z_{};
  bool member_done_ = false;
  bool inside_ = false;
  std::string what_;
};

}  // namespace

std::unique_ptr<Decoder> make_gzip_decoder() {
  return std::make_unique<GzipDecoder>();
}

}  // namespace cudapool::log
