// Where and how tensors run: the device a config asks for, the process-wide runtime settings
// (threads, seed). bf16 autocast is runtime/autocast.h.
#pragma once

#include <torch/torch.h>

#include <string>

#include "xl/config/schema.h"

namespace xl::runtime {

/// train.device: auto is CUDA when available, else the CPU; cuda without a GPU is a UserError.
/// train.bf16 on a CPU without bf16 instructions logs a warning with the bf16 and float32
/// matrix-product rates measured there: emulated bf16 is many times slower, never silently.
torch::Device pick_device(const config::TrainConfig& train);

/// Whether this CPU multiplies bf16 matrices in hardware (avx512_bf16 or amx_bf16).
bool cpu_has_bf16();

/// Waits for the work queued on `device` (a no-op on the CPU).
void synchronize(const torch::Device& device);

/// GFLOP/s of n x n matrix products of `dtype` on `device`, timed for about `seconds`.
double matmul_gflops(
    const torch::Device& device,
    torch::ScalarType dtype,
    int64_t n,
    double seconds);

/// Bytes `device` can still allocate: for the CPU the kernel's MemAvailable, lowered to what is
/// left under the cgroup's memory limit when there is one; for a GPU its memory less what the
/// caching allocator holds.
double available_memory(const torch::Device& device);

/// "the CPU" or "cuda:0", for messages.
std::string device_name(const torch::Device& device);

/// Sets train.threads (when > 0) and seeds torch with train.seed.
void setup_runtime(const config::TrainConfig& train);

} // namespace xl::runtime
