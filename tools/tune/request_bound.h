// tools/tune/request_bound.h: a quick first look at a log that can be read twice (a regular file)
// before tune's one pass over it: an upper bound of its largest request, which decides the sweep's
// max_split_size_mb values (sweep.h), found without decoding the log. A line without an escape
// counts only when it holds "alloc" (the action's value, as written), and then with the largest
// integer after any "size" key; a line with an escape is parsed (log_event.h). Never below the
// largest request the pass finds in the same bytes. Not here: the pass (pass.h).
#pragma once

#include <cstdint>
#include <istream>
#include <string_view>

namespace cudapool::tune {

std::uint64_t largest_request_bound(std::istream& in);

// The bound of one line (exposed for tests).
std::uint64_t line_request_bound(std::string_view line);

}  // namespace cudapool::tune
