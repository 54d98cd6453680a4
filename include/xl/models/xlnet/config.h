// model.xlnet: the keys only XLNet has (memory, activation, classification head and the
// permutation-LM objective), and the rules between them and the rest of the config. The family
// registers them with the config layer (family.cpp), which knows them only through that.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/config.h"
#include "xl/models/xlnet/model.h"

namespace xl::config {
// clang-format off
template <> struct Choices<models::SequenceSummary> {
  static constexpr std::array<Choice<models::SequenceSummary>, 2> all{{{models::SequenceSummary::kLast, "last"}, {models::SequenceSummary::kMean, "mean"}}};
};
// clang-format on
} // namespace xl::config

namespace xl::models {

/// model.xlnet: memory, activation, heads and the permutation-LM objective of XLNet. Defaults
/// follow zihangdai/xlnet's train_gpu.py (num_predict: its README's pretraining command).
struct XLNetConfig {
  bool untie_r = false;
  int64_t mem_len = 0;
  int64_t reuse_len = 0;
  int64_t clamp_len = -1;
  config::Activation ff_activation = config::Activation::kRelu;
  int64_t n_class = 0;
  std::vector<std::string> labels;
  SequenceSummary summary = SequenceSummary::kLast;
  bool bi_data = true;
  std::optional<int64_t> perm_size; // null: reuse_len
  int64_t num_predict = 85;
  int64_t mask_alpha = 6;
  int64_t mask_beta = 1;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("untie_r", s.untie_r, "per-layer r_w/r_r/r_s attention biases instead of shared ones");
    v("mem_len", s.mem_len, "cached hidden states per layer (segment recurrence)", config::at_least(0));
    v("reuse_len", s.reuse_len, "positions of each segment cached for the next one (0: all; pretraining needs >= 1)", config::at_least(0));
    v("clamp_len", s.clamp_len, "clamp relative distances to [-clamp_len, clamp_len] (-1: no clamping)", config::at_least(-1));
    v("ff_activation", s.ff_activation, "feed-forward activation: relu, gelu (exact erf) or gelu_tanh (XLNet's TF gelu, HF gelu_new)");
    v("n_class", s.n_class, "classes of the sequence classification head (0: pretraining, no head)", config::at_least(0));
    v("labels", s.labels, "the classes' names in class order, one per class (xl-predict shows them, xl-export writes them as id2label; empty: the class numbers)");
    v("summary", s.summary, "what the classification head reads of the content stream's last layer: last (the <cls> position, as zihangdai's run_classifier and ratsgo) or mean (the mean over the real positions, padding left out)");
    v("bi_data", s.bi_data, "pretraining: half of the rows read their streams backwards");
    v("perm_size", s.perm_size, "pretraining: positions permuted together (null: reuse_len)", config::at_least(1));
    v("num_predict", s.num_predict, "pretraining: predictions per record (padded)", config::at_least(1));
    v("mask_alpha", s.mask_alpha, "pretraining: a span of n words comes with n * mask_alpha / mask_beta positions of context", config::at_least(1));
    v("mask_beta", s.mask_beta, "pretraining: see mask_alpha", config::at_least(1));
    // clang-format on
  }
};

/// The rules between model.xlnet and the rest of `config` (a ConfigError naming the key where
/// one is broken).
void validate_xlnet(const config::Config& config);

/// Whether `config` trains a classifier on labelled reviews (model.xlnet.n_class > 0).
bool xlnet_labelled(const config::Config& config);

} // namespace xl::models
