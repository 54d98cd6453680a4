#include "xl/run/device.h"

#include <ATen/autocast_mode.h>

#include "xl/util/error.h"

namespace xl::run {

torch::Device pick_device(config::Device device) {
  if (device == config::Device::kCpu) {
    return torch::kCPU;
  }
  if (torch::cuda::is_available()) {
    return torch::kCUDA;
  }
  if (device == config::Device::kCuda) {
    throw UserError("train.device is cuda, but no CUDA device is available");
  }
  return torch::kCPU;
}

void setup_runtime(const config::TrainConfig& train) {
  if (train.threads > 0) {
    torch::set_num_threads(static_cast<int>(train.threads));
  }
  torch::manual_seed(static_cast<uint64_t>(train.seed));
}

AutocastGuard::AutocastGuard(const torch::Device& device, bool bf16)
    : active_(bf16 && device.is_cuda()) {
  if (!active_) {
    return;
  }
  previous_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
  previous_dtype_ = at::autocast::get_autocast_dtype(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) {
    return;
  }
  if (at::autocast::decrement_nesting() == 0) {
    at::autocast::clear_cache();
  }
  at::autocast::set_autocast_enabled(at::kCUDA, previous_enabled_);
  at::autocast::set_autocast_dtype(at::kCUDA, previous_dtype_);
}

} // namespace xl::run
