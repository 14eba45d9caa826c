// SPDX-License-Identifier: Apache-2.0
// tools/analyze/libdw_calls.h: the libdw functions the symbolizer calls (symbolizer.cpp), loaded at
// run time from libdw.so.1 (elfutils' libdw1) the first time a frame is to be named, so that the
// tools start, and name frames library + offset, on a machine without it (the GPU machine's Ubuntu
// had none: cudapool-analyze linked against it did not start there). The types come from the
// headers of libdw-dev at build time. Not here: what is done with them (symbolizer.cpp).
#pragma once

#include <elfutils/libdwfl.h>

namespace cudapool::analyze {

struct LibdwCalls {
  decltype(&dwfl_begin) begin;
  decltype(&dwfl_end) end;
  decltype(&dwfl_report_begin) report_begin;
  decltype(&dwfl_report_elf) report_elf;
  decltype(&dwfl_report_end) report_end;
  decltype(&dwfl_module_getelf) module_getelf;
  decltype(&dwfl_module_build_id) module_build_id;
  decltype(&dwfl_module_addrinfo) module_addrinfo;
  decltype(&dwfl_module_getsrc) module_getsrc;
  decltype(&dwfl_lineinfo) lineinfo;
  decltype(&dwfl_line_comp_dir) line_comp_dir;
  decltype(&dwfl_build_id_find_elf) build_id_find_elf;
  decltype(&dwfl_standard_find_debuginfo) standard_find_debuginfo;
  decltype(&dwfl_offline_section_address) offline_section_address;
};

// The functions, loaded once (thread-safe); null when libdw.so.1 or one of them cannot be found.
const LibdwCalls* libdw_calls();

}  // namespace cudapool::analyze
