// Where and how tensors run: the device a config asks for, the process-wide runtime settings
// (threads, seed), and bf16 autocast.
#pragma once

#include <torch/torch.h>

#include <string>

#include "xl/config/schema.h"

namespace xl::run {

/// train.device: auto is CUDA when available, else the CPU; cuda without a GPU is a UserError,
/// and so is train.bf16 on the CPU (autocast runs on CUDA only), rather than a float32 run
/// whose config says bf16.
torch::Device pick_device(const config::TrainConfig& train);

/// Bytes `device` can still allocate: for the CPU the kernel's MemAvailable, lowered to what is
/// left under the cgroup's memory limit when there is one; for a GPU its memory less what the
/// caching allocator holds.
double available_memory(const torch::Device& device);

/// "the CPU" or "cuda:0", for messages.
std::string device_name(const torch::Device& device);

/// Sets train.threads (when > 0) and seeds torch with train.seed.
void setup_runtime(const config::TrainConfig& train);

/// bf16 autocast on CUDA for the scope of the guard (a no-op elsewhere or when disabled).
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, bool bf16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kHalf;
};

} // namespace xl::run
