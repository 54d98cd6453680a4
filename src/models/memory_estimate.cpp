#include "xl/models/memory_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "xl/models/factory.h"
#include "xl/models/registry.h"
#include "xl/runtime/device.h"
#include "xl/util/error.h"
#include "xl/util/log.h"
#include "xl/util/units.h"

namespace xl::models {

namespace {

constexpr double kFloat = 4; // bytes per float32 value
constexpr double kRuntime = 0.4 * 1024 * 1024 * 1024;

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
double kept_activations(double n_layer, const LayerShape& s, const Pass& p, bool checkpointing) {
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

// "512.0 MiB", "22.7 GiB", "3.6 TiB": one decimal in the largest unit that keeps a digit.
std::string human_bytes(double bytes) {
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

MemoryEstimate estimate_training_memory(const config::Config& c, int64_t n_token) {
  const config::TrainConfig& t = c.train;
  const MemoryShape f = model_family(c).memory_shape(c, n_token);
  const double b =
      static_cast<double>(t.batch_size) / static_cast<double>(std::max<int64_t>(t.batch_chunk, 1));
  const auto q = static_cast<double>(t.tgt_len);
  const Pass pass{b, q, q + f.mem_len, f.streams};
  MemoryEstimate e;
  e.parameters = f.parameters;
  e.weights = kFloat * f.parameters;
  e.optimizer = optimizer_bytes(t, f.parameters) + 2 * kFloat * f.largest;
  e.activations = kept_activations(f.n_layer, f.layer, pass, t.activation_checkpointing) +
      layer_backward(f.layer, pass) + output_activations(b * f.training_rows, f.classes, true);
  e.memories = memory_bytes(f.n_layer, b, f.mem_len, f.layer.d);
  e.runtime = kRuntime;
  return e;
}

MemoryEstimate estimate_evaluation_memory(const config::Config& c, int64_t n_token) {
  const MemoryShape f = model_family(c).memory_shape(c, n_token);
  const auto b = static_cast<double>(c.eval.batch_size);
  // Vanilla windows are training windows scoring eval.stride positions, without memory;
  // memory-mode segments are eval.tgt_len long and score every position.
  const bool vanilla = c.eval.mode == config::EvalMode::kVanilla;
  const auto q =
      static_cast<double>(vanilla ? c.train.tgt_len : c.eval.tgt_len.value_or(c.train.tgt_len));
  const Span span = eval_span(c, false);
  const double m =
      vanilla ? 0.0 : static_cast<double>(span.mem_len.value_or(0) + span.ext_len.value_or(0));
  const double rows = f.eval_rows.value_or(vanilla ? static_cast<double>(c.eval.stride) : q);
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
    logger().debug(
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
  logger().warn("{}; trying anyway (--skip-memory-check)", message);
}

void check_memory(
    const MemoryEstimate& need,
    const std::string& what,
    const torch::Device& device,
    bool enforce) {
  check_memory(
      need, what, runtime::available_memory(device), runtime::device_name(device), enforce);
}

} // namespace xl::models
