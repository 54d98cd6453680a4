#include "xl/models/transformer_xl/family.h"

#include <fmt/format.h>

#include "xl/config/visitors.h"
#include "xl/models/kit.h"
#include "xl/models/transformer_xl/config.h"
#include "xl/models/transformer_xl/flops.h"
#include "xl/models/transformer_xl/hf.h"
#include "xl/util/error.h"

namespace xl::models {

TransformerXLOptions transformer_xl_options(const config::Config& c, int64_t n_token) {
  const config::ModelConfig& m = c.model;
  const auto& x = m.section<TransformerXLConfig>();
  if (!x.cutoffs.empty() && x.cutoffs.back() >= n_token) {
    throw ConfigError(fmt::format(
        "model.transformer_xl.cutoffs: the last cutoff {} must be below the vocabulary size {}",
        x.cutoffs.back(),
        n_token));
  }
  std::vector<bool> tie_projs = x.tie_projs;
  if (tie_projs.empty()) {
    // kimiyoung's default for adaptive softmax: every projection but the head's is shared.
    tie_projs.assign(x.cutoffs.size() + 1, true);
    tie_projs[0] = false;
  }
  const auto attention = attention_options(m);
  const auto adaptive = nn::AdaptiveOptions(n_token, x.d_embed.value_or(m.d_model), m.d_model)
                            .cutoffs(x.cutoffs)
                            .div_val(x.div_val);
  TransformerXLLengths lengths;
  lengths.mem_len = x.mem_len;
  lengths.ext_len = x.ext_len;
  lengths.clamp_len = x.clamp_len;
  lengths.same_length = x.same_length;
  return TransformerXLOptions(
             stack_shape(m, nn::DecoderLayerOptions(attention, m.d_inner))
                 .init(init_options(m).proj_std(x.proj_init_std))
                 .checkpoint_layers(c.train.activation_checkpointing),
             nn::AdaptiveSoftmaxOptions(adaptive).tie_weight(x.tie_weight).tie_projs(tie_projs))
      .untie_r(x.untie_r)
      .relative(x.attn_type == AttnType::kRelative)
      .learned_positions(x.attn_type == AttnType::kLearned)
      .n_ctx(x.n_ctx.value_or(x.mem_len + c.train.tgt_len))
      .lengths(lengths);
}

namespace {

LanguageModel build(const config::Config& config, int64_t n_token) {
  return std::make_shared<TransformerXLImpl>(transformer_xl_options(config, n_token));
}

bool trained_without_memory(const config::Config& c) {
  const auto source = c.sources.find("eval.mem_len");
  const bool asked = source != c.sources.end() && source->second.file.rfind("--set", 0) == 0;
  return c.model.section<TransformerXLConfig>().mem_len == 0 && !asked;
}

std::string eval_span_note(const config::Config& config) {
  if (!trained_without_memory(config) || config.eval.mem_len.value_or(0) <= 0) {
    return "";
  }
  return fmt::format(
      "the model was trained without memory (model.transformer_xl.mem_len 0): evaluated "
      "without one, not with eval.mem_len {} (--set eval.mem_len={} asks for it)",
      *config.eval.mem_len,
      *config.eval.mem_len);
}

// Words or bytes, with model.transformer_xl.ext_len tokens of context past each segment.
sources::TokenSourceOptions token_source(const config::Config& config) {
  sources::TokenSourceOptions options;
  options.ext_len = config.model.section<TransformerXLConfig>().ext_len;
  return options;
}

std::unique_ptr<sources::Dataset> open_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer) {
  return sources::open_token_dataset(config, std::move(tokenizer), token_source(config));
}

std::unique_ptr<sources::Dataset> random_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size) {
  return sources::random_token_dataset(config, n_token, size, token_source(config));
}

