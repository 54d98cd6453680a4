#include "xl/runtime/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/modules/linear.h>

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

namespace {

thread_local int kept_casts_depth = 0;

} // namespace

KeptWeightCasts::KeptWeightCasts(bool bf16) : active_(bf16) {
  if (active_) {
    // One level of autocast's nesting held open: the guards inside never reach the outermost
    // exit that clears its cache.
    at::autocast::increment_nesting();
    ++kept_casts_depth;
  }
}

KeptWeightCasts::~KeptWeightCasts() {
  if (!active_) {
    return;
  }
  --kept_casts_depth;
  if (at::autocast::decrement_nesting() == 0) {
    at::autocast::clear_cache();
  }
}

bool KeptWeightCasts::active() {
  return kept_casts_depth > 0;
}

at::Tensor cast_weight(const at::Tensor& weight, at::ScalarType dtype) {
  if (weight.scalar_type() == dtype) {
    return weight;
  }
  // autocast keeps casts of float32 leaves that require grad, made with gradient history, so a
  // kept copy is right under no_grad and with gradients alike.
  return KeptWeightCasts::active()
      ? at::autocast::cached_cast(dtype, weight, weight.device().type())
      : weight.to(dtype);
}

at::Tensor product_weight(const at::Tensor& weight, c10::DeviceType device) {
  if (!KeptWeightCasts::active() || !at::autocast::is_autocast_enabled(device)) {
    return weight;
  }
  return cast_weight(weight, at::autocast::get_autocast_dtype(device));
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return torch::nn::functional::linear(x, product_weight(weight, x.device().type()), bias);
}

at::Tensor linear(const torch::nn::LinearImpl& layer, const at::Tensor& x) {
  return linear(x, layer.weight, layer.bias);
}

} // namespace xl::runtime
