// shim/recording/loaded_modules.cpp: see loaded_modules.h.
#include "shim/recording/loaded_modules.h"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace cudapool::shim {

namespace {

std::string executable_path() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string("(executable)");
}

}  // namespace

std::vector<log::Module> loaded_modules() {
  std::vector<log::Module> modules;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) -> int {
        auto* out = static_cast<std::vector<log::Module>*>(data);
        if (out->size() >= log::kMaxModules) return 1;
        std::uint64_t low = ~std::uint64_t{0}, high = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
          low = std::min<std::uint64_t>(low, ph.p_vaddr);
          high = std::max<std::uint64_t>(high, ph.p_vaddr + ph.p_memsz);
        }
        if (high == 0) return 0;  // nothing mapped (the vDSO's name is empty too: it has PT_LOAD)
        log::Module m;
        m.base = info->dlpi_addr + low;
        m.end = info->dlpi_addr + high;
        const char* name = info->dlpi_name;
        // The first entry with an empty name is the executable; later empty ones (the vDSO) get
        // a name of their own.
        if (name != nullptr && name[0] != '\0') {
          m.path = name;
        } else {
          m.path = out->empty() ? executable_path() : std::string("[vdso]");
        }
        out->push_back(std::move(m));
        return 0;
      },
      &modules);
  std::sort(modules.begin(), modules.end(),
            [](const log::Module& a, const log::Module& b) { return a.base < b.base; });
  return modules;
}

}  // namespace cudapool::shim
