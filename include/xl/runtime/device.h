// Where and how tensors run: the device a config asks for, the process-wide runtime settings
// (threads, seed). bf16 autocast is runtime/autocast.h.
#pragma once

#include <torch/torch.h>

#include <string>

#include "xl/config/schema.h"

namespace xl::runtime {

/// train.device: auto is CUDA when available, else the CPU; cuda without a GPU is a UserError.
/// train.bf16 on the CPU: warn_if_bf16_is_slower().
torch::Device pick_device(const config::TrainConfig& train);

/// On a CPU without AMX, measures bf16 and float32 matrix products (about half a second) and
/// warns with both rates where bf16 is slower: many times so when emulated (no bf16
/// instructions), often somewhat with avx512_bf16 alone. Never silently slower.
void warn_if_bf16_is_slower();
/// Its message for bf16 products at `bf16` GFLOP/s against `fp32` on a CPU without AMX, with
/// bf16 instructions or without (`emulated`); empty where bf16 is not slower.
std::string bf16_speed_warning(bool emulated, double bf16, double fp32);

/// Whether this CPU multiplies bf16 matrices in hardware (avx512_bf16 or amx_bf16).
bool cpu_has_bf16();

/// `host` (a CPU tensor) on `device`: itself for the CPU; else a copy that the host does not wait
/// for, from page-locked memory (`host` itself when it is, a page-locked copy otherwise).
torch::Tensor upload(const torch::Tensor& host, const torch::Device& device);

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

/// Sends LibTorch's warnings to xl's logger, in one line each ("LibTorch: ..."), and leaves out
/// those that say nothing to a user of xl (the data-parallel reducer's note that it found no
/// unused parameter, which it looks for because some families leave some unused). For the
/// commands: a program of its own keeps its handler.
void route_torch_warnings();

/// What an allocation that failed (on the CPU or a GPU) says, in one line a user can act on.
std::string out_of_memory(const c10::OutOfMemoryError& e);

/// Refuses (UserError naming `what`) more than 4 threads a core, and warns of more than the cores.
void check_threads(int64_t threads, const std::string& what);

/// Sets train.threads (when > 0, check_threads) and train.tf32, and seeds torch with train.seed.
void setup_runtime(const config::TrainConfig& train);

} // namespace xl::runtime
