#include "xl/runtime/autocast.h"

#include <ATen/autocast_mode.h>

namespace xl::runtime {

AutocastGuard::AutocastGuard(const c10::Device& device, bool bf16)
    : active_(bf16), type_(device.type()) {
  if (!active_) {
    return;
  }
  previous_enabled_ = at::autocast::is_autocast_enabled(type_);
  previous_dtype_ = at::autocast::get_autocast_dtype(type_);
  at::autocast::set_autocast_enabled(type_, true);
  at::autocast::set_autocast_dtype(type_, at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) {
    return;
  }
  if (at::autocast::decrement_nesting() == 0) {
    at::autocast::clear_cache();
  }
  at::autocast::set_autocast_enabled(type_, previous_enabled_);
  at::autocast::set_autocast_dtype(type_, previous_dtype_);
}

} // namespace xl::runtime
