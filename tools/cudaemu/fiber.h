/* fiber.h — cudaemu's fibers: a stack and a saved stack pointer; switching
 * saves and restores only the callee-saved registers and the floating-point
 * control words (x86-64 and AArch64 in assembly, ucontext elsewhere).  The
 * stacks are mmap'd with a guard page below them, so a CUDA thread that
 * overflows its stack faults instead of corrupting another. */
#ifndef CUDAEMU_FIBER_H
#define CUDAEMU_FIBER_H

#include <stddef.h>

#if defined(__x86_64__) || defined(__aarch64__)
#define CUDAEMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

struct emu_fiber {
    void *stack;      /* lowest usable address (above the guard page) */
    size_t size;
#ifdef CUDAEMU_ASM_SWITCH
    void *sp;         /* saved stack pointer while switched out */
#else
    ucontext_t uc;
#endif
    void (*entry)(void *);
    void *arg;
    /* ASan fiber bookkeeping */
    void *fake_stack;
    const void *from_bottom;
    size_t from_size;
};

/* The scheduler's side of the switches: one per OS thread. */
struct emu_fiber_host {
#ifdef CUDAEMU_ASM_SWITCH
    void *sp;
#else
    ucontext_t uc;
#endif
    void *fake_stack;
    const void *bottom;
    size_t size;
};

/* Allocate a stack of `size` bytes (plus a guard page); false when mmap fails. */
bool emu_fiber_alloc(emu_fiber *f, size_t size);
void emu_fiber_free(emu_fiber *f);
/* Prepare f to run entry(arg) from the top of its stack on the next resume. */
void emu_fiber_prepare(emu_fiber *f, void (*entry)(void *), void *arg);
/* Run f until it calls emu_fiber_yield (or its entry finished by yielding). */
void emu_fiber_resume(emu_fiber_host *h, emu_fiber *f);
/* From inside f: back to the host.  `dying` when f will never be resumed. */
void emu_fiber_yield(emu_fiber_host *h, emu_fiber *f, bool dying);

#endif
