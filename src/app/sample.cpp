#include "xl/app/sample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "xl/formats/text.h"
#include "xl/run/logging.h"
#include "xl/runtime/device.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::app {

namespace {

// The prompt as given, then the continuation: one sample streams as it is drawn, several are
// printed one after another at the end.
eval::Generated print_samples(
    const infer::TrainedRun& run,
    const infer::SamplePlan& plan,
    const std::string& text,
    int64_t samples) {
  const formats::Vocab& vocab = run.tokenizer().word_vocab("xl-sample");
  std::cout << text << std::flush;
  infer::TextStream stream(vocab, plan.ids.back());
  auto generated = infer::generate(run, plan, samples, [&](const torch::Tensor& drawn) {
    if (samples == 1) {
      std::cout << stream.next(drawn[0].item<int64_t>()) << std::flush;
    }
  });
  if (samples > 1) {
    const auto rows = generated.tokens.t().contiguous(); // [B, N]
    for (int64_t b = 0; b < samples; ++b) {
      const auto row = rows[b];
      std::cout << fmt::format("\n--- sample {} ---\n", b + 1) << text
                << infer::TextStream(vocab, plan.ids.back())
                       .whole({row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel()});
    }
  }
  std::cout << std::endl;
  return generated;
}

} // namespace

int run_sample(const config::Config& config, SampleRequest request) {
  // 1. The request, the model (the samples are the batch rows the memory check counts) and
  //    the prompt: words are UTF-8 text, bytes (enwik8) may be anything.
  run::setup_logging(config.run.log_level);
  infer::check_sample_request(config, request.sample);
  runtime::setup_runtime(config.train);
  auto sampling = config;
  sampling.eval.batch_size = request.sample.samples;
  infer::OpenOptions open;
  open.checkpoint = request.checkpoint;
  open.enforce_memory = request.enforce_memory;
  open.use = "sampling";
  const auto run = infer::TrainedRun::open(sampling, request.run_dir, open);
  if (request.prompt_file) {
    request.sample.prompt_name = *request.prompt_file;
    request.sample.prompt = run->tokenizer().unit() == formats::VocabKind::kWord
        ? formats::read_utf8_text(*request.prompt_file, "prompt file")
        : read_file(*request.prompt_file, "prompt file");
  }
  const auto plan = infer::plan_sampling(*run, request.sample);
  // 2. The samples on stdout, the speed on stderr.
  const auto& s = request.sample;
  logger().info(
      "sampling {} x {} tokens from {} (step {}) after a prompt of {} tokens: temperature "
      "{}, top-k {}, top-p {}, seed {}",
      s.samples,
      s.tokens,
      run->checkpoint().string(),
      run->step(),
      plan.ids.size(),
      s.sampling.temperature,
      s.sampling.top_k,
      s.sampling.top_p,
      s.seed);
  const auto generated = print_samples(*run, plan, s.prompt, s.samples);
  const auto n = static_cast<double>(generated.tokens.numel());
  logger().info(
      "{} tokens in {:.2f} s: {:.1f} tokens/s, {}; the prompt read in {:.2f} s; the samples' "
      "perplexity under the model {:.2f}",
      generated.tokens.numel(),
      generated.seconds,
      n / std::max(generated.seconds, 1e-9),
      generated.used_memory
          ? fmt::format(
                "one position per token over a memory of {}", plan.options.span.mem_len.value_or(0))
          : generated.used_cache
          ? fmt::format(
                "one position per token over a cache of up to {} (the window re-read once "
                "the context outgrows it)",
                plan.options.window)
          : fmt::format("re-reading up to {} tokens per token", plan.options.window),
      generated.prompt_seconds,
      std::exp(-generated.log_probs.to(torch::kDouble).mean().item<double>()));
  return 0;
}

} // namespace xl::app
