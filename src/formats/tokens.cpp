#include "xl/formats/tokens.h"

#include "xl/util/error.h"

namespace xl::formats {

std::vector<TokenOrigin> Tokens::origins(int64_t /*start*/, int64_t /*length*/) const {
  throw InternalError(name() + " keeps no origins of its tokens");
}

TokenTensor::TokenTensor(torch::Tensor ids, std::string name)
    : ids_(std::move(ids)), name_(std::move(name)) {
  TORCH_CHECK(
      ids_.dim() == 1 && ids_.scalar_type() == torch::kLong && ids_.is_cpu(),
      "TokenTensor needs a 1-D int64 CPU tensor, got ",
      ids_.sizes(),
      " ",
      ids_.scalar_type());
}

void check_slice(int64_t start, int64_t length, int64_t size, const std::string& name) {
  TORCH_CHECK(
      start >= 0 && length >= 0 && start + length <= size,
      "slice [",
      start,
      ", ",
      start + length,
      ") out of range for ",
      name,
      " with ",
      size,
      " tokens");
}

torch::Tensor TokenTensor::slice(int64_t start, int64_t length) const {
  check_slice(start, length, size(), name_);
  return ids_.narrow(0, start, length).clone();
}

} // namespace xl::formats
