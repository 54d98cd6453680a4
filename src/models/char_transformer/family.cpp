#include "xl/models/char_transformer/family.h"

#include "xl/config/visitors.h"
#include "xl/models/char_transformer/config.h"
#include "xl/models/kit.h"

namespace xl::models {

CharTransformerOptions char_transformer_options(const config::Config& c, int64_t n_token) {
  const config::ModelConfig& m = c.model;
  const auto& x = m.section<CharTransformerConfig>();
  CharLosses losses;
  losses.multiple_positions = x.multiple_positions;
  losses.schedule.n_layer = m.n_layer;
  losses.schedule.max_step = c.train.max_step;
  losses.schedule.intermediate = x.intermediate_layers;
  losses.schedule.decay = x.layer_decay;
  losses.schedule.mean = x.layer_reduce == LayerReduce::kMean;
  losses.target_weights = x.target_weights;
  return CharTransformerOptions(
             n_token,
             stack_shape(
                 m,
                 nn::DecoderLayerOptions(attention_options(m), m.d_inner)
                     .inner_dropout(x.relu_dropout))
                 .checkpoint_layers(c.train.activation_checkpointing))
      .n_ctx(x.n_ctx)
      .per_layer_positions(x.positions == PositionTables::kPerLayer)
      .losses(losses);
}

namespace {

LanguageModel build(const config::Config& config, int64_t n_token) {
  return std::make_shared<CharTransformerImpl>(char_transformer_options(config, n_token));
}

// Bytes only, no context past the windows.
sources::TokenSourceOptions token_source() {
  sources::TokenSourceOptions options;
  options.bytes_only = true;
  return options;
}

std::unique_ptr<sources::Dataset> open_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer) {
  return sources::open_token_dataset(config, std::move(tokenizer), token_source());
}

std::unique_ptr<sources::Dataset> random_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size) {
  return sources::random_token_dataset(config, n_token, size, token_source());
}

// The character transformer: per-layer (or one) position tables, the output head and the
// training heads, all alive at the first step: n x targets heads with intermediate layers.
MemoryShape memory_shape(const config::Config& c, int64_t n_token) {
  const CharTransformerOptions o = char_transformer_options(c, n_token);
  MemoryShape f(static_cast<double>(o.stack().n_layer()), o.stack().layer());
  const LayerShape& l = f.layer;
  const auto v = static_cast<double>(o.n_token());
  const double heads = (o.losses().schedule.intermediate ? f.n_layer : 1) *
      static_cast<double>(o.losses().target_weights.size());
  const double positions =
      (o.per_layer_positions() ? f.n_layer : 1) * static_cast<double>(o.n_ctx()) * l.d;
  f.parameters = v * l.d + positions + f.n_layer * l.parameters() +
      (o.stack().layer().attention().pre_lnorm() ? 2 * l.d : 0) + heads * (l.d * v + v);
  f.largest = std::max({v * l.d, positions, l.largest()});
  f.classes = v;
  f.training_rows =
      heads * (o.losses().multiple_positions ? static_cast<double>(c.train.tgt_len) : 1);
  return f;
}

std::optional<int64_t> position_limit(const config::Config& config) {
  return config.model.section<CharTransformerConfig>().n_ctx;
}

// Inside this namespace, its functions hide the models:: ones of the same names.
ModelFamily describe() {
  ModelFamily f;
  f.name = "char_transformer";
  f.config.section = config::section_of<CharTransformerConfig>();
  f.config.validate = validate_char_transformer;
  f.config.carries_memory = false; // nothing is carried between windows
  f.build = build;
  f.open_dataset = open_dataset;
  f.random_dataset = random_dataset;
  f.memory_shape = memory_shape;
  f.no_hf_model =
      "Hugging Face has no model for the character transformer (Al-Rfou et al.); export "
      "Transformer-XL or XLNet runs";
  f.position_limit = position_limit;
  return f;
}

} // namespace

ModelFamily char_transformer_family() {
  return describe();
}

} // namespace xl::models
