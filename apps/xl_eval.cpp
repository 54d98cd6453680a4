// xl-eval: evaluates a trained run on a split, with the evaluation lengths of
// its config (eval.tgt_len, eval.mem_len, eval.clamp_len, eval.same_length),
// overridable with --set.
//   xl-eval --run runs/wt2_small [--set eval.mem_len=640] [--checkpoint last]
//   xl-eval --run runs/wt2_small --set eval.mode=vanilla   (the paper's baseline evaluation;
//            --set eval.stride=S scores the last S positions per window: bpc@stride=S)
//   xl-eval --run runs/wt2_small --file my.txt [--per-token scores.tsv] [--json result.json]
//            (any text, encoded with the run's vocabulary; XLNet: the permutation-LM loss of
//            raw text, one sentence per line, a blank line between documents; a classifier:
//            labelled text)
//   xl-eval --run runs/imported --max-steps 3 --dump-batches batches.safetensors
//            (the scored batches, e.g. for Hugging Face to score the same inputs)
#include "xl/app/cli.h"
#include "xl/app/eval.h"

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-eval: evaluate a trained run (perplexity or bits per character)"};
    xl::app::ConfigFlags flags;
    xl::app::EvalRequest request;
    xl::app::add_run_flags(app, flags, request.run_dir, request.checkpoint);
    app.add_option(
           "--max-steps",
           request.max_steps,
           "score only this many segments (memory mode) or window batches (vanilla)")
        ->check(xl::positive_count());
    app.add_option(
        "--file",
        request.file,
        "score this file instead of eval.split: UTF-8 text encoded with the run's vocabulary "
        "(words it lacks read as <unk>) or a token file xl-prep made with it; raw text for XLNet "
        "pretraining, labelled text for a classifier. The result goes to stdout (and --json), "
        "not into the run's metrics.jsonl");
    app.add_option("--json", request.json, "also write the result as a JSON object to this file");
    app.add_option(
        "--per-token",
        request.per_token,
        "also list every token with its log-probability in this TSV file (index, token, "
        "log_prob; see docs/runs.md)");
    app.add_option(
        "--dump-batches",
        request.dump_batches,
        "also write the scored batches to this safetensors file (batch_<s>/<field>), to feed "
        "another implementation the same inputs");
    app.add_flag(
        "--force", request.force, "replace the files --json, --per-token and --dump-batches name");
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    request.enforce_memory = !flags.skip_memory_check;
    return xl::app::run_evaluation(config, request);
  });
}
