// SPDX-License-Identifier: Apache-2.0
// shim/recording/loaded_modules.cpp: see loaded_modules.h.
#include "shim/recording/loaded_modules.h"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace cudapool::shim {

namespace {

std::string executable_path() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string("(executable)");
}

// The GNU build id of a loaded object, from its PT_NOTE segments (mapped: read in place), as lower
// case hex; "" when it has none.
std::string build_id(const dl_phdr_info* info) {
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE || ph.p_memsz < sizeof(ElfW(Nhdr))) continue;
    const auto* at = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = at + ph.p_memsz;
    const std::size_t align = ph.p_align == 8 ? 8 : 4;
    const auto up = [align](std::size_t n) { return (n + align - 1) & ~(align - 1); };
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(at);
      const unsigned char* name = at + sizeof(ElfW(Nhdr));
      const unsigned char* desc = name + up(note->n_namesz);
      if (desc + note->n_descsz > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && note->n_descsz > 0 && note->n_descsz <= 64) {
        std::string out;
        for (std::size_t b = 0; b < note->n_descsz; ++b) {
          out.push_back(kHex[desc[b] >> 4]);
          out.push_back(kHex[desc[b] & 15]);
        }
        return out;
      }
      at = desc + up(note->n_descsz);
    }
  }
  return {};
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
        m.bias = info->dlpi_addr;
        m.build_id = build_id(info);
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
