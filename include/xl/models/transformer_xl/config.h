// model.transformer_xl: the keys only Transformer-XL has (memory, attention type, adaptive
// input and softmax), and the rules between them and the rest of the config. The family
// registers them with the config layer (family.cpp), which knows them only through that.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "xl/config/config.h"

namespace xl::models {

enum class AttnType { kRelative, kAbsolute, kLearned };

} // namespace xl::models

namespace xl::config {
// clang-format off
template <> struct Choices<models::AttnType> {
  static constexpr std::array<Choice<models::AttnType>, 3> all{{{models::AttnType::kRelative, "relative"}, {models::AttnType::kAbsolute, "absolute"}, {models::AttnType::kLearned, "learned"}}};
};
// clang-format on
} // namespace xl::config

namespace xl::models {

/// model.transformer_xl: memory, attention type and the adaptive input/softmax of Transformer-XL.
struct TransformerXLConfig {
  AttnType attn_type = AttnType::kRelative;
  bool untie_r = false;
  int64_t mem_len = 0;
  int64_t ext_len = 0;
  bool same_length = false;
  int64_t clamp_len = -1;
  std::optional<int64_t> n_ctx;   // null: mem_len + train.tgt_len
  std::optional<int64_t> d_embed; // null: model.d_model
  std::vector<int64_t> cutoffs;
  int64_t div_val = 1;
  bool tie_weight = true;
  std::vector<bool> tie_projs; // empty: [false, true, true, ...] (kimiyoung's wt103 setting)
  double proj_init_std = 0.01;

  template <class Self, class V>
  static void fields(Self& s, V& v) {
    // clang-format off
    v("attn_type", s.attn_type, "relative (Transformer-XL), absolute (vanilla attention, sinusoid positions added to the embeddings) or learned (vanilla attention, a learned position table added to every layer's input: Al-Rfou et al., kimiyoung's attn_type 3)");
    v("untie_r", s.untie_r, "per-layer u/v attention biases instead of shared ones");
    v("mem_len", s.mem_len, "cached hidden states per layer (segment recurrence)", config::at_least(0));
    v("ext_len", s.ext_len, "extended context without gradient or memory", config::at_least(0));
    v("same_length", s.same_length, "every query attends to the same number of keys (needs mem_len > 0)");
    v("clamp_len", s.clamp_len, "clamp relative distances above this (-1: no clamping)", config::at_least(-1));
    v("n_ctx", s.n_ctx, "attn_type learned: rows of each position table, the longest memory + segment (null: mem_len + train.tgt_len)", config::at_least(1));
    v("d_embed", s.d_embed, "embedding size before projection (null: model.d_model)", config::at_least(1));
    v("cutoffs", s.cutoffs, "adaptive softmax/input cluster boundaries (empty: full softmax)", config::at_least(1));
    v("div_val", s.div_val, "embedding size divisor per adaptive cluster", config::at_least(1));
    v("tie_weight", s.tie_weight, "tie adaptive input and softmax weights");
    v("tie_projs", s.tie_projs, "tie each cluster's projection (empty: all but the first)");
    v("proj_init_std", s.proj_init_std, "init std of adaptive projections", config::greater_than(0));
    // clang-format on
  }
};

/// The rules between model.transformer_xl and the rest of `config` (a ConfigError naming the
/// key where one is broken).
void validate_transformer_xl(const config::Config& config);

} // namespace xl::models
