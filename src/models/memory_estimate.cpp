#include "xl/models/memory_estimate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "xl/models/factory.h"
#include "xl/runtime/device.h"
#include "xl/util/error.h"

namespace xl::models {

namespace {

constexpr double kFloat = 4; // bytes per float32 value
constexpr double kRuntime = 0.4 * 1024 * 1024 * 1024;

// The sizes of one layer, as doubles so that absurd configs cannot overflow.
struct LayerShape {
  double d = 0;  // d_model
  double hd = 0; // n_head * d_head
  double h = 0;  // n_head
  double f = 0;  // d_inner
  bool dropatt = false;
  bool dropout = false;

  explicit LayerShape(const nn::DecoderLayerOptions& layer) {
    const auto& a = layer.attention();
    d = static_cast<double>(a.d_model());
    h = static_cast<double>(a.n_head());
    hd = h * static_cast<double>(a.d_head());
    f = static_cast<double>(layer.d_inner());
    dropatt = a.dropatt() > 0;
    dropout = a.dropout() > 0;
  }

  // Attention without biases (q, k, v, o, and `extra` more d x hd projections), two
  // LayerNorms, the feed-forward with biases.
  double parameters(double extra_projections = 0) const {
    return (4 + extra_projections) * d * hd + 4 * d + 2 * d * f + f + d;
  }
  // The largest weight: the fused q/k/v projection or a feed-forward matrix.
  double largest() const {
    return std::max(3 * d * hd, d * f);
  }
};

// One batch through the layers: `b` sequences of `q` queries over `k` keys, `streams`
// attention streams (XLNet's content and query streams: 2).
struct Pass {
  double b = 0;
  double q = 0;
  double k = 0;
  double streams = 1;
};

// What autograd keeps of one layer for the backward pass: the softmax output and the dropped
// probabilities in float32 with the dropout mask in bytes (9 bytes per score; 4 without
// dropatt), the key-side inputs and projections, the query-side terms (biased queries,
// attention vector, output, residual, LayerNorm) and the feed-forward's hidden activations.
double layer_activations(const LayerShape& s, const Pass& p) {
  const double maps = p.b * s.h * p.q * p.k * (s.dropatt ? 9 : 4);
  const double keys = kFloat * p.b * p.k * (s.d + 3 * s.hd);
  const double queries = kFloat * p.b * p.q * (6 * s.d + 2 * s.hd);
  const double hidden = p.b * p.q * s.f * (s.dropout ? 9 : 8);
  return p.streams * (maps + queries + hidden) + keys;
}

// The backward pass of one layer at a time: the gradients of its scores and probabilities.
double layer_backward(const LayerShape& s, const Pass& p) {
  return p.streams * 2 * kFloat * p.b * s.h * p.q * p.k;
}

// The largest transient of one layer without a graph: scores, their shifted or masked copy
// and the probabilities alive at once, the projections, and the feed-forward's hidden layer.
double layer_transient(const LayerShape& s, const Pass& p) {
  const double maps = 3 * kFloat * p.b * s.h * p.q * p.k;
  const double keys = kFloat * p.b * p.k * (s.d + 3 * s.hd);
  const double queries = kFloat * p.b * p.q * (4 * s.d + s.f);
  return p.streams * (maps + queries) + keys;
}

// Activations of `n_layer` layers: all kept, or with activation checkpointing each layer's
// input plus one layer rebuilt at a time.
double kept_activations(
    double n_layer,
    const LayerShape& s,
    const Pass& p,
    bool checkpointing) {
  const double one = layer_activations(s, p);
  if (!checkpointing) {
    return n_layer * one;
  }
  return n_layer * kFloat * p.streams * p.b * p.q * s.d + one;
}

// Logits and log-probabilities of `rows` scored positions over `classes` outputs (and, in
// training, their gradient).
double output_activations(double rows, double classes, bool training) {
  return (training ? 3 : 2) * kFloat * rows * classes;
}

// The recurrence memory of `n_layer` layers: a [mem_len, b, d] tensor per layer and for the
// embeddings, the old one and the new one alive together.
double memory_bytes(double n_layer, double b, double mem_len, double d) {
  return 2 * kFloat * (n_layer + 1) * b * mem_len * d;
}

double optimizer_bytes(const config::TrainConfig& t, double parameters) {
  switch (t.optim) {
    case config::Optim::kAdam:
    case config::Optim::kAdamW:
    case config::Optim::kLamb:
      return kFloat * parameters * 3; // gradient, two moments
    case config::Optim::kSgd:
      return kFloat * parameters * (t.mom > 0 ? 2 : 1);
  }
  return 0;
}

// What the estimate needs of a model family: its layers and parameters, and the shape of a
// batch's attention and output.
struct Family {
  double n_layer = 0;
  LayerShape layer;
  double parameters = 0;
  /// values of the largest parameter tensor
  double largest = 0;
  /// attention streams per layer
  double streams = 1;
  /// training memory (and extended context)
  double mem_len = 0;
  /// outputs per scored row
  double classes = 0;
  /// scored rows per sequence in training, all heads together
  double training_rows = 0;
  /// scored rows per sequence in evaluation (none: as the evaluation mode says)
  std::optional<double> eval_rows;

