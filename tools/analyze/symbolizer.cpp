// SPDX-License-Identifier: Apache-2.0
// tools/analyze/symbolizer.cpp: see symbolizer.h. The libdw part is built only with
// CUDAPOOL_HAVE_LIBDW (tools/CMakeLists.txt); without it symbolize() names nothing.
#include "tools/analyze/symbolizer.h"

#include <atomic>

#if CUDAPOOL_HAVE_LIBDW
#include <cxxabi.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "tools/analyze/libdw_calls.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#endif

namespace cudapool::analyze {

namespace {

std::atomic<bool> g_symbolizing{true};

}  // namespace

void set_symbolizing(bool on) {
  g_symbolizing.store(on, std::memory_order_relaxed);
}

bool symbolizing() {
  return g_symbolizing.load(std::memory_order_relaxed);
}

#if !CUDAPOOL_HAVE_LIBDW

bool symbolizer_built() {
  return false;
}

std::optional<NativeSymbol> symbolize(const ModuleFile&, std::uint64_t) {
  return std::nullopt;
}

#else

namespace {

// Printable ASCII only (anything else '?'), at most kMaxSymbolText characters.
std::string printable(const char* s) {
  std::string out;
  for (; *s != '\0' && out.size() < kMaxSymbolText; ++s) {
    const auto c = static_cast<unsigned char>(*s);
    out += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';
  }
  return out;
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = printable(status == 0 && d != nullptr ? d : name);
  std::free(d);  // NOLINT: __cxa_demangle's buffer is malloc'd
  return out;
}

std::string hex_bytes(const unsigned char* bits, int n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += kDigits[bits[i] >> 4];
    out += kDigits[bits[i] & 15];
  }
  return out;
}

// A descriptor of the regular ELF file at the absolute path, opened without blocking (a FIFO or
// a device put there since the stat is refused after the open), or -1. procfs and sysfs files
// (/proc/self/mem, /proc/kcore look regular) are never opened, and a file that does not start
// with the ELF magic never reaches libdw (which then tries it as a compressed image: elfutils
// 0.188 leaks 3 MiB on a file of zeros, found by the AddressSanitizer run of CI).
int open_regular(const std::string& path) {
  struct stat before {};
  struct statfs fs {};
  if (path.empty() || path[0] != '/' || ::stat(path.c_str(), &before) != 0 ||
      !S_ISREG(before.st_mode) || ::statfs(path.c_str(), &fs) != 0 ||
      fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC) {
    return -1;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat now {};
  if (::fstat(fd, &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != before.st_dev ||
      now.st_ino != before.st_ino) {
    ::close(fd);
    return -1;
  }
  unsigned char magic[4] = {};
  if (::pread(fd, magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic) ||
      std::memcmp(magic, "\177ELF", sizeof magic) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// eu-addr2line's offline callbacks: separate debug files by build id or debuglink, locally
// (cudapool-analyze clears DEBUGINFOD_URLS: no network at report time).
char* g_debuginfo_path = nullptr;
Dwfl_Callbacks callbacks(const LibdwCalls& dw) {
  return Dwfl_Callbacks{dw.build_id_find_elf, dw.standard_find_debuginfo,
                        dw.offline_section_address, &g_debuginfo_path};
}

// One file's libdw session; mod null when the file is not symbolized.
struct Session {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  std::unordered_map<std::uint64_t, std::optional<NativeSymbol> > addresses;
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    if (dwfl != nullptr) libdw_calls()->end(dwfl);
  }
};

std::unique_ptr<Session> open_session(const ModuleFile& m) {
  auto s = std::make_unique<Session>();
  const LibdwCalls* dw = libdw_calls();
  if (m.build_id.empty() || dw == nullptr) return s;
  const int fd = open_regular(m.path);
  if (fd < 0) return s;
  static const Dwfl_Callbacks kCallbacks = callbacks(*dw);  // libdw keeps a pointer to it
  s->dwfl = dw->begin(&kCallbacks);
  if (s->dwfl == nullptr) {
    ::close(fd);
    return s;
  }
  dw->report_begin(s->dwfl);
  // add_p_vaddr: the bias is added to the file's addresses (an ET_EXEC ignores it, bias 0).
  Dwfl_Module* mod = dw->report_elf(s->dwfl, m.path.c_str(), m.path.c_str(), fd, m.bias, true);
  dw->report_end(s->dwfl, nullptr, nullptr);
  if (mod == nullptr) {  // the descriptor is the library's only on success
    ::close(fd);
    return s;
  }
  Dwarf_Addr bias = 0;
  const unsigned char* bits = nullptr;
  GElf_Addr at = 0;
  if (dw->module_getelf(mod, &bias) == nullptr) return s;
  const int n = dw->module_build_id(mod, &bits, &at);
  if (n > 0 && hex_bytes(bits, n) == m.build_id) s->mod = mod;
  return s;
}

std::optional<NativeSymbol> lookup(Dwfl_Module* mod, std::uint64_t address) {
  if (address == 0) return std::nullopt;
  const LibdwCalls* dw = libdw_calls();  // not null: the module was opened with it
  const GElf_Addr pc = address - 1;      // inside the call instruction
  NativeSymbol out;
  GElf_Off off = 0;
  GElf_Sym sym{};
  const char* name = dw->module_addrinfo(mod, pc, &off, &sym, nullptr, nullptr, nullptr);
  if (name != nullptr && *name != '\0') {
    out.function = demangled(name);
    out.offset = off + 1;
  }
  if (Dwfl_Line* line = dw->module_getsrc(mod, pc); line != nullptr) {
    int lineno = 0;
    const char* file = dw->lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
    if (file != nullptr && *file != '\0' && lineno > 0) {
      std::string path = file;
      const char* dir = path[0] == '/' ? nullptr : dw->line_comp_dir(line);
      if (dir != nullptr && *dir != '\0') path = std::string(dir) + "/" + path;
      out.file = printable(path.c_str());
      out.line = static_cast<std::uint32_t>(lineno);
    }
  }
  if (out.function.empty() && out.file.empty()) return std::nullopt;
  return out;
}

class Symbolizer {
 public:
  std::optional<NativeSymbol> symbolize(const ModuleFile& m, std::uint64_t address) {
    const std::lock_guard<std::mutex> lock(mu_);
    std::string key = m.path;
    key += '\0';
    key += m.build_id;
    key += '\0';
    key += std::to_string(m.bias);
    auto it = sessions_.find(key);
    if (it == sessions_.end()) {
      if (sessions_.size() >= kMaxOpenModules) {  // every session ends (dwfl_end)
        sessions_.clear();
        addresses_ = 0;
      }
      it = sessions_.emplace(std::move(key), open_session(m)).first;
    }
    Session& s = *it->second;
    if (s.mod == nullptr) return std::nullopt;
    if (const auto a = s.addresses.find(address); a != s.addresses.end()) return a->second;
    if (addresses_ >= kMaxCachedAddresses) {
      for (auto& entry : sessions_) entry.second->addresses.clear();
      addresses_ = 0;
    }
    ++addresses_;
    return s.addresses.emplace(address, lookup(s.mod, address)).first->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Session> > sessions_;
  std::size_t addresses_ = 0;
};

Symbolizer& instance() {
  static Symbolizer s;  // its sessions end at exit
  return s;
}

}  // namespace

bool symbolizer_built() {
  return true;
}

std::optional<NativeSymbol> symbolize(const ModuleFile& m, std::uint64_t address) {
  if (!symbolizing() || m.build_id.empty()) return std::nullopt;
  return instance().symbolize(m, address);
}

#endif

}  // namespace cudapool::analyze
