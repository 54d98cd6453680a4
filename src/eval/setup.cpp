#include "xl/eval/setup.h"

#include <fmt/format.h>

#include "xl/data/ordered_segments.h"
#include "xl/data/windows.h"
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
    const data::Tokens& tokens,
    bool validation,
    const torch::Device& device) {
  EvalSetup setup;
  setup.options.device = device;
  setup.options.bf16 = c.train.bf16;
  setup.options.span = models::eval_span(c, validation);
  if (validation) {
    setup.options.max_batches = c.train.max_eval_steps;
  }
  if (validation || c.eval.mode == config::EvalMode::kMemory) {
    const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
    setup.source = std::make_unique<data::OrderedSegments>(
        tokens,
        c.eval.batch_size,
        tgt_len,
        setup.options.span.ext_len.value_or(0));
    setup.setting = fmt::format(
        "tgt_len {}{}, batch {}",
        tgt_len,
        describe_span(setup.options.span),
        c.eval.batch_size);
    return setup;
  }
  // Vanilla: a fixed window and nothing carried, so no memory and no same_length.
  const int64_t window = c.train.tgt_len;
  setup.options.span.mem_len = 0;
  setup.options.span.ext_len = 0;
  setup.options.span.same_length = false;
  setup.source = std::make_unique<data::SlidingWindows>(
      tokens, window, c.eval.stride, c.eval.batch_size);
  setup.setting = fmt::format(
      "vanilla: window {}, {} scored, slide {}, {} windows per batch",
      window,
      c.eval.stride == 1 ? std::string("last position")
                         : fmt::format("last {} positions", c.eval.stride),
      c.eval.stride,
      c.eval.batch_size);
  return setup;
}

} // namespace xl::eval
