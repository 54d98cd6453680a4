#include "xl/eval/generate.h"

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <limits>

#include "xl/eval/eval_scope.h"

namespace xl::eval {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

torch::Tensor draw_tokens(
    const torch::Tensor& log_probs,
    const SamplingOptions& options,
    at::Generator& generator) {
  TORCH_CHECK(
      log_probs.dim() == 2 && log_probs.size(1) >= 1,
      "draw_tokens expects log-probabilities [B, V], got ",
      log_probs.sizes());
  TORCH_CHECK(
      options.temperature >= 0.0 && options.top_k >= 0 && options.top_p > 0.0 &&
          options.top_p <= 1.0,
      "sampling needs temperature >= 0, top_k >= 0 and 0 < top_p <= 1, got ",
      options.temperature,
      ", ",
      options.top_k,
      ", ",
      options.top_p);
  if (options.temperature == 0.0) {
    return log_probs.argmax(1);
  }
  auto logits = log_probs.to(torch::kFloat) / options.temperature;
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  if (options.top_k > 0 && options.top_k < logits.size(1)) {
    const auto kth = std::get<0>(logits.topk(options.top_k, 1))
                         .narrow(1, options.top_k - 1, 1);
    logits = logits.masked_fill(logits < kth, kNever);
  }
  if (options.top_p < 1.0) {
    const auto [sorted, order] = logits.sort(1, /*descending=*/true);
    const auto probs = sorted.softmax(1);
    // A token is dropped when the tokens before it already reach p: the most probable stays.
    const auto dropped = (probs.cumsum(1) - probs) >= options.top_p;
    logits = logits.masked_fill(
        torch::zeros_like(dropped).scatter(1, order, dropped), kNever);
  }
  return torch::multinomial(logits.softmax(1), 1, false, generator).squeeze(1);
}

Generated generate(
    models::LanguageModelImpl& model,
    const torch::Tensor& prompt,
    const GenerateOptions& options,
    const std::function<void(const torch::Tensor&)>& on_tokens) {
  TORCH_CHECK(
      prompt.dim() == 2 && prompt.size(0) >= 1 && prompt.size(1) >= 1,
      "generate expects a prompt [P >= 1, B >= 1], got ",
      prompt.sizes());
  TORCH_CHECK(
      options.max_tokens >= 1 && options.segment >= 1 && options.window >= 1,
      "generate needs max_tokens, segment and window >= 1, got ",
      options.max_tokens,
      ", ",
      options.segment,
      ", ",
      options.window);
  torch::NoGradGuard no_grad;
  const EvalScope eval_scope(model);
  models::ProjectionCache cache;
  models::ForwardArgs args;
  args.next_token = true;
  args.span = options.span;
  args.span.ext_len = 0; // every input is read once
  // The cache follows the memory: the windows re-read without one go without it.
  bool caching = options.use_memory;
  const auto step = [&](const torch::Tensor& tokens, const nn::Memory& mems) {
    data::Batch batch;
    batch.tokens = tokens.to(options.device);
    args.cache = caching ? &cache : nullptr;
    return model.forward(batch, mems, args);
  };
  // The context the window re-reads: the prompt, then every token drawn.
  auto context = prompt.to(torch::kLong);
  const auto window = [&] {
    const int64_t length = std::min(options.window, context.size(0));
    return context.narrow(0, context.size(0) - length, length);
  };

  Generated out;
  auto start = std::chrono::steady_clock::now();
  models::ModelOutput state;
  if (options.use_memory) {
    for (int64_t first = 0; first < prompt.size(0); first += options.segment) {
      const int64_t length = std::min(options.segment, prompt.size(0) - first);
      state = step(context.narrow(0, first, length), state.mems);
    }
    out.used_memory = !state.mems.empty();
    caching = out.used_memory;
  }
  if (!out.used_memory) {
    state = step(window(), {});
  }
  auto next = state.next_log_probs.cpu();
  out.prompt_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  std::vector<torch::Tensor> tokens;
  std::vector<torch::Tensor> log_probs;
  for (int64_t n = 0; n < options.max_tokens; ++n) {
    const auto ids = draw_tokens(next, options.sampling, generator); // [B]
    tokens.push_back(ids);
    log_probs.push_back(next.gather(1, ids.unsqueeze(1)).squeeze(1));
    if (on_tokens) {
      on_tokens(ids);
    }
    if (n + 1 == options.max_tokens) {
      break;
    }
    const auto row = ids.unsqueeze(0); // [1, B]
    if (out.used_memory) {
      state = step(row, state.mems);
    } else {
      context = torch::cat({context, row});
      state = step(window(), {});
    }
    next = state.next_log_probs.cpu();
  }
  out.seconds = seconds_since(start);
  out.tokens = torch::stack(tokens);
  out.log_probs = torch::stack(log_probs);
  return out;
}

} // namespace xl::eval
