#include "xl/app/sample.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "xl/app/trained_model.h"
#include "xl/eval/generate.h"
#include "xl/formats/text.h"
#include "xl/models/factory.h"
#include "xl/models/registry.h"
#include "xl/run/logging.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/device.h"
#include "xl/sources/dataset.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::app {

// Checked here, with messages of their own: a NaN passes CLI11's range checks, and a
// temperature below 1e-6 overflows the scaled log-probabilities.
void check_sample_request(const config::Config& config, const SampleRequest& request) {
  const models::ModelFamily& family = models::model_family(config);
  if (!family.no_sampling.empty()) {
    std::vector<std::string> generating;
    for (const models::ModelFamily& f : models::model_families()) {
      if (f.no_sampling.empty()) {
        generating.push_back(f.name);
      }
    }
    throw UserError(fmt::format(
        "{} is {}: xl-sample generates from causal language models ({})",
        request.run_dir,
        family.no_sampling,
        fmt::join(generating, ", ")));
  }
  if (!(request.temperature == 0.0 ||
        (request.temperature >= 1e-6 && request.temperature <= 1e6))) {
    throw UserError(fmt::format(
        "--temperature {}: expected 0 (always the most probable token) or a number from "
        "1e-06 to 1e+06",
        request.temperature));
  }
  if (!(request.top_p > 0.0 && request.top_p <= 1.0)) {
    throw UserError(fmt::format(
        "--top-p {}: expected a probability above 0, up to 1 (1: every token)", request.top_p));
  }
  if (request.seed < 0) {
    throw UserError(fmt::format("--seed {}: expected a whole number >= 0", request.seed));
  }
}

namespace {

// The prompt's ids: words outside the vocabulary are read as <unk> (with a warning, since
// stdout echoes them as written), and an empty prompt is a new line, what follows a line break
// in training.
std::vector<int64_t> prompt_ids(
    const formats::Vocab& vocab,
    const std::string& text,
    const SampleRequest& request) {
  auto ids = vocab.encode(text, request.prompt_file.value_or("--prompt"), /*open_end=*/true);
  if (const int64_t unk = vocab.index("<unk>"); unk >= 0) {
    const auto read_as_unk = std::count(ids.begin(), ids.end(), unk);
    int64_t written = 0;
    for (const auto word : formats::split_words(text)) {
      written += word == "<unk>" ? 1 : 0;
    }
    if (read_as_unk > written) {
      spdlog::warn(
          "{} of the prompt's words are not in the vocabulary of {}: the model reads them "
          "as <unk>",
          read_as_unk - written,
          vocab.size());
    }
  }
  if (ids.empty()) {
    const int64_t start = vocab.index(vocab.kind() == formats::VocabKind::kWord ? "<eos>" : "\n");
    if (start < 0) {
      throw UserError("the vocabulary has no line break to start from: give a --prompt");
    }
    ids.push_back(start);
  }
  return ids;
}

// The generation the request and the run's evaluation settings ask for. Learned position
// tables bound the window a model can re-read.
eval::GenerateOptions generate_options(
    const config::Config& config,
    const SampleRequest& request,
    const torch::Device& device) {
  eval::GenerateOptions options;
  options.sampling = {request.temperature, request.top_k, request.top_p};
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
        "--window {}: this model's learned position tables hold {} positions (n_ctx); give "
        "--window {} or less",
        options.window,
        *n_ctx,
        *n_ctx));
  }
  options.use_memory = !request.no_memory;
  options.seed = static_cast<uint64_t>(request.seed);
  options.device = device;
  options.bf16 = config.train.bf16;
  return options;
}

// Through a memory, each token sees the memory, not a window: --window would change nothing.
void refuse_unread_window(
    const SampleRequest& request,
    const eval::GenerateOptions& options,
    models::LanguageModelImpl& model) {
  if (request.window && options.use_memory && !model.continues_cache() &&
      options.span.mem_len.value_or(0) > 0) {
    throw UserError(fmt::format(
        "--window {}: this model samples through its memory of {} tokens (eval.mem_len), "
        "which sets what each token sees; --window is the span re-read with --no-memory (or set "
        "eval.mem_len with --set)",
        *request.window,
        *options.span.mem_len));
  }
}

