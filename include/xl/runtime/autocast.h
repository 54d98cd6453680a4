// bf16 autocast for a scope, on the device type a run computes on.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace xl::runtime {

/// bf16 autocast on `device`'s type (CUDA or the CPU) for the scope of the guard; a no-op when
/// disabled. The fp32 islands (softmax, log-softmax, LayerNorm, losses) are the models' own
/// casts, so both device types compute the same way.
class AutocastGuard {
 public:
  AutocastGuard(const c10::Device& device, bool bf16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kHalf;
};

} // namespace xl::runtime
