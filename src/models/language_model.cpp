#include "xl/models/language_model.h"

#include <set>

namespace xl::models {

void add_lm_term(
    ModelOutput& out,
    const sources::Batch& batch,
    const torch::Tensor& log_probs,
    const ForwardArgs& args) {
  const auto& mask = batch.target_mask;
  LossTerm lm{
      "lm",
      mask.defined() ? -torch::where(mask, log_probs, 0.0).sum() : -log_probs.sum(),
      mask.defined() ? batch.n_targets : log_probs.numel(),
      1.0,
      TermKind::kTokenNll};
  out.terms.push_back(std::move(lm));
  if (args.log_probs) {
    out.log_probs = log_probs;
  }
}

void check_lm_batch(const sources::Batch& batch, const ForwardArgs& args, const char* family) {
  const auto& tokens = batch.tokens;
  const auto& targets = batch.targets;
  TORCH_CHECK(
      tokens.defined() && tokens.dim() == 2 &&
          (targets.defined() ? targets.dim() == 2 && targets.size(1) == tokens.size(1) &&
                   targets.size(0) <= tokens.size(0)
                             : args.next_token),
      family,
      " expects tokens [L, B] and targets [T <= L, B], got ",
      tokens.defined() ? tokens.sizes() : torch::IntArrayRef{},
      " and ",
      targets.defined() ? targets.sizes() : torch::IntArrayRef{});
}

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