// The prompt as given, then the continuation: one sample streams as it is drawn, several are
// printed one after another at the end.
eval::Generated print_samples(
    models::LanguageModelImpl& model,
    const formats::Vocab& vocab,
    const std::string& text,
    const std::vector<int64_t>& ids,
    const eval::GenerateOptions& options,
    int64_t samples) {
  const auto prompt = torch::tensor(ids).unsqueeze(1).repeat({1, samples}); // [P, B]
  std::cout << text << std::flush;
  TextStream stream(vocab, ids.back());
  auto generated = eval::generate(model, prompt, options, [&](const torch::Tensor& drawn) {
    if (samples == 1) {
      std::cout << stream.next(drawn[0].item<int64_t>()) << std::flush;
    }
  });
  if (samples > 1) {
    const auto rows = generated.tokens.t().contiguous(); // [B, N]
    for (int64_t b = 0; b < samples; ++b) {
      const auto row = rows[b];
      std::cout << fmt::format("\n--- sample {} ---\n", b + 1) << text
                << TextStream(vocab, ids.back())
                       .whole({row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()});
    }
  }
  std::cout << std::endl;
  return generated;
}

} // namespace

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

SamplePlan plan_sampling(
    const config::Config& config,
    const SampleRequest& request,
    const formats::Vocab& vocab,
    const std::string& text,
    models::LanguageModelImpl& model,
    const torch::Device& device) {
  SamplePlan plan{prompt_ids(vocab, text, request), generate_options(config, request, device)};
  refuse_unread_window(request, plan.options, model);
  return plan;
}

int run_sample(const config::Config& config, const SampleRequest& request) {
  // 1. The request, the model (the samples are the batch rows the memory check counts) and
  //    the prompt: words are UTF-8 text, bytes (enwik8) may be anything.
  run::setup_logging(config.run.log_level);
  check_sample_request(config, request);
  const run::RunPaths paths = run::paths_of(request.run_dir);
  runtime::setup_runtime(config.train);
  const auto dataset = models::open_dataset(config);
  const formats::Vocab& vocab = dataset->text_vocab();
  const torch::Device device = runtime::pick_device(config.train);
  auto sampling = config;
  sampling.eval.batch_size = request.samples;
  const auto trained = load_trained_model(
      sampling, paths, request.checkpoint, *dataset, device, request.enforce_memory, "sampling");
  const std::string text = !request.prompt_file ? request.prompt
      : vocab.kind() == formats::VocabKind::kWord
      ? formats::read_utf8_text(*request.prompt_file, "prompt file")
      : read_file(*request.prompt_file, "prompt file");
  const auto [ids, options] = plan_sampling(config, request, vocab, text, *trained.model, device);
  // 2. The samples on stdout, the speed on stderr.
  spdlog::info(
      "sampling {} x {} tokens from {} (step {}) after a prompt of {} tokens: temperature "
      "{}, top-k {}, top-p {}, seed {}",
      request.samples,
      request.tokens,
      trained.checkpoint.string(),
      trained.step,
      ids.size(),
      request.temperature,
      request.top_k,
      request.top_p,
      request.seed);
  const auto generated = print_samples(*trained.model, vocab, text, ids, options, request.samples);
  const auto n = static_cast<double>(generated.tokens.numel());
  spdlog::info(
      "{} tokens in {:.2f} s: {:.1f} tokens/s, {}; the prompt read in {:.2f} s; the samples' "
      "perplexity under the model {:.2f}",
      generated.tokens.numel(),
      generated.seconds,
      n / std::max(generated.seconds, 1e-9),
      generated.used_memory
          ? fmt::format(
                "one position per token over a memory of {}", options.span.mem_len.value_or(0))
          : generated.used_cache
          ? fmt::format(
                "one position per token over a cache of up to {} (the window re-read once "
                "the context outgrows it)",
                options.window)
          : fmt::format("re-reading up to {} tokens per token", options.window),
      generated.prompt_seconds,
      std::exp(-generated.log_probs.to(torch::kDouble).mean().item<double>()));
  return 0;
}

} // namespace xl::app
