#include "xl/models/language_model.h"

#include <set>

namespace xl::models {

int64_t count_parameters(const torch::nn::Module& module) {
  std::set<const void*> seen;
  int64_t total = 0;
  for (const auto& p : module.parameters()) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) {
      total += p.numel();
    }
  }
  return total;
}

} // namespace xl::models
