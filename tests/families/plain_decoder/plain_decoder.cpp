#include "families/plain_decoder/plain_decoder.h"

#include <fmt/format.h>

#include "xl/config/config.h"
#include "xl/config/visitors.h"
#include "xl/models/kit.h"
#include "xl/nn/fp32_islands.h"
#include "xl/nn/masks.h"
#include "xl/nn/vanilla_decoder_layer.h"
#include "xl/runtime/autocast.h"

namespace xl::test {

PlainDecoderImpl::PlainDecoderImpl(const PlainDecoderOptions& options_) : options(options_) {
  reset();
}

void PlainDecoderImpl::reset() {
  const auto& o = options;
  const auto& attention = o.stack().layer().attention();
  const int64_t d_model = attention.d_model();
  embedding = register_module("embedding", torch::nn::Embedding(o.n_token(), d_model));
  positions = register_module(
      "positions", nn::LearnedPositions(nn::LearnedPositionsOptions(1, o.n_ctx(), d_model)));
  drop = register_module("drop", torch::nn::Dropout(attention.dropout()));
  layers =
      models::register_layer_stack(*this, models::layers_alike<nn::VanillaDecoderLayer>(o.stack()));
  final_norm = register_module(
      "final_norm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(attention.layer_norm_eps())));
  out = register_module("out", torch::nn::Linear(d_model, o.n_token()));
  reset_parameters();
}

void PlainDecoderImpl::reset_parameters() {
  const nn::InitOptions& init = options.stack().init();
  torch::NoGradGuard no_grad;
  init.weight(embedding->weight);
  positions->reset_parameters(init);
  layers->reset_parameters<nn::VanillaDecoderLayerImpl>(init);
  init.layer_norm(final_norm);
  init.linear(out);
}

models::ModelOutput PlainDecoderImpl::forward(
    const sources::Batch& batch,
    const nn::Memory& /*mems*/,
    const models::ForwardArgs& args) {
  const auto& tokens = batch.tokens;
  models::check_lm_batch(batch, args, "the plain decoder");
  const int64_t len = tokens.size(0);
  const models::DecodingCache cache(args, options.stack().n_layer(), tokens.size(1));
  cache.check_fits(len, options.n_ctx(), "the plain decoder");
  const auto embedded = drop(embedding(tokens) + positions(0, cache.past, len)); // [L, B, D]
  const auto h =
      layers
          ->forward(
              [this, cache](const std::vector<torch::Tensor>& in, const models::LayerArgs& a) {
                return std::vector<torch::Tensor>{
                    layers->ptr<nn::VanillaDecoderLayerImpl>(static_cast<size_t>(a.index))
                        ->forward(in[0], a.tensors["mask"], cache.stand_in(in[0]), a.cache)};
              },
              models::StackInput{
                  {embedded},
                  {{"mask", cache.causal_mask(len, tokens.device())}},
                  {},
                  cache.cache,
                  true})
          .streams[0];
  const auto log_probs = [&](const torch::Tensor& x) { // [..., D] -> [..., V]
    const auto logits = runtime::linear(*out, nn::layer_norm_fp32(final_norm, x));
    return torch::log_softmax(logits.to(torch::kFloat), -1);
  };
  models::ModelOutput output;
  if (args.next_token) {
    output.next_log_probs = log_probs(h[len - 1]);
    return output;
  }
  const int64_t t = batch.targets.size(0);
  const auto scored = log_probs(h.narrow(0, len - t, t)) // [T, B, V]
                          .gather(-1, batch.targets.unsqueeze(-1))
                          .squeeze(-1);
  models::add_lm_term(output, batch, scored, args);
  return output;
}

namespace {

/// model.plain_decoder: the keys only the plain decoder has.
struct PlainDecoderConfig {
  int64_t n_ctx = 64;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    v("n_ctx",
      s.n_ctx,
      "rows of the learned position table: the longest window (train.tgt_len)",
      config::at_least(1));
  }
};

void validate(const config::Config& c) {
  const int64_t n_ctx = c.model.section<PlainDecoderConfig>().n_ctx;
  if (c.train.tgt_len > n_ctx) {
    config::fail_rule(
        c,
        "train.tgt_len",
        fmt::format(
            "windows must fit the position table: at most model.plain_decoder.n_ctx = {}, "
            "found {}",
            n_ctx,
            c.train.tgt_len));
  }
}

PlainDecoderOptions options_of(const config::Config& c, int64_t n_token) {
  const auto& m = c.model;
  return PlainDecoderOptions(
             n_token,
             models::stack_shape(
                 m, nn::DecoderLayerOptions(models::attention_options(m), m.d_inner))
                 .checkpoint_layers(c.train.activation_checkpointing))
      .n_ctx(m.section<PlainDecoderConfig>().n_ctx);
}

// The embedding, the position table, the layers, the final LayerNorm and the output layer.
models::MemoryShape memory_shape(const config::Config& c, int64_t n_token) {
  const PlainDecoderOptions o = options_of(c, n_token);
  models::MemoryShape f(static_cast<double>(o.stack().n_layer()), o.stack().layer());
  const models::LayerShape& l = f.layer;
  const auto v = static_cast<double>(n_token);
  f.parameters = v * l.d + static_cast<double>(o.n_ctx()) * l.d + f.n_layer * l.parameters() +
      2 * l.d + l.d * v + v;
  f.largest = std::max(v * l.d, l.largest());
  f.classes = v;
  f.training_rows = static_cast<double>(c.train.tgt_len);
  return f;
}

} // namespace

models::ModelFamily plain_decoder_family() {
  models::ModelFamily f;
  f.name = "plain_decoder";
  f.config.section = config::section_of<PlainDecoderConfig>();
  f.config.validate = validate;
  f.config.carries_memory = false;
  f.build = [](const config::Config& c, int64_t n_token) -> models::LanguageModel {
    return std::make_shared<PlainDecoderImpl>(options_of(c, n_token));
  };
  f.open_dataset = [](const config::Config& c, std::shared_ptr<const formats::Tokenizer> t) {
    return sources::open_token_dataset(c, std::move(t));
  };
  f.random_dataset = [](const config::Config& c, int64_t n_token, int64_t size) {
    return sources::random_token_dataset(c, n_token, size);
  };
  f.memory_shape = memory_shape;
  f.no_hf_model = "Hugging Face has no model for the plain decoder (a test family)";
  f.position_limit = [](const config::Config& c) -> std::optional<int64_t> {
    return c.model.section<PlainDecoderConfig>().n_ctx;
  };
  return f;
}

} // namespace xl::test
