// SPDX-License-Identifier: Apache-2.0
// tests/gpu/ipc_check.cu: cudaIpcGetMemHandle on pooled blocks never makes another process map
// other memory. The exporter fills three blocks with their own byte (a 64 MiB block, and two
// 512 B blocks that a pool puts in one segment, the second behind the first), exports each, and
// for each export that succeeds starts itself again (a new process) to open the handle and read
// the first 512 bytes. Under the shim an export of a block inside a segment is refused (the
// importer would map the segment's base: the first block's bytes); without it every export
// succeeds. Prints one line per block; exit 0 when every export that succeeded showed the
// importer the exporter's bytes, 1 otherwise.
//
//   ipc_check                      (the exporter)
//   ipc_check open HEX BYTE        (the importer: exit 0 when all 512 bytes are BYTE)
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common.h"

extern char** environ;

namespace {

constexpr size_t kRead = 512;

std::string to_hex(const cudaIpcMemHandle_t& h) {
  static const char* const digits = "0123456789abcdef";
  std::string out;
  const auto* bytes = reinterpret_cast<const unsigned char*>(&h);
  for (size_t i = 0; i < sizeof h; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

bool from_hex(const char* text, cudaIpcMemHandle_t* h) {
  if (std::strlen(text) != 2 * sizeof *h) return false;
  auto* bytes = reinterpret_cast<unsigned char*>(h);
  for (size_t i = 0; i < sizeof *h; ++i) {
    char pair[3] = {text[2 * i], text[2 * i + 1], 0};
    bytes[i] = static_cast<unsigned char>(std::strtoul(pair, nullptr, 16));
  }
  return true;
}

// The importer: 0 when the mapped memory starts with kRead bytes of `want`, 3 when it does not
// (other memory), 2 when the handle could not be opened.
int import(const char* hex, int want) {
  cudaIpcMemHandle_t h;
  if (!from_hex(hex, &h)) return 2;
  CHECK(cudaSetDevice(0));
  void* p = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    printf("ipc_check importer: cudaIpcOpenMemHandle: %s\n", cudaGetErrorName(e));
    return 2;
  }
  std::vector<unsigned char> got(kRead);
  CHECK(cudaMemcpy(got.data(), p, kRead, cudaMemcpyDeviceToHost));
  CHECK(cudaIpcCloseMemHandle(p));
  size_t bad = 0;
  for (unsigned char c : got) bad += c != want;
  return bad == 0 ? 0 : 3;
}

// Runs this program as the importer of h; its exit status.
int run_importer(const cudaIpcMemHandle_t& h, int want) {
  std::string hex = to_hex(h), byte = std::to_string(want);
  char exe[] = "/proc/self/exe";
  char open_arg[] = "open";
  char* argv[] = {exe, open_arg, hex.data(), byte.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv, environ) != 0) return 4;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 4;
  return WEXITSTATUS(status);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "open") == 0) return import(argv[2], std::atoi(argv[3]));
  print_banner("ipc_check");
  struct Block {
    const char* name;
    size_t size;
    int byte;
    void* p;
  } blocks[] = {{"alone_64MiB", size_t(64) << 20, 0xC3, nullptr},
                {"first_512B", 512, 0xA1, nullptr},
                {"second_512B", 512, 0xB2, nullptr}};
  for (Block& b : blocks) {
    CHECK(cudaMalloc(&b.p, b.size));
    CHECK(cudaMemset(b.p, b.byte, b.size));
  }
  CHECK(cudaDeviceSynchronize());
  int wrong = 0, exported = 0;
  for (const Block& b : blocks) {
    cudaIpcMemHandle_t h;
    const cudaError_t e = cudaIpcGetMemHandle(&h, b.p);
    if (e != cudaSuccess) {
      cudaGetLastError();
      printf("ipc_check: %s: export refused (%s)\n", b.name, cudaGetErrorName(e));
      continue;
    }
    ++exported;
    const int rc = run_importer(h, b.byte);
    const char* what = rc == 0   ? "the importer read the exporter's bytes"
                       : rc == 3 ? "WRONG MEMORY: the importer read other bytes"
                       : rc == 2 ? "the importer could not open the handle"
                                 : "the importer did not run";
    printf("ipc_check: %s: exported, %s\n", b.name, what);
    if (rc != 0) ++wrong;
  }
  for (Block& b : blocks) CHECK(cudaFree(b.p));
  printf("ipc_check: %d of 3 exported, %d wrong: %s\n", exported, wrong, wrong ? "FAILED" : "ok");
  return wrong ? 1 : 0;
}
