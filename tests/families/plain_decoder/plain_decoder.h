// The test family: a plain decoder with learned positions and no memory (an embedding plus one
// position table, a causal stack of standard attention layers, a final LayerNorm and a softmax
// over the vocabulary), built as a newcomer builds a family, from the kit (models/kit.h) and
// the nn/ layers, with a config section of its own (model.plain_decoder). It lives in the
// tests: the programs the tests start register it (register_before_main.cpp), and the family
// contract suites run it as they run the built-in families (docs/architecture.md).
//
// Batch fields: tokens [L, B] and targets [T <= L, B], the next token of the last T positions.
// Loss terms: "lm". Generation continues a decoding cache (continues_cache).
#pragma once

#include <torch/torch.h>

#include "xl/models/family.h"
#include "xl/models/language_model.h"
#include "xl/models/layer_stack.h"
#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/init.h"
#include "xl/nn/learned_positions.h"

namespace xl::test {

struct PlainDecoderOptions {
  PlainDecoderOptions(int64_t n_token, const models::StackShape& stack)
      : n_token_(n_token), stack_(stack) {}
  TORCH_ARG(int64_t, n_token);
  TORCH_ARG(models::StackShape, stack);
  /// rows of the position table: the longest window
  TORCH_ARG(int64_t, n_ctx) = 64;
};

class PlainDecoderImpl : public models::LanguageModelImpl {
 public:
  explicit PlainDecoderImpl(const PlainDecoderOptions& options);
  void reset();
  void reset_parameters() override;

  /// tokens [L, B], targets [T, B]; in generation with args.cache, tokens continue the P
  /// positions the cache holds (P + L <= n_ctx).
  models::ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& mems,
      const models::ForwardArgs& args) override;

  bool continues_cache() const override {
    return true;
  }

  PlainDecoderOptions options;
  torch::nn::Embedding embedding{nullptr};
  nn::LearnedPositions positions{nullptr};
  torch::nn::Dropout drop{nullptr};
  /// nn::VanillaDecoderLayer each
  models::LayerStack layers{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};
  torch::nn::Linear out{nullptr};
};

/// The family's descriptor (model.type plain_decoder).
models::ModelFamily plain_decoder_family();

} // namespace xl::test
