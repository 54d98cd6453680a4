// The deep character transformer of Al-Rfou et al. 2018 (T12, T64; Transformer-XL's "vanilla
// model"): byte embeddings, a causal stack of standard attention layers, a learned position table
// added to every layer's input (or once, at the input), and the auxiliary losses of its training
// (docs/char-transformer.md gives the decisions the paper leaves open).
//
// Batch fields: tokens [L, B] and targets [T, B], the next byte of the last T positions (windows
// of sources::RandomWindows for training, sources::SlidingWindows for the paper's evaluation). Nothing
// is carried between batches.
//
// Loss terms, training: "lm", the last layer's t+1 loss (the headline), then "l<l>/t+<k>" for
// every other (layer, target) head in layer order, each weighted by its layer's schedule
// (aux_schedule.h) times the target's weight. A layer whose schedule has ended contributes a
// term of count 0 and runs no head, so the list of terms never changes during a run. With
// multiple positions, t+k scores every position whose target lies in the window; without, the
// last such position. Evaluation: "lm" only, the last layer's t+1 head on the T target positions.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/models/char_transformer/aux_schedule.h"
#include "xl/models/char_transformer/heads.h"
#include "xl/models/kit.h"
#include "xl/models/language_model.h"
#include "xl/models/layer_stack.h"
#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/dropout.h"
#include "xl/nn/init.h"
#include "xl/nn/learned_positions.h"

namespace xl::models {

/// The auxiliary losses; schedule.n_layer must be the model's.
struct CharLosses {
  /// every position of the window scored in training (else the last only)
  bool multiple_positions = true;
  LayerSchedule schedule;
  /// weights of the targets t+1, t+2, ... in each layer's loss; one head each
  std::vector<double> target_weights{1.0, 0.5};
};

struct CharTransformerOptions {
  CharTransformerOptions(int64_t n_token, const StackShape& stack)
      : n_token_(n_token), stack_(stack) {}
  TORCH_ARG(int64_t, n_token);
  TORCH_ARG(StackShape, stack);
  /// rows of the position tables: the longest window
  TORCH_ARG(int64_t, n_ctx) = 512;
  /// a table per layer (the paper), or one at the input
  TORCH_ARG(bool, per_layer_positions) = true;
  TORCH_ARG(CharLosses, losses) = {};
};

class CharTransformerImpl : public LanguageModelImpl {
 public:
  explicit CharTransformerImpl(const CharTransformerOptions& options);
  void reset();
  void reset_parameters() override;

  /// tokens [L, B] (L <= n_ctx), targets [T, B] (T <= L); no memory. In generation
  /// (args.next_token) with args.cache, tokens continue the P positions the cache holds
  /// (P + L <= n_ctx).
  ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& mems,
      const ForwardArgs& args = {}) override;

  bool continues_cache() const override {
    return true;
  }

  /// Parameters inference uses: all but the training heads.
  int64_t inference_parameters() const;

  CharTransformerOptions options;
  torch::nn::Embedding word_embedding{nullptr};
  /// a table per layer, or one at the input
  nn::LearnedPositions positions{nullptr};
  nn::Dropout drop{nullptr};
  /// nn::VanillaDecoderLayer each; graphed for every window read whole (training, evaluation),
  /// not in generation with a decoding cache
  LayerStack layers{nullptr};
  /// pre-norm only: the LayerNorm every head reads through
  torch::nn::LayerNorm final_norm{nullptr};
  /// the last layer's t+1 classifier: the model's output
  torch::nn::Linear out{nullptr};
  /// the other classifiers (null when the losses need none)
  CharHeads heads{nullptr};

 private:
  /// Layer `l` on `h` [L, B, D] at positions `cache.past`.. under `mask` [L, past + L], its
  /// position table added first (every layer's, or the input's at layer 0); `slot`: the
  /// layer's keys and values of the `past` positions.
  torch::Tensor layer_forward(
      int64_t l,
      const torch::Tensor& h,
      const torch::Tensor& mask,
      const DecodingCache& cache,
      nn::AttentionCache* slot);
  /// Layer `l`'s terms on its output `h`: the model's own (last layer, t+1) into
  /// `output.terms`, the auxiliary ones into `aux`, each at `layer_weight` times its target's.
  void add_layer_terms(
      const sources::Batch& batch,
      const ForwardArgs& args,
      int64_t l,
      const torch::Tensor& h,
      double layer_weight,
      ModelOutput& output,
      std::vector<LossTerm>& aux);
  /// The t+1+`offset` term of layer `layer`'s output `h` [L, B, D], scored as the class comment
  /// says: -sum log p over the scored positions and their count (count 0, no head run, at weight
  /// 0 or with nothing to score); `keep`: where to put the log-probs [rows, B] too.
  LossTerm head_term(
      const sources::Batch& batch,
      int64_t layer,
      int64_t offset,
      const torch::Tensor& h,
      int64_t scored,
      double weight,
      torch::Tensor* keep);
};

} // namespace xl::models