  Family(double n_layer_, const nn::DecoderLayerOptions& layer_)
      : n_layer(n_layer_), layer(layer_) {}
};

// Transformer-XL: the layers, u/v biases or learned tables, and the adaptive input and softmax
// (tied tables and projections once); the softmax's head scores every position over the
// shortlist and one class per tail.
Family transformer_xl(const config::Config& c, int64_t n_token) {
  const TransformerXLOptions o = transformer_xl_options(c, n_token);
  Family f(static_cast<double>(o.n_layer()), o.layer());
  const LayerShape& l = f.layer;
  const double positions = o.learned_positions()
      ? f.n_layer * static_cast<double>(o.n_ctx()) * l.d
      : 0;
  f.parameters = f.n_layer * l.parameters(o.relative() ? 1 : 0) +
      (o.relative() ? 2 * l.hd * (o.untie_r() ? f.n_layer : 1) : 0) + positions;
  f.largest = std::max(positions, l.largest());
  const nn::AdaptiveSoftmaxOptions& out = o.output();
  const nn::AdaptiveOptions& a = out.adaptive();
  const auto bounds = a.bounds();
  const size_t bins = bounds.size() - 1;
  const size_t tables = a.div_val() == 1 ? 1 : bins;
  const auto proj = [&](size_t table) {
    return a.has_proj(table)
        ? static_cast<double>(a.d_proj() * a.bin_dim(table))
        : 0.0;
  };
  for (size_t i = 0; i < tables; ++i) {
    const auto rows = static_cast<double>(
        a.div_val() == 1 ? a.n_token() : bounds[i + 1] - bounds[i]);
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

// XLNet: per layer r_net and the segment embeddings besides q, k, v, o; the r_w, r_r, r_s
// biases shared or per layer; the tied LM head's bias or the classification head. Two
// streams; the LM scores num_predict rows per sequence.
Family xlnet(const config::Config& c, int64_t n_token) {
  const XLNetOptions o = xlnet_options(c.model, n_token);
  Family f(static_cast<double>(o.n_layer()), o.layer());
  const LayerShape& l = f.layer;
  const auto v = static_cast<double>(o.n_token());
  const auto n_class = static_cast<double>(o.n_class());
  f.parameters = f.n_layer * (l.parameters(1) + 2 * l.hd) +
      3 * l.hd * (o.untie_r() ? f.n_layer : 1) + v * l.d + l.d + v +
      (n_class > 0 ? l.d * l.d + l.d + l.d * n_class + n_class : 0);
  f.largest = std::max(v * l.d, l.largest());
  f.streams = 2;
  f.mem_len = static_cast<double>(o.lengths().mem_len);
  f.classes = v;
  f.training_rows =
      n_class > 0 ? 0 : static_cast<double>(c.model.xlnet.num_predict);
  f.eval_rows = f.training_rows;
  return f;
}

// The character transformer: per-layer (or one) position tables, the output head and the
// training heads, all alive at the first step: n x targets heads with intermediate layers.
Family char_transformer(const config::Config& c, int64_t n_token) {
  const CharTransformerOptions o = char_transformer_options(c, n_token);
  Family f(static_cast<double>(o.n_layer()), o.layer());
  const LayerShape& l = f.layer;
  const auto v = static_cast<double>(o.n_token());
  const double heads = (o.losses().schedule.intermediate ? f.n_layer : 1) *
      static_cast<double>(o.losses().target_weights.size());
  const double positions = (o.per_layer_positions() ? f.n_layer : 1) *
      static_cast<double>(o.n_ctx()) * l.d;
  f.parameters = v * l.d + positions + f.n_layer * l.parameters() +
      (o.layer().attention().pre_lnorm() ? 2 * l.d : 0) + heads * (l.d * v + v);
  f.largest = std::max({v * l.d, positions, l.largest()});
  f.classes = v;
  f.training_rows = heads *
      (o.losses().multiple_positions ? static_cast<double>(c.train.tgt_len)
                                     : 1);
  return f;
}

Family family(const config::Config& c, int64_t n_token) {
  switch (c.model.type) {
    case config::ModelType::kTransformerXL:
      return transformer_xl(c, n_token);
    case config::ModelType::kXLNet:
      return xlnet(c, n_token);
    case config::ModelType::kCharTransformer:
      return char_transformer(c, n_token);
  }
  TORCH_CHECK(false, "unhandled model type");
}

// "512.0 MiB", "22.7 GiB", "3.6 TiB": one decimal in the largest unit that keeps a digit.
std::string human_bytes(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  if (bytes < 1024 * kMiB) {
    return fmt::format("{:.1f} MiB", bytes / kMiB);
  }
  if (bytes < 1024 * 1024 * kMiB) {
    return fmt::format("{:.1f} GiB", bytes / (1024 * kMiB));
  }
  return fmt::format("{:.1f} TiB", bytes / (1024 * 1024 * kMiB));
}

} // namespace

std::string MemoryEstimate::describe() const {
  return fmt::format(
      "{} ({} parameters: weights {}, gradients and optimizer {}, activations {}, "
      "memories {}, runtime {})",
      human_bytes(total()),
      parameters < 1e9 ? fmt::format("{:.1f}M", parameters / 1e6)
                       : fmt::format("{:.1f}B", parameters / 1e9),
      human_bytes(weights),
      human_bytes(optimizer),
      human_bytes(activations),
      human_bytes(memories),
      human_bytes(runtime));
}

MemoryEstimate estimate_training_memory(
    const config::Config& c,
    int64_t n_token) {
  const config::TrainConfig& t = c.train;
  const Family f = family(c, n_token);
  const double b = static_cast<double>(t.batch_size) /
      static_cast<double>(std::max<int64_t>(t.batch_chunk, 1));
  const auto q = static_cast<double>(t.tgt_len);
  const Pass pass{b, q, q + f.mem_len, f.streams};
  MemoryEstimate e;
  e.parameters = f.parameters;
  e.weights = kFloat * f.parameters;
  e.optimizer = optimizer_bytes(t, f.parameters) + 2 * kFloat * f.largest;
  e.activations =
      kept_activations(f.n_layer, f.layer, pass, t.activation_checkpointing) +
      layer_backward(f.layer, pass) +
      output_activations(b * f.training_rows, f.classes, true);
  e.memories = memory_bytes(f.n_layer, b, f.mem_len, f.layer.d);
  e.runtime = kRuntime;
  return e;
}

MemoryEstimate estimate_evaluation_memory(
    const config::Config& c,
    int64_t n_token) {
  const Family f = family(c, n_token);
  const auto b = static_cast<double>(c.eval.batch_size);
  // Vanilla windows are training windows scoring eval.stride positions, without memory;
  // memory-mode segments are eval.tgt_len long and score every position.
  const bool vanilla = c.eval.mode == config::EvalMode::kVanilla;
  const auto q = static_cast<double>(
      vanilla ? c.train.tgt_len : c.eval.tgt_len.value_or(c.train.tgt_len));
  const Span span = eval_span(c, false);
  const double m = vanilla
      ? 0.0
      : static_cast<double>(
            span.mem_len.value_or(0) + span.ext_len.value_or(0));
  const double rows =
      f.eval_rows.value_or(vanilla ? static_cast<double>(c.eval.stride) : q);
  MemoryEstimate e;
  e.parameters = f.parameters;
  e.weights = kFloat * f.parameters;
  e.activations = layer_transient(f.layer, {b, q, q + m, f.streams}) +
      output_activations(b * rows, f.classes, false);
  e.memories = memory_bytes(f.n_layer, b, m, f.layer.d);
  e.runtime = kRuntime;
  return e;
}

void check_memory(
    const MemoryEstimate& need,
    const std::string& what,
    double available,
    const std::string& where,
    bool enforce) {
  if (need.total() <= available) {
    spdlog::debug(
        "{} needs about {}; {} has {} available",
        what,
        need.describe(),
        where,
        human_bytes(available));
    return;
  }
  const std::string message = fmt::format(
      "{} needs about {}, but {} has {} available",
      what,
      need.describe(),
      where,
      human_bytes(available));
  if (enforce) {
    throw UserError(
        message +
        "; use smaller sizes (model, batch, segment, memory), train.batch_chunk or "
        "train.activation_checkpointing, or pass --skip-memory-check to try anyway");
  }
  spdlog::warn("{}; trying anyway (--skip-memory-check)", message);
}

void check_memory(
    const MemoryEstimate& need,
    const std::string& what,
    const torch::Device& device,
    bool enforce) {
  check_memory(
      need,
      what,
      runtime::available_memory(device),
      runtime::device_name(device),
      enforce);
}

} // namespace xl::models
