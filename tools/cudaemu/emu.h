/* emu.h — cudaemu internals shared by the runtime, the executor and the
 * library stand-ins. */
#ifndef CUDAEMU_EMU_H
#define CUDAEMU_EMU_H

#include <functional>
#include <memory>

#include "cuda_runtime.h"

namespace cudaemu {

/* One kernel launch, ready to run (arguments already captured). */
struct kernel_launch {
    const char *name;
    dim3 grid, block;
    size_t shared;
    std::shared_ptr<const void> closure;
    tramp_fn tramp;
};

/* Run every block of k (exec.cpp); called on a stream's worker thread. */
void run_kernel(const kernel_launch &k);

/* Print "cudaemu: ..." and abort: the GPU would hang or fault here. */
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A device fault (illegal address, misuse a GPU would only show as a
 * crash): print it and make err the context's sticky error. */
void device_fault(cudaError_t err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set the calling thread's last error and return e. */
cudaError_t set_error(cudaError_t e);

/* Memory classes (runtime.cpp). */
enum mem_kind { MEM_PAGEABLE, MEM_DEVICE, MEM_PINNED };
/* Where [p, p + bytes) lies: MEM_DEVICE / MEM_PINNED when inside one such
 * allocation, MEM_PAGEABLE otherwise; *partial when it starts in an
 * allocation and runs past its end. */
mem_kind classify(const void *p, size_t bytes, bool *partial);

/* Enqueue fn on stream s (NULL: the legacy default stream) in issue order,
 * or record it as a graph node while s is capturing.  what names it in
 * diagnostics. */
cudaError_t enqueue(cudaStream_t s, std::function<void()> fn, const char *what);
/* The calling thread's current device, as the physical index (for NCCL's
 * one-rank-per-GPU check). */
int physical_device(void);
/* Options read once from the environment. */
int option_int(const char *name, int dflt);

} /* namespace cudaemu */

#endif
