#include "xl/eval/setup.h"

#include <fmt/format.h>

#include "xl/models/factory.h"

namespace xl::eval {

namespace {

std::string describe_span(const models::Span& span) {
  std::string text;
  const auto add = [&](const char* name, const auto& value) {
    if (value) {
      text += fmt::format(", {} {}", name, *value);
    }
  };
  add("mem_len", span.mem_len);
  add("clamp_len", span.clamp_len);
  add("same_length", span.same_length);
  return text;
}

} // namespace

EvalSetup eval_setup(
    const config::Config& c,
    sources::EvalBatches batches,
    bool validation,
    const torch::Device& device) {
  EvalSetup setup;
  setup.options.device = device;
  setup.options.bf16 = c.train.bf16;
  setup.options.span = models::eval_span(c, validation);
  setup.options.progress_seconds = c.run.progress_seconds;
  setup.options.progress_unit = validation ? "valid batch" : "batch";
  if (validation) {
    setup.options.max_batches = c.train.max_eval_steps;
  }
  setup.setting = std::move(batches.setting);
  if (!validation && c.eval.mode == config::EvalMode::kVanilla) {
    setup.values = {{"window", c.train.tgt_len}, {"stride", c.eval.stride}};
  } else {
    const auto& span = setup.options.span;
    setup.values = {{"tgt_len", c.eval.tgt_len.value_or(c.train.tgt_len)}};
    if (batches.streams) {
      setup.values["streams"] = *batches.streams;
    } else {
      setup.values["batch"] = c.eval.batch_size;
    }
    if (span.mem_len) {
      setup.values["mem_len"] = *span.mem_len;
    }
    if (span.clamp_len) {
      setup.values["clamp_len"] = *span.clamp_len;
    }
    if (span.same_length) {
      setup.values["same_length"] = *span.same_length;
    }
  }
  if (batches.reuse_len) {
    setup.options.span.reuse_len = batches.reuse_len;
  }
  if (batches.source->continues_streams()) {
    setup.setting += describe_span(setup.options.span);
  } else {
    // Nothing is carried from batch to batch: no memory, and no same_length without one.
    setup.options.span.mem_len = 0;
    setup.options.span.ext_len = 0;
    setup.options.span.same_length = false;
  }
  setup.source = std::move(batches.source);
  return setup;
}

} // namespace xl::eval
