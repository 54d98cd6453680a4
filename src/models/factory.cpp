#include "xl/models/factory.h"

#include <fmt/format.h>

#include "xl/util/error.h"

namespace xl::models {

TransformerXLOptions transformer_xl_options(
    const config::ModelConfig& m,
    int64_t n_token) {
  if (!m.cutoffs.empty() && m.cutoffs.back() >= n_token) {
    throw ConfigError(fmt::format(
        "model.cutoffs: the last cutoff {} must be below the vocabulary size {}",
        m.cutoffs.back(),
        n_token));
  }
  std::vector<bool> tie_projs = m.tie_projs;
  if (tie_projs.empty()) {
    // kimiyoung's default for adaptive softmax: every projection but the head's
    // is shared.
    tie_projs.assign(m.cutoffs.size() + 1, true);
    tie_projs[0] = false;
  }
  Lengths lengths;
  lengths.mem_len = m.mem_len;
  lengths.ext_len = m.ext_len;
  lengths.clamp_len = m.clamp_len;
  lengths.same_length = m.same_length;
  return TransformerXLOptions(
             n_token, m.n_layer, m.n_head, m.d_model, m.d_head, m.d_inner)
      .d_embed(m.d_embed.value_or(m.d_model))
      .dropout(m.dropout)
      .dropatt(m.dropatt)
      .pre_lnorm(m.pre_lnorm)
      .untie_r(m.untie_r)
      .relative(m.attn_type == "relative")
      .lengths(lengths)
      .cutoffs(m.cutoffs)
      .div_val(m.div_val)
      .tie_weight(m.tie_weight)
      .tie_projs(tie_projs)
      .uniform_init(m.init == "uniform")
      .init_range(m.init_range)
      .init_std(m.init_std)
      .proj_init_std(m.proj_init_std)
      .layer_norm_eps(m.layer_norm_eps);
}

LanguageModel build_model(const config::ModelConfig& model, int64_t n_token) {
  if (model.type == "transformer_xl") {
    return std::make_shared<TransformerXLImpl>(
        transformer_xl_options(model, n_token));
  }
  throw ConfigError("model.type: unknown model family '" + model.type + "'");
}

} // namespace xl::models