// Transformer-XL: the layers, u/v biases or learned tables, and the adaptive input and softmax
// (tied tables and projections once); the softmax's head scores every position over the
// shortlist and one class per tail.
MemoryShape memory_shape(const config::Config& c, int64_t n_token) {
  const TransformerXLOptions o = transformer_xl_options(c, n_token);
  MemoryShape f(static_cast<double>(o.stack().n_layer()), o.stack().layer());
  const LayerShape& l = f.layer;
  const double positions =
      o.learned_positions() ? f.n_layer * static_cast<double>(o.n_ctx()) * l.d : 0;
  f.parameters = f.n_layer * l.parameters(o.relative() ? 1 : 0) +
      (o.relative() ? 2 * l.hd * (o.untie_r() ? f.n_layer : 1) : 0) + positions;
  f.largest = std::max(positions, l.largest());
  const nn::AdaptiveSoftmaxOptions& out = o.output();
  const nn::AdaptiveOptions& a = out.adaptive();
  const auto bounds = a.bounds();
  const size_t bins = bounds.size() - 1;
  const size_t tables = a.div_val() == 1 ? 1 : bins;
  const auto proj = [&](size_t table) {
    return a.has_proj(table) ? static_cast<double>(a.d_proj() * a.bin_dim(table)) : 0.0;
  };
  for (size_t i = 0; i < tables; ++i) {
    const auto rows =
        static_cast<double>(a.div_val() == 1 ? a.n_token() : bounds[i + 1] - bounds[i]);
    const double table = rows * static_cast<double>(a.bin_dim(i));
    f.parameters += table + proj(i) + rows + (out.tie_weight() ? 0 : table);
    f.largest = std::max(f.largest, table);
  }
  for (size_t i = 0; i < bins; ++i) {
    const bool tied = i < out.tie_projs().size() && out.tie_projs()[i];
    f.parameters += tied ? 0 : proj(a.div_val() == 1 ? 0 : i);
  }
  const auto clusters = static_cast<double>(bins - 1);
  f.parameters += clusters * static_cast<double>(a.d_embed() + 1);
  f.mem_len = static_cast<double>(o.lengths().mem_len + o.lengths().ext_len);
  f.classes = static_cast<double>(bounds[1]) + clusters;
  f.training_rows = static_cast<double>(c.train.tgt_len);
  return f;
}

double training_flops(const config::Config& config, int64_t n_token) {
  return training_flops_per_token(config, n_token, uniform_bin_share(config, n_token));
}

double evaluation_flops(
    const config::Config& config,
    int64_t n_token,
    int64_t tgt_len,
    int64_t mem_len,
    bool projections_kept) {
  return evaluation_flops_per_token(
      config, n_token, uniform_bin_share(config, n_token), tgt_len, mem_len, projections_kept);
}

nlohmann::json hf_config(const config::Config& config, const sources::Dataset& dataset) {
  return transfo_xl_config(config, dataset.vocab_size(), dataset.text_vocab().index("<eos>"));
}

std::optional<std::vector<HFTensor>> hf_model_tensors(LanguageModelImpl& model) {
  auto* txl = dynamic_cast<TransformerXLImpl*>(&model);
  if (txl == nullptr) {
    return std::nullopt;
  }
  return hf_tensors(*txl);
}

void import_hf(
    LanguageModelImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options) {
  import_hf_transfo_xl(dynamic_cast<TransformerXLImpl&>(model), weights, options);
}

// Learned position tables hold n_ctx positions; relative and absolute sinusoids any.
std::optional<int64_t> position_limit(const config::Config& config) {
  const auto& x = config.model.section<TransformerXLConfig>();
  if (x.attn_type != AttnType::kLearned) {
    return std::nullopt;
  }
  return x.n_ctx.value_or(x.mem_len + config.train.tgt_len);
}

// Inside this namespace, its functions hide the models:: ones of the same names.
ModelFamily describe() {
  ModelFamily f;
  f.name = "transformer_xl";
  f.config.section = config::section_of<TransformerXLConfig>();
  f.config.validate = validate_transformer_xl;
  f.build = build;
  f.eval_span = transformer_xl_eval_span;
  f.eval_span_note = eval_span_note;
  f.open_dataset = open_dataset;
  f.random_dataset = random_dataset;
  f.memory_shape = memory_shape;
  f.training_flops = training_flops;
  f.evaluation_flops = evaluation_flops;
  f.hf_config = hf_config;
  f.hf_tensors = hf_model_tensors;
  f.import_hf = import_hf;
  f.position_limit = position_limit;
  return f;
}

} // namespace

Span transformer_xl_eval_span(const config::Config& c, bool validation) {
  Span span;
  const auto& x = c.model.section<TransformerXLConfig>();
  const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
  const int64_t kept_span = x.mem_len + c.train.tgt_len - tgt_len;
  span.ext_len = x.ext_len;
  if (validation) {
    span.mem_len = kept_span;
    span.clamp_len = x.clamp_len;
    span.same_length = x.same_length;
  } else if (trained_without_memory(c)) {
    span.mem_len = kept_span;
    span.clamp_len = c.eval.clamp_len.value_or(x.clamp_len);
    span.same_length = kept_span > 0 && x.same_length;
  } else {
    span.mem_len = c.eval.mem_len.value_or(kept_span);
    span.clamp_len = c.eval.clamp_len.value_or(x.clamp_len);
    span.same_length = c.eval.same_length.value_or(x.same_length);
  }
  return span;
}

ModelFamily transformer_xl_family() {
  return describe();
}

} // namespace xl::models
