#include "xl/models/xlnet/config.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/models/kit.h"

namespace xl::models {

namespace {

// model.xlnet.labels: a name of one line for each class, each its own.
void validate_labels(const config::Config& c) {
  const auto& x = c.model.section<XLNetConfig>();
  if (x.labels.empty()) {
    return;
  }
  if (static_cast<int64_t>(x.labels.size()) != x.n_class) {
    config::fail_rule(
        c,
        "model.xlnet.labels",
        fmt::format(
            "one name a class: model.xlnet.n_class is {}, found {} names",
            x.n_class,
            x.labels.size()));
  }
  for (size_t i = 0; i < x.labels.size(); ++i) {
    const auto& name = x.labels[i];
    if (name.empty() || name.find_first_of("\t\r\n") != std::string::npos) {
      config::fail_rule(
          c,
          "model.xlnet.labels",
          fmt::format("class {}'s name '{}' is empty or holds a tab or a line break", i, name));
    }
    if (std::find(x.labels.begin(), x.labels.begin() + static_cast<std::ptrdiff_t>(i), name) !=
        x.labels.begin() + static_cast<std::ptrdiff_t>(i)) {
      config::fail_rule(
          c, "model.xlnet.labels", fmt::format("'{}' names two classes: give each its own", name));
    }
  }
}

} // namespace

void validate_xlnet(const config::Config& c) {
  const config::ModelConfig& m = c.model;
  require_even_d_model(c);
  if (m.pre_lnorm) {
    config::fail_rule(c, "model.pre_lnorm", "XLNet normalises after each sub-layer: set false");
  }
  if (c.eval.tgt_len && *c.eval.tgt_len != c.train.tgt_len) {
    config::fail_rule(
        c,
        "eval.tgt_len",
        fmt::format(
            "XLNet evaluates records (or reviews) of train.tgt_len = {} positions, the length "
            "it was trained on: set null, found {}",
            c.train.tgt_len,
            *c.eval.tgt_len));
  }
  if (m.section<XLNetConfig>().n_class == 1) {
    config::fail_rule(
        c,
        "model.xlnet.n_class",
        "a classifier needs 2 classes or more (0: pretraining, no classification head), "
        "found 1");
  }
  // A review is <cls>, at least one piece and <sep>.
  if (m.section<XLNetConfig>().n_class >= 2 && c.train.tgt_len < 3) {
    config::fail_rule(
        c,
        "train.tgt_len",
        fmt::format(
            "a classifier reads reviews of train.tgt_len positions, <cls> and <sep> among them: "
            "at least 3, found {}",
            c.train.tgt_len));
  }
  // The default is in every dumped config; another value would be ignored by a pretraining.
  if (m.section<XLNetConfig>().n_class == 0 &&
      m.section<XLNetConfig>().summary != SequenceSummary::kLast) {
    config::fail_rule(
        c,
        "model.xlnet.summary",
        "only a classifier's head reads it (model.xlnet.n_class 2 or more); a pretraining has "
        "none: leave it out");
  }
  if (c.eval.mode != config::EvalMode::kMemory) {
    config::fail_rule(
        c,
        "eval.mode",
        "XLNet is evaluated on its own batches (permutation LM or classification): set memory");
  }
  validate_labels(c);
}

bool xlnet_labelled(const config::Config& c) {
  return c.model.section<XLNetConfig>().n_class > 0;
}

} // namespace xl::models
