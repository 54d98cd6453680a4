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

} // namespace xl::util
