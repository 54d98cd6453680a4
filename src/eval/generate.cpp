#include "xl/eval/generate.h"

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <limits>

#include "xl/eval/eval_scope.h"
#include "xl/runtime/autocast.h"

namespace xl::eval {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
    const auto kth = std::get<0>(logits.topk(options.top_k, 1)).narrow(1, options.top_k - 1, 1);
    logits = logits.masked_fill(logits < kth, kNever);
  }
  if (options.top_p < 1.0) {
    const auto [sorted, order] = logits.sort(1, /*descending=*/true);
    const auto probs = sorted.softmax(1);
    // A token is dropped when the tokens before it already reach p: the most probable stays.
    const auto dropped = (probs.cumsum(1) - probs) >= options.top_p;
    logits = logits.masked_fill(torch::zeros_like(dropped).scatter(1, order, dropped), kNever);
  }
  return torch::multinomial(logits.softmax(1), 1, false, generator).squeeze(1);
}

namespace {

// The forward passes of one generation: the prompt read (through the memory, segment by
// segment, or as one window), then one new token at a time.
class GenerationSteps {
 public:
  GenerationSteps(
      models::LanguageModelImpl& model,
      const torch::Tensor& prompt,
      const GenerateOptions& options)
      : model_(model), options_(options), context_(prompt.to(torch::kLong)) {
    args_.next_token = true;
    args_.span = options.span;
    args_.span.ext_len = 0; // every input is read once
  }

  // The prompt's state; `used_memory` says whether the memory carries it from now on.
  models::ModelOutput read_prompt(bool& used_memory) {
    models::ModelOutput state;
    used_memory = false;
    // A decoding cache: the window read once, then each new token alone while they fit it.
    decoding_ = options_.use_memory && model_.continues_cache();
    if (decoding_) {
      caching_ = true;
      return step(window(), {});
    }
    if (options_.use_memory) {
      caching_ = true;
      const int64_t length = context_.size(0);
      for (int64_t first = 0; first < length; first += options_.segment) {
        state =
            step(context_.narrow(0, first, std::min(options_.segment, length - first)), state.mems);
      }
      used_memory = !state.mems.empty();
    }
    // The cache follows the memory: the windows re-read without one go without it.
    caching_ = used_memory;
    return used_memory ? state : step(window(), {});
  }

  // The state after the tokens `ids` [B] were drawn.
  models::ModelOutput extend(
      const torch::Tensor& ids,
      const models::ModelOutput& state,
      bool used_memory) {
    const auto row = ids.unsqueeze(0); // [1, B]
    if (used_memory) {
      return step(row, state.mems);
    }
    context_ = torch::cat({context_, row});
    if (decoding_ && context_.size(0) <= options_.window) {
      return step(row, {}); // the cache holds every token before it
    }
    // Re-read: the window slid, and every position in it moved (a decoding cache starts anew).
    cache_ = {};
    return step(window(), {});
  }

  bool decoding() const {
    return decoding_;
  }

 private:
  models::ModelOutput step(const torch::Tensor& tokens, const nn::Memory& mems) {
    sources::Batch batch;
    batch.tokens = tokens.to(options_.device);
    args_.cache = caching_ ? &cache_ : nullptr;
    const runtime::AutocastGuard autocast(options_.device, options_.bf16);
    return model_.forward(batch, mems, args_);
  }

  // The context the window re-reads: the prompt, then every token drawn.
  torch::Tensor window() const {
    const int64_t length = std::min(options_.window, context_.size(0));
    return context_.narrow(0, context_.size(0) - length, length);
  }

  models::LanguageModelImpl& model_;
  const GenerateOptions& options_;
  torch::Tensor context_;
  models::ForwardArgs args_;
  models::ProjectionCache cache_;
  bool caching_ = false;
  bool decoding_ = false;
};

} // namespace

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
  const c10::InferenceMode inference; // no autograd records: only the drawn ids leave
  const EvalScope eval_scope(model);
  const runtime::KeptWeightCasts kept_casts(options.bf16);
  GenerationSteps steps(model, prompt, options);

  Generated out;
  auto start = std::chrono::steady_clock::now();
  models::ModelOutput state = steps.read_prompt(out.used_memory);
  out.used_cache = steps.decoding();
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
    if (n + 1 == options.max_tokens || (options.stop && options.stop())) {
      break;
    }
    state = steps.extend(ids, state, out.used_memory);
    next = state.next_log_probs.cpu();
  }
  out.seconds = seconds_since(start);
  out.tokens = torch::stack(tokens);
  out.log_probs = torch::stack(log_probs);
  return out;
}

} // namespace xl::eval
