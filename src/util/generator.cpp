#include "xl/util/generator.h"

#include <mutex>

namespace xl::util {

at::Tensor generator_state(at::Generator generator) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(at::Generator generator, const at::Tensor& state) {
  const std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

} // namespace xl::util
