#include "xl/train/autocast.h"

#include <ATen/autocast_mode.h>

namespace xl::train {

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

} // namespace xl::train
