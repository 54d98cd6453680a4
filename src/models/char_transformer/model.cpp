#include "xl/models/char_transformer/model.h"

#include <fmt/format.h>

#include "xl/models/kit.h"
#include "xl/nn/fp32_islands.h"
#include "xl/nn/learned_positions.h"
#include "xl/nn/masks.h"
#include "xl/nn/vanilla_decoder_layer.h"
#include "xl/runtime/autocast.h"

namespace xl::models {

CharTransformerImpl::CharTransformerImpl(const CharTransformerOptions& options_)
    : options(options_) {
  reset();
}

void CharTransformerImpl::reset() {
  const auto& o = options;
  const int64_t n_layer = o.stack().n_layer();
  const auto& attention = o.stack().layer().attention();
  const auto& losses = o.losses();
  TORCH_CHECK(
      o.n_token() >= 1 && o.n_ctx() >= 1 && !losses.target_weights.empty() &&
          losses.schedule.n_layer == n_layer,
      "char transformer: need a vocabulary, positions and a t+1 weight, and a schedule over the "
      "model's layers; got ",
      o.n_token(),
      " tokens, ",
      n_layer,
      " layers, n_ctx ",
      o.n_ctx(),
      ", ",
      losses.target_weights.size(),
      " target weights, a schedule over ",
      losses.schedule.n_layer,
      " layers");
  const int64_t d_model = attention.d_model();
  word_embedding = register_module("word_embedding", torch::nn::Embedding(o.n_token(), d_model));
  positions = register_module(
      "positions",
      nn::LearnedPositions(
          nn::LearnedPositionsOptions(o.per_layer_positions() ? n_layer : 1, o.n_ctx(), d_model)));
  drop = register_module("drop", nn::Dropout(attention.dropout()));
  layers = register_layer_stack(*this, layers_alike<nn::VanillaDecoderLayer>(o.stack()));
  if (attention.pre_lnorm()) {
    final_norm = register_module(
        "final_norm",
        torch::nn::LayerNorm(
            torch::nn::LayerNormOptions({d_model}).eps(attention.layer_norm_eps())));
  }
  out = register_module("out", torch::nn::Linear(d_model, o.n_token()));
  const auto n_target = static_cast<int64_t>(losses.target_weights.size());
  const bool intermediate = losses.schedule.intermediate && n_layer > 1;
  if (n_target > 1 || intermediate) {
    heads = register_module(
        "heads",
        CharHeads(CharHeadsOptions(d_model, o.n_token(), n_layer)
                      .n_target(n_target)
                      .intermediate(intermediate)));
  }
  reset_parameters();
}

void CharTransformerImpl::reset_parameters() {
  const nn::InitOptions& init = options.stack().init();
  torch::NoGradGuard no_grad;
  init.weight(word_embedding->weight);
  positions->reset_parameters(init);
  layers->reset_parameters<nn::VanillaDecoderLayerImpl>(init);
  if (final_norm) {
    init.layer_norm(final_norm);
  }
  init.linear(out);
  if (heads) {
    heads->reset_parameters(init);
  }
}

int64_t CharTransformerImpl::inference_parameters() const {
  return count_parameters(*this) - (heads ? count_parameters(*heads) : 0);
}

LossTerm CharTransformerImpl::head_term(
    const sources::Batch& batch,
    int64_t layer,
    int64_t offset,
    const torch::Tensor& h,
    int64_t scored,
    double weight,
    torch::Tensor* keep) {
  const int64_t len = h.size(0);
  const int64_t n_targets = batch.targets.size(0);
  // Target rows j whose t+1+offset target targets[j + offset] is in the window: the last
  // `scored` of them; row j is input position j + len - n_targets.
  const int64_t first = std::max<int64_t>(0, n_targets - scored - offset);
  const int64_t rows = std::max<int64_t>(0, n_targets - offset - first);
  const auto name = layer == options.stack().n_layer() - 1 && offset == 0
      ? std::string("lm")
      : fmt::format("l{}/t+{}", layer + 1, offset + 1);
  if (rows == 0 || weight == 0.0) { // nothing to score, or a stopped layer: no head runs
    return {name, torch::zeros({}, h.options().dtype(torch::kFloat)), 0, 0.0};
  }
  auto x = h.narrow(0, first + len - n_targets, rows);
  if (final_norm) {
    x = nn::layer_norm_fp32(final_norm, x);
  }
  const auto logits = name == "lm" ? runtime::linear(*out, x) : heads(layer, offset, x);
  const auto log_probs = torch::log_softmax(logits.to(torch::kFloat), -1)
                             .gather(2, batch.targets.narrow(0, first + offset, rows).unsqueeze(2))
                             .squeeze(2);
  if (keep != nullptr) {
    *keep = log_probs;
  }
  return {name, -log_probs.sum(), log_probs.numel(), weight};
}

torch::Tensor CharTransformerImpl::layer_forward(
    int64_t l,
    const torch::Tensor& h,
    const torch::Tensor& mask,
    const DecodingCache& cache,
    nn::AttentionCache* slot) {
  auto x = h;
  if (options.per_layer_positions() || l == 0) {
    x = x + positions(options.per_layer_positions() ? l : 0, cache.past, h.size(0));
  }
  return layers->ptr<nn::VanillaDecoderLayerImpl>(static_cast<size_t>(l))
      ->forward(x, mask, cache.stand_in(h), slot);
}

void CharTransformerImpl::add_layer_terms(
    const sources::Batch& batch,
    const ForwardArgs& args,
    int64_t l,
    const torch::Tensor& h,
    double layer_weight,
    ModelOutput& output,
    std::vector<LossTerm>& aux) {
  const auto& losses = options.losses();
  const bool training = is_training();
  const auto& targets = batch.targets;
  const int64_t scored = training && !losses.multiple_positions ? 1
      : targets.defined()                                       ? targets.size(0)
                                                                : 0;
  // Generation without targets runs no head but the next token's.
  const auto n_target = targets.defined() ? static_cast<int64_t>(losses.target_weights.size()) : 0;
  for (int64_t k = 0; k < n_target; ++k) {
    const bool own = l == options.stack().n_layer() - 1 && k == 0;
    if (!own && (!training || !heads || !heads->has(l, k))) {
      continue;
    }
    auto term = head_term(
        batch,
        l,
        k,
        h,
        scored,
        layer_weight * losses.target_weights[static_cast<size_t>(k)],
        own && args.log_probs ? &output.log_probs : nullptr);
    (own ? output.terms : aux).push_back(std::move(term));
  }
}

ModelOutput CharTransformerImpl::forward(
    const sources::Batch& batch,
    const nn::Memory& /*mems*/,
    const ForwardArgs& args) {
  const auto& tokens = batch.tokens;
  check_lm_batch(batch, args, "the char transformer");
  const int64_t len = tokens.size(0);
  const int64_t n_layer = options.stack().n_layer();
  // Evaluation runs the last layer's t+1 head only, on every target.
  std::vector<double> weights(static_cast<size_t>(n_layer), 0.0);
  weights.back() = 1.0;
  if (is_training()) {
    weights = layer_weights(options.losses().schedule, std::max<int64_t>(args.step, 1));
  }
  ModelOutput output;
  std::vector<LossTerm> aux;
  // In generation, a decoding cache holds the keys and values of the `past` positions read
  // before (an evaluation's batches are windows of their own).
  const DecodingCache cache(args, n_layer, tokens.size(1));
  cache.check_fits(len, options.n_ctx(), "the char transformer");
  // A window read whole has the same shapes every call (no cache: past is 0 in a graph).
  const auto stack = layers->forward(
      [this, cache](const std::vector<torch::Tensor>& h, const LayerArgs& a) {
        return std::vector<torch::Tensor>{
            layer_forward(a.index, h[0], a.tensors["mask"], cache, a.cache)};
      },
      StackInput{
          {drop(word_embedding(tokens))},
          {{"mask", cache.causal_mask(len, tokens.device())}},
          {},
          cache.cache,
          true});
  const auto& outs = stack.hiddens; // [L, B, D] each: the input, then every layer's output
  for (int64_t l = 0; l < n_layer; ++l) {
    const auto index = static_cast<size_t>(l);
    add_layer_terms(batch, args, l, outs[index + 1], weights[index], output, aux);
  }
  const auto& h = outs.back();
  for (auto& term : aux) {
    output.terms.push_back(std::move(term));
  }
  if (args.next_token) {
    auto last = h[len - 1]; // [B, D]
    if (final_norm) {
      last = nn::layer_norm_fp32(final_norm, last);
    }
    output.next_log_probs = torch::log_softmax(runtime::linear(*out, last).to(torch::kFloat), -1);
  }
  return output;
}

} // namespace xl::models
