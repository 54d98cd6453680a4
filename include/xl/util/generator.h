// A random generator's state, read and set under the generator's lock, as LibTorch's kernels
// draw from it. Generators are shared handles: setting a copy's state sets the original's.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

namespace xl::util {

/// A copy of `generator`'s state.
at::Tensor generator_state(at::Generator generator);

/// Sets `generator`'s state, which every handle to the same generator then has.
void set_generator_state(at::Generator generator, const at::Tensor& state);

/// Puts `generator`'s state back as it was when the guard was made: what a scope draws from it
/// (a model's initialisation before its weights are loaded) leaves the program's random
/// sequence as it was.
class KeptGeneratorState {
 public:
  explicit KeptGeneratorState(at::Generator generator)
      : generator_(std::move(generator)), state_(generator_state(generator_)) {}
  ~KeptGeneratorState() {
    set_generator_state(generator_, state_);
  }
  KeptGeneratorState(const KeptGeneratorState&) = delete;
  KeptGeneratorState& operator=(const KeptGeneratorState&) = delete;

 private:
  at::Generator generator_;
  at::Tensor state_;
};

} // namespace xl::util
