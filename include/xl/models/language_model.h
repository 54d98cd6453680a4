// The interface every model family implements (Transformer-XL; the mini XLNet and the character
// transformer plug in the same way), so that one trainer, one evaluator, one checkpoint format and
// one benchmark serve them all:
//
//   ModelOutput forward(const sources::Batch& batch, const nn::Memory& mems, const ForwardArgs& args)
//
// The batch carries named fields (sources/batch.h); the output carries named loss terms, each a
// (sum, count, weight) ratio whose first is the headline metric, plus what some families add
// (per-token log-probs, the next token's distribution for generation, classification logits, the
// next memory).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/models/loss.h"
#include "xl/nn/attention_core.h"
#include "xl/nn/memory.h"
#include "xl/sources/batch.h"

namespace xl::models {

/// Attention lengths an evaluation may set without touching the weights. An empty field keeps
/// the model's own value; a model ignores the fields it has no use for.
struct Span {
  /// states kept per layer for the next batch (0: no memory)
  std::optional<int64_t> mem_len;
  /// trailing inputs re-read by the next batch rather than memorised
  std::optional<int64_t> ext_len;
  /// relative distances above this are clamped (<= 0: never)
  std::optional<int64_t> clamp_len;
  /// every query attends to the same number of keys
  std::optional<bool> same_length;
  /// the positions of a batch that go into the memory, the rest re-read by the next batch (0:
  /// all; XLNet's reuse_len)
  std::optional<int64_t> reuse_len;
};

/// What a family may keep between the calls of one generation or one memory-mode evaluation
/// (Transformer-XL: each layer's key and value projections of its memory, and the position
/// projections), so that a call projects only its new positions: the weights do not change in
/// between. One per stream of calls; every call after the first passes the memory the previous
/// one returned. Transformer-XL (but with learned positions, whose memory rows change position
/// every call) and XLNet keep one. For a family without memory that continues_cache(), it is a
/// decoding cache: the keys and values of every position read so far.
struct ProjectionCache {
  std::vector<nn::AttentionCache> layers;
};

struct ForwardArgs {
  /// the training step, for loss schedules (0 outside training)
  int64_t step = 0;
  /// fill ModelOutput::log_probs
  bool log_probs = false;
  /// fill ModelOutput::next_log_probs (generation); batch.targets may then be undefined, and
  /// the output has no loss terms
  bool next_token = false;
  /// the projections kept from the previous call of this stream (null: none)
  ProjectionCache* cache = nullptr;
  Span span;
};

struct ModelOutput {
  /// terms[0] is the headline metric; the trainer minimises sum(weight * sum / count)
  std::vector<LossTerm> terms;
  /// log p(target) [T, B] of terms[0], when asked for
  torch::Tensor log_probs;
  /// [B, V] log-probabilities of the token after the last input position, when asked for
  torch::Tensor next_log_probs;
  /// [B, C] classification logits, for families with a classification head
  torch::Tensor logits;
  /// the memory for the next batch (empty: none)
  nn::Memory mems;
};

class LanguageModelImpl : public torch::nn::Module {
 public:
  /// One batch with the memory of the previous one (empty: none).
  virtual ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& mems,
      const ForwardArgs& args) = 0;

  /// Draws every parameter afresh from the torch random state, each module by its own rule.
  virtual void reset_parameters() = 0;

  /// Whether, in generation (args.next_token) with args.cache and no memory, forward reads its
  /// batch as the positions after those the cache holds: a decoding cache, with which
  /// generation reads each new token alone as long as the context fits the window, instead of
  /// re-reading the window.
  virtual bool continues_cache() const {
    return false;
  }
};

using LanguageModel = std::shared_ptr<LanguageModelImpl>;

/// Adds the headline term of a language model to `out`: "lm", the summed -log p(target) of
/// `log_probs` [T, B] over the targets the batch counts (its target_mask, or all of them); keeps
/// `log_probs` in `out` when `args` asks for them.
void add_lm_term(
    ModelOutput& out,
    const sources::Batch& batch,
    const torch::Tensor& log_probs,
    const ForwardArgs& args);

/// Number of distinct parameter values (tied parameters count once).
int64_t count_parameters(const torch::nn::Module& module);

/// The batch of a language model: tokens [L, B] and targets [T <= L, B], or no targets when
/// `args` asks for the next token only; else an error naming `family` and the sizes.
void check_lm_batch(const sources::Batch& batch, const ForwardArgs& args, const char* family);

} // namespace xl::models
