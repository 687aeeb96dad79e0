/* fiber.cpp — see fiber.h.  The x86-64 switch follows the System V ABI:
 * rbx, rbp, r12-r15, rsp, MXCSR and the x87 control word are callee-saved;
 * everything else is saved by the compiler around the call.  Under
 * AddressSanitizer every switch is announced with
 * __sanitizer_{start,finish}_switch_fiber so that ASan knows which stack is
 * live (compiler-rt's common_interface_defs.h). */
#include "fiber.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define CUDAEMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDAEMU_ASAN 1
#endif
#endif

#ifdef CUDAEMU_ASAN
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                                size_t *size_old);
#define START_SWITCH(save, bottom, size) __sanitizer_start_switch_fiber(save, bottom, size)
#define FINISH_SWITCH(save, bottom, size) __sanitizer_finish_switch_fiber(save, bottom, size)
#else
#define START_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define FINISH_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#endif

bool emu_fiber_alloc(emu_fiber *f, size_t size)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) / page * page;
    void *m = mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return false;
    mprotect(m, page, PROT_NONE); /* the guard page: stacks grow down into it */
    memset(f, 0, sizeof *f);
    f->stack = (char *)m + page;
    f->size = size;
    return true;
}

void emu_fiber_free(emu_fiber *f)
{
    if (!f->stack)
        return;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    munmap((char *)f->stack - page, f->size + page);
    f->stack = NULL;
}

static void fiber_begin(emu_fiber *f)
{
    FINISH_SWITCH(NULL, &f->from_bottom, &f->from_size);
    f->entry(f->arg);
    fprintf(stderr, "cudaemu: a fiber's entry returned instead of yielding\n");
    abort();
}

#ifdef CUDAEMU_ASM_SWITCH

extern "C" void cudaemu_switch(void **save_sp, void *new_sp);
extern "C" void cudaemu_fiber_start(void);
extern "C" void cudaemu_fiber_begin(emu_fiber *f) { fiber_begin(f); }

#if defined(__x86_64__)
asm(R"(
    .text
    .globl cudaemu_switch
    .type cudaemu_switch,@function
cudaemu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cudaemu_switch, .-cudaemu_switch

    .globl cudaemu_fiber_start
    .type cudaemu_fiber_start,@function
cudaemu_fiber_start:
    movq %r12, %rdi
    call cudaemu_fiber_begin
    ud2
    .size cudaemu_fiber_start, .-cudaemu_fiber_start
    .section .note.GNU-stack,"",@progbits
    .text
)");

void emu_fiber_prepare(emu_fiber *f, void (*entry)(void *), void *arg)
{
    f->entry = entry;
    f->arg = arg;
    uintptr_t top = ((uintptr_t)f->stack + f->size) & ~(uintptr_t)15;
    uint64_t *s = (uint64_t *)(top - 80);
    memset(s, 0, 80);
    uint32_t mxcsr;
    uint16_t fpucw;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fpucw));
    memcpy((char *)s, &mxcsr, 4);
    memcpy((char *)s + 4, &fpucw, 2);
    s[4] = (uint64_t)(uintptr_t)f;                      /* r12: the fiber */
    s[7] = (uint64_t)(uintptr_t)&cudaemu_fiber_start; /* return address */
    f->sp = s;
}

#elif defined(__aarch64__)
/* AAPCS64: x19-x30, sp and d8-d15 are callee-saved (x30 is the return address). */
asm(R"(
    .text
    .globl cudaemu_switch
    .type cudaemu_switch,%function
cudaemu_switch:
    sub sp, sp, #176
    stp x19, x20, [sp, #0]
    stp x21, x22, [sp, #16]
    stp x23, x24, [sp, #32]
    stp x25, x26, [sp, #48]
    stp x27, x28, [sp, #64]
    stp x29, x30, [sp, #80]
    stp d8, d9, [sp, #96]
    stp d10, d11, [sp, #112]
    stp d12, d13, [sp, #128]
    stp d14, d15, [sp, #144]
    mrs x9, fpcr
    str x9, [sp, #160]
    mov x9, sp
    str x9, [x0]
    mov sp, x1
    ldp x19, x20, [sp, #0]
    ldp x21, x22, [sp, #16]
    ldp x23, x24, [sp, #32]
    ldp x25, x26, [sp, #48]
    ldp x27, x28, [sp, #64]
    ldp x29, x30, [sp, #80]
    ldp d8, d9, [sp, #96]
    ldp d10, d11, [sp, #112]
    ldp d12, d13, [sp, #128]
    ldp d14, d15, [sp, #144]
    ldr x9, [sp, #160]
    msr fpcr, x9
    add sp, sp, #176
    ret
    .size cudaemu_switch, .-cudaemu_switch

    .globl cudaemu_fiber_start
    .type cudaemu_fiber_start,%function
cudaemu_fiber_start:
    mov x0, x19
    bl cudaemu_fiber_begin
    brk #0
    .size cudaemu_fiber_start, .-cudaemu_fiber_start
    .section .note.GNU-stack,"",%progbits
    .text
)");

void emu_fiber_prepare(emu_fiber *f, void (*entry)(void *), void *arg)
{
    f->entry = entry;
    f->arg = arg;
    uintptr_t top = ((uintptr_t)f->stack + f->size) & ~(uintptr_t)15;
    uint64_t *s = (uint64_t *)(top - 176);
    memset(s, 0, 176);
    uint64_t fpcr;
    asm volatile("mrs %0, fpcr" : "=r"(fpcr));
    s[0] = (uint64_t)(uintptr_t)f;                      /* x19: the fiber */
    s[11] = (uint64_t)(uintptr_t)&cudaemu_fiber_start; /* x30 */
    s[20] = fpcr;
    f->sp = s;
}
#endif

void emu_fiber_resume(emu_fiber_host *h, emu_fiber *f)
{
    START_SWITCH(&h->fake_stack, f->stack, f->size);
    cudaemu_switch(&h->sp, f->sp);
    FINISH_SWITCH(h->fake_stack, NULL, NULL);
}

void emu_fiber_yield(emu_fiber_host *h, emu_fiber *f, bool dying)
{
    START_SWITCH(dying ? NULL : &f->fake_stack, f->from_bottom, f->from_size);
    cudaemu_switch(&f->sp, h->sp);
    FINISH_SWITCH(f->fake_stack, &f->from_bottom, &f->from_size);
}

#else /* ucontext */

static thread_local emu_fiber *starting;

static void uc_entry(void) { fiber_begin(starting); }

void emu_fiber_prepare(emu_fiber *f, void (*entry)(void *), void *arg)
{
    f->entry = entry;
    f->arg = arg;
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = f->size;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, uc_entry, 0);
}

void emu_fiber_resume(emu_fiber_host *h, emu_fiber *f)
{
    starting = f;
    START_SWITCH(&h->fake_stack, f->stack, f->size);
    swapcontext(&h->uc, &f->uc);
    FINISH_SWITCH(h->fake_stack, NULL, NULL);
}

void emu_fiber_yield(emu_fiber_host *h, emu_fiber *f, bool dying)
{
    START_SWITCH(dying ? NULL : &f->fake_stack, f->from_bottom, f->from_size);
    swapcontext(&f->uc, &h->uc);
    FINISH_SWITCH(f->fake_stack, &f->from_bottom, &f->from_size);
}
#endif
