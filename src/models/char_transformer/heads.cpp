#include "xl/models/char_transformer/heads.h"
#include "xl/runtime/autocast.h"

namespace xl::models {

CharHeadsImpl::CharHeadsImpl(const CharHeadsOptions& options_) : options(options_) {
  reset();
}

void CharHeadsImpl::reset() {
  const auto& o = options;
  TORCH_CHECK(
      o.n_layer() >= 1 && o.n_target() >= 1,
      "char heads need a layer and a target, got ",
      o.n_layer(),
      " layers and ",
      o.n_target(),
      " targets");
  heads = register_module("heads", torch::nn::ModuleList());
  for (int64_t l = 0; l < o.n_layer(); ++l) {
    for (int64_t k = 0; k < o.n_target(); ++k) {
      if (index(l, k) >= 0) {
        heads->push_back(torch::nn::Linear(o.d_model(), o.n_token()));
      }
    }
  }
}

void CharHeadsImpl::reset_parameters(const nn::InitOptions& init) {
  for (size_t i = 0; i < heads->size(); ++i) {
    init.linear(torch::nn::Linear(heads->ptr<torch::nn::LinearImpl>(i)));
  }
}

int64_t CharHeadsImpl::index(int64_t layer, int64_t offset) const {
  const auto& o = options;
  const int64_t last = o.n_layer() - 1;
  if (layer < 0 || layer > last || offset < 0 || offset >= o.n_target() ||
      (layer == last && offset == 0) || (!o.intermediate() && layer < last)) {
    return -1;
  }
  // Heads before this one: every earlier layer's (all of them, or none without intermediate
  // heads), then this layer's earlier offsets; the last layer has no t+1 head here.
  const int64_t earlier_layers = o.intermediate() ? layer : 0;
  return earlier_layers * o.n_target() + offset - (layer == last ? 1 : 0);
}

bool CharHeadsImpl::has(int64_t layer, int64_t offset) const {
  return index(layer, offset) >= 0;
}

torch::Tensor CharHeadsImpl::forward(int64_t layer, int64_t offset, const torch::Tensor& h) {
  const int64_t i = index(layer, offset);
  TORCH_CHECK(i >= 0, "no training head for layer ", layer, ", target t+", offset + 1);
  return runtime::linear(*heads->ptr<torch::nn::LinearImpl>(static_cast<size_t>(i)), h);
}

} // namespace xl::models
