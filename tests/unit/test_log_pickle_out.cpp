// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_pickle_out.cpp: the pickle writer (log/pickle_out.h) round-tripped through
// Python's own pickle: every kind of value (None, bools, ints at each opcode's edges and past 64
// bits, floats, str with non-ASCII and bad UTF-8, nested lists, dicts and a 2-tuple) loads as the
// equal Python object, with only protocol-2 opcodes the memory_viz reader knows; and
// valid_utf8's replacements. Needs python3 (skipped without it). Not here: the snapshot built with
// it (tests/fakecuda/oom_snapshot.sh).
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "log/pickle_out.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_test_util.h"

using cudapool::log::PickleOut;
using cudapool::log::valid_utf8;
using logtest::TempDir;

namespace {

bool have_python() {
  return std::system("python3 -c pass >/dev/null 2>&1") == 0;
}

// Python's repr() of the pickle's object (pickle.loads), or "ERROR..." when it does not load; the
// opcodes used must be those of protocol 2 that MemoryViz.js reads.
std::string loaded(const std::string& data) {
  TempDir dir;
  const std::string path = dir / "x.pickle";
  std::ofstream(path, std::ios::binary) << data;
  const std::string cmd =
      "python3 -c 'import pickle, pickletools, sys\n"
      "d = open(sys.argv[1], \"rb\").read()\n"
      "ops = {o.name for o, _, _ in pickletools.genops(d)}\n"
      "allowed = {\"PROTO\", \"STOP\", \"MARK\", \"EMPTY_DICT\", \"SETITEMS\", \"EMPTY_LIST\",\n"
      "  \"APPENDS\", \"TUPLE\", \"BINUNICODE\", \"BININT\", \"BININT1\", \"BININT2\", \"LONG1\",\n"
      "  \"BINFLOAT\", \"NONE\", \"NEWTRUE\", \"NEWFALSE\"}\n"
      "assert d[:2] == b\"\\x80\\x02\" and ops <= allowed, (d[:2], ops - allowed)\n"
      "print(repr(pickle.loads(d)), end=\"\")' '" +
      path + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "ERROR " + out;
}

}  // namespace

TEST_CASE("pickle_out: scalars load as the same Python values", "[log][pickle]") {
  if (!have_python()) return;  // no python3
  PickleOut w;
  w.begin_list();
  w.none();
  w.boolean(true);
  w.boolean(false);
  for (std::int64_t v :
       {std::int64_t{0}, std::int64_t{255}, std::int64_t{256}, std::int64_t{65535},
        std::int64_t{65536}, std::int64_t{-1}, std::int64_t{INT32_MAX}, std::int64_t{INT32_MIN},
        std::int64_t{INT32_MAX} + 1, std::int64_t{INT32_MIN} - 1, std::int64_t{1} << 40,
        -(std::int64_t{1} << 40), INT64_MAX, INT64_MIN}) {
    w.integer(v);
  }
  w.unsigned_integer(UINT64_MAX);
  w.unsigned_integer(std::uint64_t{1} << 63);
  w.unsigned_integer(140737488355328ull);  // a device address above 2^47
  w.real(0.8);
  w.real(-1.5e300);
  w.end_list();
  CHECK(loaded(w.finish()) ==
        "[None, True, False, 0, 255, 256, 65535, 65536, -1, 2147483647, -2147483648, 2147483648, "
        "-2147483649, 1099511627776, -1099511627776, 9223372036854775807, -9223372036854775808, "
        "18446744073709551615, 9223372036854775808, 140737488355328, 0.8, -1.5e+300]");
}

TEST_CASE("pickle_out: strings, bad UTF-8 replaced", "[log][pickle]") {
  if (!have_python()) return;  // no python3
  PickleOut w;
  w.begin_list();
  w.text("");
  w.text("plain");
  w.text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // é € 😀
  w.text("bad \xff end");
  w.text("cut \xe2\x82");
  w.text(std::string("nul \0 in", 8));
  w.end_list();
  CHECK(loaded(w.finish()) ==
        "['', 'plain', 'caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80', 'bad \xef\xbf\xbd end', "
        "'cut \xef\xbf\xbd\xef\xbf\xbd', 'nul \\x00 in']");
}

TEST_CASE("pickle_out: nested dicts, lists and a tuple", "[log][pickle]") {
  if (!have_python()) return;  // no python3
  PickleOut w;
  w.begin_dict();
  w.key("segments");
  w.begin_list();
  w.begin_dict();
  w.key("address");
  w.unsigned_integer(0x7f0000000000ull);
  w.key("segment_pool_id");
  w.begin_tuple();
  w.integer(0);
  w.integer(0);
  w.end_tuple();
  w.key("blocks");
  w.begin_list();
  w.end_list();
  w.end_dict();
  w.end_list();
  w.key("empty");
  w.begin_dict();
  w.end_dict();
  w.end_dict();
  const std::string first = w.finish();
  CHECK(loaded(first) ==
        "{'segments': [{'address': 139637976727552, 'segment_pool_id': (0, 0), 'blocks': []}], "
        "'empty': {}}");
  // The writer starts anew after finish().
  w.integer(7);
  CHECK(loaded(w.finish()) == "7");
}

TEST_CASE("pickle_out: valid_utf8 keeps good text, replaces each bad byte", "[log][pickle]") {
  CHECK(valid_utf8("abc") == "abc");
  CHECK(valid_utf8("\xc3\xa9") == "\xc3\xa9");
  CHECK(valid_utf8("\xc0\xaf") == "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong
  CHECK(valid_utf8("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
  CHECK(valid_utf8("\xf4\x90\x80\x80") ==
        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // past U+10FFFF
  CHECK(valid_utf8("a\x80z") == "a\xef\xbf\xbdz");
}
