// xl-sample: generates text from a trained (or imported) Transformer-XL or character-transformer
// run, carrying the memory across segments so that each new token costs one position.
//   xl-sample --run runs/wt2_small --prompt "The meaning of" --tokens 100 --top-p 0.9 --seed 1
//   xl-sample --run runs/enwik8_base --prompt-file start.txt --temperature 0.8 --samples 3
//   xl-sample --run runs/wt2_small --no-memory   (the baseline: every token re-reads the window)
#include "xl/app/cli.h"
#include "xl/app/sample.h"

namespace {

// --prompt, --prompt-file and how the prompt is split.
void add_prompt_flags(CLI::App& app, xl::app::SampleRequest& request) {
  auto* prompt = app.add_option(
      "--prompt",
      request.sample.prompt,
      "the text to continue, encoded with the run's vocabulary (default: a new line)");
  app.add_option(
         "--prompt-file", request.prompt_file, "read the prompt from this file (-: standard input)")
      ->excludes(prompt)
      ->transform(xl::app::dash_for_stdin);
  app.add_flag(
      "--pretokenized",
      request.sample.pretokenized,
      "the prompt is tokenized already: split it at blanks, not by the rules for raw text "
      "that a word run records (docs/runs.md)");
}

} // namespace

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-sample: generate text from a trained run"};
    xl::app::ConfigFlags flags;
    xl::app::SampleRequest request;
    xl::app::add_run_flags(app, flags, request.run_dir, request.checkpoint);
    add_prompt_flags(app, request);
    app.add_option("--tokens", request.sample.tokens, "tokens to generate per sample")
        ->check(xl::positive_count());
    app.add_option("--samples", request.sample.samples, "samples drawn side by side")
        ->check(xl::positive_count());
    app.add_option(
           "--temperature",
           request.sample.sampling.temperature,
           "divides the log-probabilities (0: always the most probable token)")
        ->check(xl::finite_number());
    app.add_option(
           "--top-k",
           request.sample.sampling.top_k,
           "draw from the k most probable tokens only (0: all)")
        ->check(xl::count_from(0));
    app.add_option(
           "--top-p",
           request.sample.sampling.top_p,
           "draw from the fewest most probable tokens whose probability reaches p")
        ->check(xl::finite_number());
    app.add_option("--seed", request.sample.seed, "the same seed draws the same text")
        ->check(xl::count_from(0));
    bool no_memory = false;
    app.add_flag(
        "--no-memory",
        no_memory,
        "re-read the last --window tokens for every new token instead of carrying the memory "
        "(slower: the baseline of the memory's speed-up)");
    app.add_option(
           "--window",
           request.sample.window,
           "tokens re-read per new token without memory (default: eval's memory length, or "
           "train.tgt_len)")
        ->check(xl::positive_count());
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    request.enforce_memory = !flags.skip_memory_check;
    request.sample.use_memory = !no_memory;
    return xl::app::run_sample(config, std::move(request));
  });
}
