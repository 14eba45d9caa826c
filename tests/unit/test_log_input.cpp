// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_input.cpp: the reading side of the log (log/read/): the formats told by
// their first bytes, LogInput reading plain, gzip and zstd files (several frames, small and large
// reads) to the same bytes, a compressed file cut in the middle of a frame (read to the cut,
// ended_early naming the byte), corrupt data (an error naming the byte, after the bytes before
// it), formats refused with what to do, files that cannot be read; the line reader on a
// compressed input; the progress line's text. The compressed inputs are made with zlib and
// libzstd (log_read_test_util.h). Not here: the tools on compressed logs
// (tests/cli/compressed_logs.sh), the Python side (tests/python/).
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "log/read/compression.h"
#include "log/read/input.h"
#include "log/read/line_reader.h"
#include "log/read/progress.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_read_test_util.h"
#include "tests/unit/log_test_util.h"

using namespace cudapool::log;
using logtest::TempDir;
using namespace logtest::compressed;

namespace {

struct Read {
  bool opened = false;
  std::string error;  // of open(), else the input's
  std::string bytes;
  std::string ended_early;
  Compression compression = Compression::kNone;
};

// Reads path through a LogInput with requests of `request` bytes (large ones are filled in place,
// small ones through the get area).
Read read_all(const std::string& path, std::size_t request = std::size_t{1} << 20) {
  Read r;
  LogInput input;
  r.opened = input.open(path, &r.error);
  if (!r.opened) return r;
  r.compression = input.compression();
  std::vector<char> buffer(request);
  std::istream& in = input.stream();
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    r.bytes.append(buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  r.error = input.error();
  r.ended_early = input.ended_early();
  CHECK(input.bytes_decoded() == r.bytes.size());
  return r;
}

}  // namespace

TEST_CASE("log input: a format is told by its first bytes, not its name") {
  CHECK(sniff("\x1f\x8b\x08")->id == Compression::kGzip);
  CHECK(sniff("\x28\xb5\x2f\xfd\x04")->id == Compression::kZstd);
  CHECK(sniff(std::string_view("\xfd"
                               "7zXZ\0\0",
                               7))
            ->id == Compression::kXz);
  CHECK(sniff("BZh91AY")->id == Compression::kBzip2);
  CHECK(sniff("{\"schema\"") == nullptr);
  CHECK(sniff("") == nullptr);
  CHECK(sniff("\x1f") == nullptr);  // shorter than the magic: plain
  CHECK(sniff(std::string_view("\xfd"
                               "7zXZ",
                               5)) == nullptr);
  for (const CompressionFormat& f : compressions()) {
    CHECK(sniff(f.magic) == &f);
    CHECK(f.read == (f.id == Compression::kGzip || f.id == Compression::kZstd));
  }
}

TEST_CASE("log input: plain, gzip and zstd files, with and without a name that says so") {
  TempDir dir;
  const std::string text = sample_log(30000);  // about 5 MiB: many reads, many zstd blocks
  write(dir / "plain", text);
  write(dir / "log.gz", gzip(text));
  write(dir / "gzip-without-extension", gzip(text));
  write(dir / "log.zst", zstd(text));
  write(dir / "zstd-without-extension", zstd(text, 19));
  // Several frames, as zcat and zstdcat read them: a log compressed in pieces.
  write(dir / "members.gz", gzip(text.substr(0, 1000)) + gzip(text.substr(1000)));
  write(dir / "frames.zst", zstd(text.substr(0, 123457)) + zstd(text.substr(123457)));
  const struct {
    const char* name;
    Compression compression;
  } cases[] = {{"plain", Compression::kNone},
               {"log.gz", Compression::kGzip},
               {"gzip-without-extension", Compression::kGzip},
               {"log.zst", Compression::kZstd},
               {"zstd-without-extension", Compression::kZstd},
               {"members.gz", Compression::kGzip},
               {"frames.zst", Compression::kZstd}};
  for (const auto& c : cases) {
    for (const std::size_t request : {std::size_t{1} << 20, std::size_t{100}}) {
      INFO(c.name << ", requests of " << request << " bytes");
      const Read r = read_all(dir / c.name, request);
      REQUIRE(r.opened);
      CHECK(r.compression == c.compression);
      CHECK(r.error.empty());
      CHECK(r.ended_early.empty());
      CHECK(r.bytes == text);
    }
  }
}

TEST_CASE("log input: the line reader takes a compressed input as it takes a plain one") {
  TempDir dir;
  const std::string text = sample_log(20000);
  write(dir / "log.zst", zstd(text));
  LogInput input;
  std::string error;
  REQUIRE(input.open(dir / "log.zst", &error));
  std::uint64_t lines = 0, last = 0;
  std::string joined;
  for_each_line(
      input.stream(),
      [&](std::uint64_t n, std::string_view line) {
        ++lines;
        last = n;
        joined.append(line).append("\n");
      },
      [](std::uint64_t) { FAIL("no line is too long"); });
  CHECK(lines == 20001);
  CHECK(last == 20001);
  CHECK(joined == text);
}

TEST_CASE("log input: a compressed file cut in the middle of a frame is read to the cut") {
  TempDir dir;
  const std::string text = sample_log(20000);
  for (const bool use_zstd : {false, true}) {
    const std::string whole = use_zstd ? zstd(text) : gzip(text);
    const char* format = use_zstd ? "zstd" : "gzip";
    for (const std::size_t cut : {std::size_t{5}, whole.size() / 3, whole.size() - 1}) {
      INFO(format << " cut at byte " << cut << " of " << whole.size());
      write(dir / "cut", whole.substr(0, cut));
      const Read r = read_all(dir / "cut");
      REQUIRE(r.opened);
      CHECK(r.error.empty());
      CHECK(r.bytes.size() <= text.size());                  // (a cut in the trailer: all of it)
      CHECK(text.compare(0, r.bytes.size(), r.bytes) == 0);  // a prefix of the log
      if (cut > whole.size() / 2) CHECK(r.bytes.size() > text.size() / 2);
      CHECK(r.ended_early == dir / "cut" + ": the " + format +
                                 " data ends in the middle of a frame, at byte " +
                                 std::to_string(cut) +
                                 ": the log was cut short (a killed process, a copy in "
                                 "progress); every line before the cut was read");
    }
  }
}

TEST_CASE("log input: corrupt compressed data is an error that gives the byte") {
  TempDir dir;
  const std::string text = sample_log(20000);
  for (const bool use_zstd : {false, true}) {
    const std::string whole = use_zstd ? zstd(text) : gzip(text);
    const std::string prefix =
        dir / "bad: corrupt " + (use_zstd ? "zstd" : "gzip") + " data, found ";
    for (const std::size_t at : {whole.size() / 4, whole.size() / 2, whole.size() - 3}) {
      INFO((use_zstd ? "zstd" : "gzip") << ", byte " << at << " of " << whole.size() << " changed");
      std::string bad = whole;
      bad[at] = static_cast<char>(bad[at] ^ 0x5a);
      write(dir / "bad", bad);
      const Read r = read_all(dir / "bad");
      REQUIRE(r.opened);
      CHECK(r.ended_early.empty());
      REQUIRE(r.error.rfind(prefix, 0) == 0);
      CHECK(r.error.find("): the log cannot be read past it") != std::string::npos);
    }
  }
  // Not a gzip member after the first one: trailing bytes that are not gzip.
  write(dir / "bad", gzip(text) + "trailing text\n");
  const Read r = read_all(dir / "bad");
  CHECK(r.bytes == text);
  CHECK(r.error.rfind(dir / "bad: corrupt gzip data, found at byte ", 0) == 0);
}

TEST_CASE("log input: formats the readers do not decode, and inputs that cannot be read") {
  TempDir dir;
  write(dir / "log.xz", std::string("\xfd"
                                    "7zXZ\0\0\x04\xe6",
                                    8));
  write(dir / "log.bz2", "BZh91AY&SY");
  Read r = read_all(dir / "log.xz");
  CHECK_FALSE(r.opened);
  CHECK(r.error == dir / "log.xz" +
                       " is compressed with xz, which the readers of the log do not decode (they "
                       "read plain, gzip and zstd logs): decompress it first (xzcat " +
                       dir / "log.xz" + " > LOG)");
  r = read_all(dir / "log.bz2");
  CHECK_FALSE(r.opened);
  CHECK(r.error.rfind(dir / "log.bz2 is compressed with bzip2, ", 0) == 0);
  r = read_all(dir / "missing");
  CHECK_FALSE(r.opened);
  CHECK(r.error == "cannot read " + dir / "missing: No such file or directory");
  r = read_all(dir.path);
  CHECK_FALSE(r.opened);
  CHECK(r.error == dir.path + " is a directory, not a log");
  // Short files: empty, a lone byte of a magic, the magic alone (cut short at once).
  write(dir / "empty", "");
  r = read_all(dir / "empty");
  CHECK((r.opened && r.bytes.empty() && r.error.empty() && r.ended_early.empty()));
  write(dir / "one", "\x1f");
  r = read_all(dir / "one");
  CHECK((r.opened && r.bytes == "\x1f" && r.compression == Compression::kNone));
  write(dir / "magic", "\x28\xb5\x2f\xfd");
  r = read_all(dir / "magic");
  CHECK((r.opened && r.bytes.empty() && r.error.empty()));
  CHECK(r.ended_early.find("ends in the middle of a frame, at byte 4") != std::string::npos);
  // The name messages give, when the caller has its own.
  LogInput named;
  InputOptions options;
  options.name = "run.jsonl";
  std::string error;
  CHECK_FALSE(named.open(dir / "missing", &error, options));
  CHECK(error == "cannot read run.jsonl: No such file or directory");
  // The same words from check(), which opens nothing.
  bool regular = true;
  CHECK_FALSE(LogInput::check(dir / "missing", &regular, &error, "run.jsonl"));
  CHECK(error == "cannot read run.jsonl: No such file or directory");
  CHECK_FALSE(LogInput::check(dir.path, &regular, &error));
  CHECK(error == dir.path + " is a directory, not a log");
  CHECK(LogInput::check(dir / "empty", &regular, &error));
  CHECK(regular);
  CHECK(LogInput::check("-", &regular, &error));
  CHECK_FALSE(regular);
}

TEST_CASE("log input: the progress line's text") {
  // The same figures give the same text in scripts/cudapool_analysis/progress.py
  // (tests/python/test_progress.py).
  ProgressFigures f;
  f.name = "run.jsonl.zst";
  f.read = 32715571;
  f.total = 88604672;
  f.decoded = 327680000;
  f.compressed = true;
  f.events = 1730000;
  CHECK(progress_text(f, 0.8439) ==
        "run.jsonl.zst: 36% (31.2 MiB of 84.5 MiB; 312.5 MiB decoded), 1.73 M events, "
        "2.05 M events/s, 0:01 left");
  f.compressed = false;
  f.total = 0;
  f.name = "<stdin>";
  f.read = 1000;
  f.events = 12;
  CHECK(progress_text(f, 0) == "<stdin>: 1000 B, 12 events");
  f.compressed = true;
  f.decoded = 5u << 20;
  f.events = 12345;
  CHECK(progress_text(f, 2) == "<stdin>: 1000 B (5.0 MiB decoded), 12.3 k events, 6.2 k events/s");
  f.name = "a\x1b[2Jb";  // a name cannot act on the terminal
  f.total = 4000;
  f.compressed = false;
  f.events = 4200000000;
  CHECK(progress_text(f, 3600) ==
        "a\\x1b[2Jb: 25% (1000 B of 3.9 KiB), 4.20 G events, 1.17 M events/s, 3:00:00 left");
}
