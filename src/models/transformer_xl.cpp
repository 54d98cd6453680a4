#include "xl/models/transformer_xl.h"

#include <set>

#include "xl/nn/masks.h"

namespace xl::models {

int64_t count_parameters(torch::nn::Module& module) {
  std::set<const void*> seen;
  int64_t total = 0;
  for (const auto& p : module.parameters()) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) {
      total += p.numel();
    }
  }
  return total;
}

TransformerXLImpl::TransformerXLImpl(TransformerXLOptions options_)
    : options(std::move(options_)) {
  const auto& o = options;
  TORCH_CHECK(
      o.n_layer() >= 1 && o.n_head() >= 1 && o.d_head() >= 1,
      "Transformer-XL needs at least one layer and head");
  const auto adaptive =
      nn::AdaptiveOptions(o.n_token(), o.d_embed(), o.d_model())
          .cutoffs(o.cutoffs())
          .div_val(o.div_val());
  word_emb = register_module("word_emb", nn::AdaptiveEmbedding(adaptive));
  pos_emb = register_module(
      "pos_emb",
      nn::SinusoidEmbedding(nn::SinusoidEmbeddingOptions(o.d_model())));
  drop = register_module("drop", torch::nn::Dropout(o.dropout()));
  if (o.relative()) {
    const std::vector<int64_t> shape = o.untie_r()
        ? std::vector<int64_t>{o.n_layer(), o.n_head(), o.d_head()}
        : std::vector<int64_t>{o.n_head(), o.d_head()};
    r_w_bias = register_parameter("r_w_bias", torch::empty(shape));
    r_r_bias = register_parameter("r_r_bias", torch::empty(shape));
  }
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.n_layer(); ++i) {
    layers->push_back(
        nn::DecoderLayer(nn::DecoderLayerOptions(
                             o.d_model(), o.n_head(), o.d_head(), o.d_inner())
                             .dropout(o.dropout())
                             .dropatt(o.dropatt())
                             .pre_lnorm(o.pre_lnorm())
                             .layer_norm_eps(o.layer_norm_eps())
                             .relative(o.relative())));
  }
  crit = register_module(
      "crit",
      nn::AdaptiveLogSoftmax(nn::AdaptiveSoftmaxOptions(adaptive)
                                 .tie_weight(o.tie_weight())
                                 .tie_projs(o.tie_projs())));
  crit->tie_to(*word_emb);
  init_weights();
}

torch::Tensor TransformerXLImpl::u(int64_t layer) const {
  return options.untie_r() ? r_w_bias[layer] : r_w_bias;
}

torch::Tensor TransformerXLImpl::v(int64_t layer) const {
  return options.untie_r() ? r_r_bias[layer] : r_r_bias;
}

void TransformerXLImpl::init_weights() {
  torch::NoGradGuard no_grad;
  const auto& o = options;
  const auto init = [&](torch::Tensor& t) {
    if (o.uniform_init()) {
      t.uniform_(-o.init_range(), o.init_range());
    } else {
      t.normal_(0.0, o.init_std());
    }
  };
  const auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
        s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // The kimiyoung/Hugging Face rules: LayerNorm gain ~ N(1, init_std);
  // projections ~ N(0, proj_init_std); biases 0 (u and v are not biases in that
  // sense); the rest init().
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    if (name.find("layer_norm") != std::string::npos) {
      if (ends_with(name, "weight")) {
        p.normal_(1.0, o.init_std());
      } else {
        p.zero_();
      }
    } else if (name == "r_w_bias" || name == "r_r_bias") {
      init(p);
    } else if (
        ends_with(name, "bias") ||
        name.find("out_bias_") != std::string::npos) {
      p.zero_();
    } else if (name.find("proj") != std::string::npos) {
      p.normal_(0.0, o.proj_init_std());
    } else {
      init(p);
    }
  }
}

LMOutput TransformerXLImpl::forward(
    const torch::Tensor& input,
    const torch::Tensor& target,
    const nn::Memory& mems,
    bool return_log_probs) {
  const auto& o = options;
  const Lengths& len = o.lengths();
  TORCH_CHECK(
      input.dim() == 2 && target.dim() == 2 &&
          target.size(1) == input.size(1) && target.size(0) <= input.size(0),
      "expected input [L, B] and target [T <= L, B], got ",
      input.sizes(),
      " and ",
      target.sizes());
  TORCH_CHECK(
      mems.empty() || static_cast<int64_t>(mems.size()) == o.n_layer(),
      "expected ",
      o.n_layer(),
      " memory tensors, got ",
      mems.size());
  const int64_t qlen = input.size(0);
  const int64_t bsz = input.size(1);
  const int64_t mlen = mems.empty() ? 0 : mems[0].size(0);
  const int64_t klen = mlen + qlen;
  const auto embedded = word_emb(input); // [L, B, D]
  const auto mask =
      nn::causal_mask(qlen, mlen, len.same_length, len.mem_len, input.device());

  torch::Tensor core;
  torch::Tensor r;
  if (o.relative()) {
    const auto positions = nn::relative_positions(
        klen,
        len.clamp_len,
        torch::dtype(torch::kFloat).device(input.device()));
    r = drop(pos_emb(positions));
    core = drop(embedded);
  } else {
    const auto positions =
        torch::arange(qlen, torch::dtype(torch::kFloat).device(input.device()));
    core = drop(embedded + pos_emb(positions).unsqueeze(1));
  }
  std::vector<torch::Tensor> hiddens;
  hiddens.reserve(static_cast<size_t>(o.n_layer()));
  for (int64_t i = 0; i < o.n_layer(); ++i) {
    hiddens.push_back(core);
    const auto mem =
        mems.empty() ? torch::Tensor() : mems[static_cast<size_t>(i)];
    const auto layer =
        layers->ptr<nn::DecoderLayerImpl>(static_cast<size_t>(i));
    core = o.relative() ? layer->forward(core, mask, mem, r, u(i), v(i))
                        : layer->forward(core, mask, mem, r, {}, {});
  }
  core = drop(core);

  LMOutput out;
  out.mems = nn::update_memory(mems, hiddens, len.mem_len, len.ext_len);
  const int64_t tgt_len = target.size(0);
  const auto pred =
      core.narrow(0, qlen - tgt_len, tgt_len).reshape({-1, o.d_model()});
  const auto log_probs = crit(pred, target.reshape({-1}));
  out.nll_sum = -log_probs.sum();
  out.count = tgt_len * bsz;
  if (return_log_probs) {
    out.log_probs = log_probs.view({tgt_len, bsz});
  }
  return out;
}

} // namespace xl::models
