#include "xl/infer/sampler.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/formats/text.h"
#include "xl/models/factory.h"
#include "xl/models/registry.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::infer {

// Checked here, with messages of their own: a NaN passes range checks, and a temperature below
// 1e-6 overflows the scaled log-probabilities.
void check_sample_request(
    const config::Config& config,
    const SampleRequest& request,
    const SampleNames& names) {
  const models::ModelFamily& family = models::model_family(config);
  if (!family.no_sampling.empty()) {
    std::vector<std::string> generating;
    for (const models::ModelFamily& f : models::model_families()) {
      if (f.no_sampling.empty()) {
        generating.push_back(f.name);
      }
    }
    throw UserError(fmt::format(
        "this run ({}) is {}: {} generates from causal language models ({})",
        family.name,
        family.no_sampling,
        names.generator,
        fmt::join(generating, ", ")));
  }
  if (request.tokens < 1) {
    throw UserError(
        fmt::format("{} {}: expected a number of tokens >= 1", names.tokens, request.tokens));
  }
  const double temperature = request.sampling.temperature;
  if (!(temperature == 0.0 || (temperature >= 1e-6 && temperature <= 1e6))) {
    throw UserError(fmt::format(
        "{} {}: expected 0 (always the most probable token) or a number from 1e-06 to 1e+06",
        names.temperature,
        temperature));
  }
  if (request.sampling.top_k < 0) {
    throw UserError(fmt::format(
        "{} {}: expected 0 (every token) or more", names.top_k, request.sampling.top_k));
  }
  const double top_p = request.sampling.top_p;
  if (!(top_p > 0.0 && top_p <= 1.0)) {
    throw UserError(fmt::format(
        "{} {}: expected a probability above 0, up to 1 (1: every token)", names.top_p, top_p));
  }
  if (request.window && *request.window < 1) {
    throw UserError(
        fmt::format("{} {}: expected a number of tokens >= 1", names.window, *request.window));
  }
}

namespace {

// The prompt's ids, a raw text split by the vocabulary's rules unless it is tokenized: words
// outside the vocabulary are read as <unk> (with a warning, since the prompt is shown as
// written), and an empty prompt is a new line, what follows a line break in training.
std::vector<int64_t> prompt_ids(const formats::Vocab& vocab, const SampleRequest& request) {
  const std::string& text = request.prompt;
  auto ids = vocab.encode(text, request.prompt_name, /*open_end=*/true, !request.pretokenized);
  if (const int64_t unk = vocab.index("<unk>"); unk >= 0) {
    const auto read_as_unk = std::count(ids.begin(), ids.end(), unk);
    int64_t written = 0;
    for (const auto word : formats::split_words(text)) {
      written += word == "<unk>" ? 1 : 0;
    }
    if (read_as_unk > written) {
      logger().warn(
          "{} of the prompt's words are not in the vocabulary of {}: the model reads them "
          "as <unk>",
          read_as_unk - written,
          vocab.size());
    }
  }
  if (ids.empty()) {
    const int64_t start = vocab.index(vocab.kind() == formats::VocabKind::kWord ? "<eos>" : "\n");
    if (start < 0) {
      throw UserError(fmt::format(
          "the vocabulary has no line break to start from: give {}", request.prompt_name));
    }
    ids.push_back(start);
  }
  return ids;
}

// The generation the request and the run's evaluation settings ask for. Learned position
// tables bound the window a model can re-read.
eval::GenerateOptions generate_options(
    const TrainedRun& run,
    const SampleRequest& request,
    const SampleNames& names) {
  const config::Config& config = run.config();
  eval::GenerateOptions options;
  options.sampling = request.sampling;
  options.max_tokens = request.tokens;
  options.span = models::eval_span(config, false);
  options.segment = config.eval.tgt_len.value_or(config.train.tgt_len);
  const int64_t mem_len = options.span.mem_len.value_or(0);
  options.window = request.window.value_or(mem_len > 0 ? mem_len : config.train.tgt_len);
  const auto& family = models::model_family(config);
  const std::optional<int64_t> n_ctx =
      family.position_limit ? family.position_limit(config) : std::nullopt;
  if (n_ctx && options.window > *n_ctx) {
    throw UserError(fmt::format(
        "{} {}: this model's learned position tables hold {} positions (n_ctx); give {} {} or "
        "less",
        names.window,
        options.window,
        *n_ctx,
        names.window,
        *n_ctx));
  }
  options.use_memory = request.use_memory;
  options.seed = request.seed;
  options.device = run.device();
  options.bf16 = config.train.bf16;
  // Through a memory, each token sees the memory, not a window: a window would change nothing.
  if (request.window && options.use_memory && !run.model().continues_cache() && mem_len > 0) {
    throw UserError(fmt::format(
        "{} {}: this model samples through its memory of {} tokens (eval.mem_len), which sets "
        "what each token sees; {} is the span re-read without the memory (or set eval.mem_len)",
        names.window,
        *request.window,
        mem_len,
        names.window));
  }
  return options;
}

} // namespace

SamplePlan plan_sampling(
    const TrainedRun& run,
    const SampleRequest& request,
    const SampleNames& names) {
  const auto& vocab = run.tokenizer().word_vocab(names.generator);
  return {prompt_ids(vocab, request), generate_options(run, request, names)};
}

eval::Generated generate(
    const TrainedRun& run,
    const SamplePlan& plan,
    int64_t samples,
    const std::function<void(const torch::Tensor&)>& on_tokens) {
  const auto prompt = torch::tensor(plan.ids).unsqueeze(1).repeat({1, samples}); // [P, B]
  const auto lock = run.graph_lock();
  return eval::generate(run.model(), prompt, plan.options, on_tokens);
}

TextStream::TextStream(const formats::Vocab& vocab, int64_t last_prompt_id)
    : vocab_(vocab), after_word_(is_word(last_prompt_id)) {}

bool TextStream::is_word(int64_t id) const {
  return vocab_.kind() == formats::VocabKind::kWord && vocab_.token(id) != "<eos>";
}

std::string TextStream::whole(const std::vector<int64_t>& ids) const {
  return vocab_.decode(ids, after_word_);
}

std::string TextStream::next(int64_t id) {
  std::string text = vocab_.decode({id}, after_word_);
  after_word_ = is_word(id);
  return text;
}

} // namespace xl::infer
