// Fixed-context batches, with nothing carried from one batch to the next.
//
// SlidingWindows: the evaluation of fixed-context models (Al-Rfou et al.; Transformer-XL's
// "vanilla" baseline). Window k covers input tokens [s_k, s_k + W) and scores the targets of its
// last S positions, tokens s_k + W - S + 1 .. s_k + W; windows start at s_0 = S - 1 and slide by
// S, so every split is scored from its token W on, whatever S is. S = 1 is the paper's metric
// (each target sees exactly W tokens of context); S > 1 is an approximation (contexts of
// W - S + 1 .. W tokens), labelled "@stride=S". A final shorter window scores what is left.
// With `lead` (a user's text, whose first tokens count too), a first batch of one window of the
// first min(W, n) - 1 tokens scores the targets before token W, each with the tokens before it.
//
// RandomWindows: training of fixed-context models. Each batch holds B windows of W inputs at
// offsets drawn uniformly from the whole split, every position scored. The generator is the
// source's own, seeded from the config, and its state goes into checkpoints.
#pragma once

#include <ATen/core/Generator.h>

#include "xl/formats/tokens.h"
#include "xl/sources/batch_source.h"

namespace xl::sources {

class SlidingWindows : public BatchSource {
 public:
  /// `batch_size` windows per batch; `tokens` must outlive the source and hold more than W
  /// tokens, or with `lead` at least 2.
  SlidingWindows(
      const formats::Tokens& tokens,
      int64_t window,
      int64_t stride,
      int64_t batch_size,
      bool lead = false);

  std::optional<Batch> next() override;
  bool continues_streams() const override {
    return false;
  }
  int64_t batches_per_pass() const override;
  int64_t epoch() const override {
    return epoch_;
  }
  std::string describe() const override;
  std::string metric_qualifier() const override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  const formats::Tokens& tokens_;
  int64_t window_;
  int64_t stride_;
  int64_t batch_size_;
  bool lead_;
  /// the first target of the next window (below window_: the lead window's)
  int64_t next_target_;
  int64_t epoch_ = 0;
  /// where a pass starts: token 1 with a lead window, else token W
  int64_t first_target() const {
    return lead_ ? 1 : window_;
  }
};

class RandomWindows : public BatchSource {
 public:
  /// `tokens` must outlive the source and hold more than W tokens.
  RandomWindows(const formats::Tokens& tokens, int64_t window, int64_t batch_size, uint64_t seed);

  std::optional<Batch> next() override;
  bool continues_streams() const override {
    return false;
  }
  /// As many batches as it takes to draw about as many targets as the split holds.
  int64_t batches_per_pass() const override;
  int64_t epoch() const override {
    return epoch_;
  }
  std::string describe() const override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  const formats::Tokens& tokens_;
  int64_t window_;
  int64_t batch_size_;
  at::Generator generator_;
  int64_t epoch_ = 0;
  /// batches drawn in the current pass
  int64_t drawn_ = 0;
};

} // namespace xl::sources
