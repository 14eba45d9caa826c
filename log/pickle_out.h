// SPDX-License-Identifier: Apache-2.0
// log/pickle_out.h: a small writer of Python pickles (protocol 2), for the memory_viz snapshot the
// shim writes at an out-of-memory (CUDAPOOL_OOM_SNAPSHOT, shim/reports/oom_snapshot.h): plain
// dicts, lists, 2-tuples, str, int, float, bool and None, the values of PyTorch's
// torch.cuda.memory._snapshot(), which Python's pickle.load and memory_viz's own pickle reader
// (protocols 2 to 4) take. Opcodes: PROTO, EMPTY_DICT/SETITEMS, EMPTY_LIST/APPENDS, MARK/TUPLE,
// BINUNICODE, BININT1/BININT2/BININT/LONG1, BINFLOAT, NONE, NEWTRUE/NEWFALSE, STOP; no memo (every
// object is written once), no classes, no framing. Strings that are not valid UTF-8 have each bad
// byte replaced with U+FFFD (pickle would refuse them). Builds in memory; prints and throws
// nothing. Not here: what the snapshot holds (shim/reports/oom_snapshot_pickle.h), the file
// (whole_file.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cudapool::log {

class PickleOut {
 public:
  PickleOut();  // the PROTO 2 header

  void none();
  void boolean(bool value);
  void integer(std::int64_t value);
  void unsigned_integer(std::uint64_t value);
  void real(double value);
  void text(std::string_view utf8);

  // A list or dict: begin_*, the items (a dict's as key, value, key, value ...), end_*. A tuple:
  // begin_tuple, its items, end_tuple.
  void begin_list();
  void end_list();
  void begin_dict();
  void end_dict();
  void begin_tuple();
  void end_tuple();

  // A dict's key (a str), for key(...) then the value.
  void key(std::string_view name) { text(name); }

  // The pickle, STOP added; the writer is empty afterwards. Call once, with every list, dict and
  // tuple ended.
  std::string finish();

  std::size_t size() const { return out_.size(); }

 private:
  void byte(unsigned char b) { out_.push_back(static_cast<char>(b)); }
  void little_endian(std::uint64_t value, int bytes);

  std::string out_;
};

// text as valid UTF-8: each byte that does not begin or continue a well-formed sequence (overlong
// forms and surrogates included) replaced with U+FFFD.
std::string valid_utf8(std::string_view text);

}  // namespace cudapool::log
