#include "xl/models/transformer_xl/config.h"

#include <fmt/format.h>

#include "xl/models/kit.h"

namespace xl::models {

namespace {

void validate_adaptive(const config::Config& c) {
  const config::ModelConfig& m = c.model;
  const auto& x = m.section<TransformerXLConfig>();
  for (size_t i = 1; i < x.cutoffs.size(); ++i) {
    if (x.cutoffs[i] <= x.cutoffs[i - 1]) {
      config::fail_rule(
          c,
          "model.transformer_xl.cutoffs",
          fmt::format(
              "expected strictly increasing values, found {} after {}",
              x.cutoffs[i],
              x.cutoffs[i - 1]));
    }
  }
  if (!x.tie_projs.empty() && x.tie_projs.size() != x.cutoffs.size() + 1) {
    config::fail_rule(
        c,
        "model.transformer_xl.tie_projs",
        fmt::format(
            "expected {} entries (one per adaptive cluster: len(cutoffs) + 1), found {}",
            x.cutoffs.size() + 1,
            x.tie_projs.size()));
  }
  if (x.div_val > 1 && x.cutoffs.empty()) {
    config::fail_rule(
        c,
        "model.transformer_xl.div_val",
        fmt::format(
            "div_val {} needs adaptive clusters, but model.transformer_xl.cutoffs is empty",
            x.div_val));
  }
  const int64_t d_embed = x.d_embed.value_or(m.d_model);
  int64_t smallest = d_embed;
  for (size_t i = 0; i < x.cutoffs.size(); ++i) {
    smallest /= x.div_val;
  }
  if (smallest < 1) {
    config::fail_rule(
        c,
        "model.transformer_xl.div_val",
        fmt::format(
            "the last cluster's embedding size d_embed / div_val^{} = {} / {}^{} rounds to 0",
            x.cutoffs.size(),
            d_embed,
            x.div_val,
            x.cutoffs.size()));
  }
}

// Every query must keep a key: same_length hides all of them when there is no memory.
void validate_memory_spans(const config::Config& c) {
  const auto& x = c.model.section<TransformerXLConfig>();
  const config::EvalConfig& e = c.eval;
  if (x.same_length && x.mem_len == 0) {
    config::fail_rule(
        c,
        "model.transformer_xl.same_length",
        "needs model.transformer_xl.mem_len > 0 (without memory no query would see any key); "
        "set same_length to false");
  }
  const int64_t eval_tgt_len = e.tgt_len.value_or(c.train.tgt_len);
  const int64_t kept_span = x.mem_len + c.train.tgt_len - eval_tgt_len;
  if (!e.mem_len && kept_span < 0) {
    config::fail_rule(
        c,
        "eval.tgt_len",
        fmt::format(
            "with eval.mem_len null the evaluation memory is model.transformer_xl.mem_len + "
            "train.tgt_len - eval.tgt_len = {} + {} - {} < 0; set eval.mem_len",
            x.mem_len,
            c.train.tgt_len,
            eval_tgt_len));
  }
  if (x.same_length && kept_span == 0) {
    config::fail_rule(
        c,
        "eval.tgt_len",
        fmt::format(
            "validation during training keeps the training attention span, "
            "model.transformer_xl.mem_len + train.tgt_len - eval.tgt_len = 0, and same_length "
            "with no memory would hide every key; lower eval.tgt_len below {}",
            eval_tgt_len));
  }
  const bool same_length = e.same_length.value_or(x.same_length);
  if (e.mode == config::EvalMode::kMemory && same_length && e.mem_len.value_or(kept_span) == 0) {
    config::fail_rule(
        c,
        e.same_length ? "eval.same_length" : "eval.mem_len",
        "the evaluation memory is 0 and same_length is on, so no query would see any key; "
        "set eval.same_length=false or give eval.mem_len > 0");
  }
}

// Learned positions cover [memory | segment] up to n_ctx keys, in training and evaluation.
void validate_learned_positions(const config::Config& c) {
  const auto& x = c.model.section<TransformerXLConfig>();
  if (x.attn_type != AttnType::kLearned) {
    if (x.n_ctx) {
      config::fail_rule(
          c,
          "model.transformer_xl.n_ctx",
          "sizes the learned position tables, which only attn_type learned has; set null");
    }
    return;
  }
  const int64_t span = x.mem_len + c.train.tgt_len;
  const int64_t n_ctx = x.n_ctx.value_or(span);
  if (span > n_ctx) {
    config::fail_rule(
        c,
        "model.transformer_xl.n_ctx",
        fmt::format(
            "the position tables have {} rows, but training reads mem_len + train.tgt_len = "
            "{} + {} = {} positions",
            n_ctx,
            x.mem_len,
            c.train.tgt_len,
            span));
  }
  const config::EvalConfig& e = c.eval;
  const int64_t eval_tgt_len = e.tgt_len.value_or(c.train.tgt_len);
  const int64_t eval_span = e.mem_len.value_or(span - eval_tgt_len) + eval_tgt_len;
  if (e.mode == config::EvalMode::kMemory && eval_span > n_ctx) {
    config::fail_rule(
        c,
        "eval.mem_len",
        fmt::format(
            "the evaluation reads eval.mem_len + eval.tgt_len = {} positions, more than the {} "
            "rows of the learned position tables (model.transformer_xl.n_ctx)",
            eval_span,
            n_ctx));
  }
}

} // namespace

void validate_transformer_xl(const config::Config& c) {
  validate_adaptive(c);
  validate_learned_positions(c);
  require_even_d_model(c); // both attention types use sinusoid positions
  validate_memory_spans(c);
}

} // namespace xl::models
