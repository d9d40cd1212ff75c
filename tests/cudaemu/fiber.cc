// Fibers for the emulated CUDA threads: mmap'd stacks with a guard page and
// a context switch of a few instructions (x86-64 System V: the callee-saved
// registers and the stack pointer). The floating-point control words are
// not switched: every fiber runs with the host thread's (kernels never
// change the rounding mode). ucontext's swapcontext would also work but
// makes a system call per switch (it saves the signal mask), and a block of
// 1024 threads switches at every barrier.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "emu.h"

#if !defined(__x86_64__)
#error "cudaemu's context switch is written for x86-64"
#endif

// twemu_switch(void** save, void* next): push the callee-saved registers,
// store rsp in *save, load rsp = next, and pop the same from there.
asm(R"(
  .text
  .globl twemu_switch
  .type twemu_switch, @function
twemu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size twemu_switch, .-twemu_switch

  .globl twemu_fiber_start
  .type twemu_fiber_start, @function
twemu_fiber_start:
  movq %r12, %rax
  callq *%rax
  ud2
  .size twemu_fiber_start, .-twemu_fiber_start
)");

extern "C" void twemu_fiber_start();

namespace cudaemu {

Stack NewStack(size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  Stack s;
  s.map_bytes = bytes + page;
  void* m = ::mmap(nullptr, s.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) Fatal("mmap of a %zu-byte fiber stack: %s", s.map_bytes, std::strerror(errno));
  s.map = static_cast<char*>(m);
  if (::mprotect(s.map, page, PROT_NONE) != 0) Fatal("mprotect of a stack guard page: %s", std::strerror(errno));
  s.lo = s.map + page;
  s.hi = s.map + s.map_bytes;
  return s;
}

void* PrepareStack(const Stack& stack, void (*entry)()) {
  // After twemu_switch pops the frame below, `ret` enters twemu_fiber_start
  // with rsp 16-byte aligned, which calls entry (held in r12) as a normal
  // call would.
  uintptr_t top = reinterpret_cast<uintptr_t>(stack.hi) & ~uintptr_t{15};
  top -= 16;  // room above the first frame
  auto* frame = reinterpret_cast<uint64_t*>(top - 56);
  frame[0] = 0;                                               // r15
  frame[1] = 0;                                               // r14
  frame[2] = 0;                                               // r13
  frame[3] = reinterpret_cast<uint64_t>(entry);               // r12
  frame[4] = 0;                                               // rbx
  frame[5] = 0;                                               // rbp
  frame[6] = reinterpret_cast<uint64_t>(&twemu_fiber_start);  // ret
  return frame;
}

}  // namespace cudaemu
