// tools/tune/request_bound.h: a quick first look at a log that can be read twice (a regular file)
// before tune's one pass over it, without decoding the log: an upper bound of its largest request,
// which decides the sweep's max_split_size_mb values (sweep.h), and every size the pool can be
// asked for, which says which settings replay alike (same_replay.h). A line without an escape
// counts only when it holds "alloc" or "oom" (the action's value, as written), and then with every
// integer after a "size" key (the bound: of "alloc" lines only); a line with an escape is parsed
// (log_event.h). The bound is never below the largest request the pass finds in the same bytes;
// the sizes hold every size of an alloc or oom event the pass finds, or are not known (a "size"
// that is not a plain integer, more than kMaxScannedSizes distinct ones). Not here: the pass
// (pass.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string_view>
#include <unordered_set>

namespace cudapool::tune {

inline constexpr std::size_t kMaxScannedSizes = std::size_t{1} << 16;

struct RequestScan {
  std::uint64_t bound = 0;
  std::unordered_set<std::uint64_t> sizes;  // while sizes_known
  bool sizes_known = true;

  void line(std::string_view text);
  void forget_sizes() {
    sizes_known = false;
    sizes = {};
  }
};

// Adds the lines of in to *scan (several logs: one scan).
void scan_requests(std::istream& in, RequestScan* scan);

// The bound of one line (exposed for tests).
std::uint64_t line_request_bound(std::string_view line);

}  // namespace cudapool::tune
