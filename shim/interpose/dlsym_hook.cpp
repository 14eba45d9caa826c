// shim/interpose/dlsym_hook.cpp: the exported dlsym. glibc answers RTLD_NEXT relative to the
// caller's return address, so a C wrapper that forwarded such a lookup would answer for the wrong
// object (this has broken `import torch` under other interposers): RTLD_NEXT and RTLD_DEFAULT
// lookups leave by a tail jump to the real dlsym, keeping the caller's return address.
// Handle-scoped lookups go to cudapool_dlsym_handle (proc_address.cpp). One unversioned definition
// catches references to both dlsym@GLIBC_2.34 and dlsym@GLIBC_2.2.5.
#include <dlfcn.h>

#include "shim/interpose/real_driver.h"

extern "C" {
// `used`: the only reader is the assembly below, which link-time optimization cannot see.
__attribute__((visibility("hidden"), used)) void* cudapool_real_dlsym_ptr = nullptr;

// Reached only before the constructor below ran (another library's constructor calling dlsym):
// the real dlsym is looked up now; an RTLD_NEXT lookup this early answers relative to the shim.
__attribute__((visibility("hidden"), used)) void* cudapool_dlsym_slow(void* handle,
                                                                      const char* name) {
  return cudapool::shim::real_dlsym(handle, name);
}
}

namespace {

__attribute__((constructor(101))) void set_real_dlsym() {
  cudapool_real_dlsym_ptr = cudapool::shim::find_real_dlsym();
}

}  // namespace

// RTLD_DEFAULT is 0 and RTLD_NEXT is -1 in glibc.
asm(R"(
    .text
    .globl dlsym
    .type dlsym, @function
dlsym:
    .cfi_startproc
    test %rdi, %rdi
    jz 1f
    cmp $-1, %rdi
    je 1f
    jmp cudapool_dlsym_handle
1:  mov cudapool_real_dlsym_ptr(%rip), %rax
    test %rax, %rax
    jz 2f
    jmp *%rax
2:  jmp cudapool_dlsym_slow
    .cfi_endproc
    .size dlsym, .-dlsym
)");
