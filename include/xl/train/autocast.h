// bf16 autocast on CUDA for the scope of the guard (a no-op elsewhere or when
// disabled).
#pragma once

#include <torch/torch.h>

namespace xl::train {

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

} // namespace xl::train
