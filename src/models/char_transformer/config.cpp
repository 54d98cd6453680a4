#include "xl/models/char_transformer/config.h"

#include <fmt/format.h>

namespace xl::models {

void validate_char_transformer(const config::Config& c) {
  const auto& x = c.model.section<CharTransformerConfig>();
  if (c.train.tgt_len > x.n_ctx) {
    config::fail_rule(
        c,
        "train.tgt_len",
        fmt::format(
            "windows must fit the learned position tables: at most "
            "model.char_transformer.n_ctx = {}, found {}",
            x.n_ctx,
            c.train.tgt_len));
  }
  if (x.target_weights.empty()) {
    config::fail_rule(
        c, "model.char_transformer.target_weights", "needs the t+1 weight at least, found []");
  }
  if (static_cast<int64_t>(x.target_weights.size()) > c.train.tgt_len) {
    config::fail_rule(
        c,
        "model.char_transformer.target_weights",
        fmt::format(
            "{} weights, but a window of train.tgt_len = {} has targets up to t+{}: the "
            "heads beyond it would never see a target",
            x.target_weights.size(),
            c.train.tgt_len,
            c.train.tgt_len));
  }
}

} // namespace xl::models
