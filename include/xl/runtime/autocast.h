// bf16 autocast for a scope, on the device type a run computes on.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace torch::nn {
class LinearImpl;
} // namespace torch::nn

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

/// Keeps autocast's bf16 copies of the weights from one AutocastGuard to the next for the life of
/// the scope (autocast drops them when its outermost guard ends). Only for work that does not
/// change the weights, as an evaluation, which then casts each weight once instead of once per
/// segment, at the price of a bf16 copy of the model until the scope ends. A no-op when disabled.
class KeptWeightCasts {
 public:
  explicit KeptWeightCasts(bool bf16);
  ~KeptWeightCasts();
  KeptWeightCasts(const KeptWeightCasts&) = delete;
  KeptWeightCasts& operator=(const KeptWeightCasts&) = delete;

  /// Whether this thread is inside an enabled scope.
  static bool active();

 private:
  bool active_ = false;
};

/// `t` in `dtype`: `t` itself when it already is, without the operator call (and, on a GPU, the
/// dispatch) that to() makes even then.
inline at::Tensor in_dtype(const at::Tensor& t, at::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

/// A float32 weight in `dtype` for a matrix product: inside KeptWeightCasts, autocast's kept copy
/// of a whole parameter (made once); otherwise a new copy.
at::Tensor cast_weight(const at::Tensor& weight, at::ScalarType dtype);

/// `weight` as a product under autocast on `device` reads it: inside KeptWeightCasts, the kept
/// copy in autocast's dtype; otherwise `weight` itself, for autocast to cast. LibTorch's linear
/// multiplies by a transposed view, of which autocast keeps no copy.
at::Tensor product_weight(const at::Tensor& weight, c10::DeviceType device);

/// LibTorch's functional linear, its weight through product_weight: the same numbers, with one
/// cast of the weight per KeptWeightCasts scope. x [..., in], weight [out, in] -> [..., out].
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias = {});

/// `layer`'s forward through the linear above: layer(x) with one cast of its weight per scope.
at::Tensor linear(const torch::nn::LinearImpl& layer, const at::Tensor& x);

} // namespace xl::runtime
