// SPDX-License-Identifier: Apache-2.0
// tools/analyze/libdw_calls.cpp: see libdw_calls.h. Built only with CUDAPOOL_HAVE_LIBDW (libdw-dev
// found: tools/CMakeLists.txt).
#if CUDAPOOL_HAVE_LIBDW
#include "tools/analyze/libdw_calls.h"

#include <dlfcn.h>

namespace cudapool::analyze {

namespace {

template <class F>
bool find(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(lib, name));
  return out != nullptr;
}

const LibdwCalls* load() {
  void* lib = ::dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  static LibdwCalls c;  // the library stays loaded for the process's life
  const bool all =
      find(lib, "dwfl_begin", c.begin) && find(lib, "dwfl_end", c.end) &&
      find(lib, "dwfl_report_begin", c.report_begin) &&
      find(lib, "dwfl_report_elf", c.report_elf) && find(lib, "dwfl_report_end", c.report_end) &&
      find(lib, "dwfl_module_getelf", c.module_getelf) &&
      find(lib, "dwfl_module_build_id", c.module_build_id) &&
      find(lib, "dwfl_module_addrinfo", c.module_addrinfo) &&
      find(lib, "dwfl_module_getsrc", c.module_getsrc) && find(lib, "dwfl_lineinfo", c.lineinfo) &&
      find(lib, "dwfl_line_comp_dir", c.line_comp_dir) &&
      find(lib, "dwfl_build_id_find_elf", c.build_id_find_elf) &&
      find(lib, "dwfl_standard_find_debuginfo", c.standard_find_debuginfo) &&
      find(lib, "dwfl_offline_section_address", c.offline_section_address);
  if (!all) {
    ::dlclose(lib);
    return nullptr;
  }
  return &c;
}

}  // namespace

const LibdwCalls* libdw_calls() {
  static const LibdwCalls* const calls = load();
  return calls;
}

}  // namespace cudapool::analyze

#endif
