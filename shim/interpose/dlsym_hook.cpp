// SPDX-License-Identifier: Apache-2.0
// shim/interpose/dlsym_hook.cpp: the exported dlsym, in assembly. glibc answers RTLD_NEXT relative
// to the caller's return address, so a C wrapper that forwarded such a lookup would answer for the
// wrong object (this has broken `import torch` under other interposers): everything but a
// handle-scoped lookup of a "cu..." name leaves by a tail jump to the real dlsym, keeping the
// caller's return address. Handle-scoped "cu..." lookups go to cudapool_dlsym_handle
// (proc_address.cpp), which may swap the answer for a hook. One unversioned definition catches
// references to both dlsym@GLIBC_2.34 and dlsym@GLIBC_2.2.5. Not here: finding the real dlsym
// (driver/real_driver.cpp), the hooks.
//
// The early path. dlsym is called before anything of the shim is ready: a sanitizer runtime
// preloaded ahead of the shim (ASan, TSan) resolves its interceptors with dlsym(RTLD_NEXT, ...)
// during its own start-up, before its shadow memory and thread state exist, and so before any
// instrumented code can run (an instrumented function there crashes: a shadow check, a TSan
// function entry, a guarded function-local static through an intercepted __cxa_guard_acquire);
// other libraries' constructors run before the shim's. So the path that forwards a lookup needs
// nothing that is initialised at run time: this stub is assembly (the compiler adds nothing to
// it: no instrumentation), reads the real dlsym from a plain zero-initialized global, and when
// that is still null calls cudapool_resolve_real_dlsym (driver/real_driver.cpp), which is built
// without any sanitizer instrumentation by attribute, touches no function-local static, TLS or
// std::atomic, and only calls dlvsym. That is why no build flag is needed for this file or for
// driver/real_driver.cpp (the sanitizer builds of .ci/run compile both instrumented, which checks
// it). A sanitizer runtime never looks up a "cu..." name in a handle, so the one branch into C++
// that may need the runtime (cudapool_dlsym_handle: settings, the hook table, tracing) is reached
// only by lookups that come after the runtime's start-up.
#include "shim/driver/real_driver.h"

// RTLD_DEFAULT is 0 and RTLD_NEXT is -1 in glibc. On entry %rsp is 8 mod 16; the two pushes and
// the 8 bytes below keep the call to the resolver 16-byte aligned, and restore the arguments for
// the tail jump. A null answer (no real dlsym: never on glibc) returns null.
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
    test %rsi, %rsi
    jz 1f
    cmpb $0x63, (%rsi)
    jne 1f
    cmpb $0x75, 1(%rsi)
    jne 1f
    jmp cudapool_dlsym_handle
1:  mov cudapool_real_dlsym_ptr(%rip), %rax
    test %rax, %rax
    jz 2f
    jmp *%rax
2:  push %rdi
    .cfi_adjust_cfa_offset 8
    push %rsi
    .cfi_adjust_cfa_offset 8
    sub $8, %rsp
    .cfi_adjust_cfa_offset 8
    call cudapool_resolve_real_dlsym
    add $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop %rsi
    .cfi_adjust_cfa_offset -8
    pop %rdi
    .cfi_adjust_cfa_offset -8
    test %rax, %rax
    jz 3f
    jmp *%rax
3:  ret
    .cfi_endproc
    .size dlsym, .-dlsym
)");
