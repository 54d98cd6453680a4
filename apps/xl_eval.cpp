// xl-eval: evaluates a trained run on a split, with the evaluation lengths of
// its config (eval.tgt_len, eval.mem_len, eval.clamp_len, eval.same_length),
// overridable with --set.
//   xl-eval --run runs/wt2_small [--set eval.mem_len=640] [--checkpoint last]
//   xl-eval --run runs/wt2_small --set eval.mode=vanilla   (the paper's baseline evaluation;
//            --set eval.stride=S scores the last S positions per window: bpc@stride=S)
//   xl-eval --run runs/wt2_small --file my.txt [--per-token scores.tsv] [--json result.json]
//            (any text, encoded with the run's vocabulary, one stream with the long memory;
//            XLNet: raw text, every piece left to right; a classifier: labelled text)
//   xl-eval --run runs/wt2_small --documents docs.jsonl --out scores.jsonl [--resume]
//            [--shard K/N] [--sessions N] (each document on its own, a JSON line each)
//   xl-eval --run runs/imported --max-steps 3 --dump-batches batches.safetensors
//            (the scored batches, e.g. for Hugging Face to score the same inputs)
#include "xl/app/cli.h"
#include "xl/app/documents.h"
#include "xl/app/eval.h"
#include "xl/formats/document_reader.h"
#include "xl/util/error.h"

namespace {

// What scores one text or split, and how it is written.
void add_text_flags(CLI::App& app, xl::app::EvalRequest& request) {
  app.add_option(
         "--max-steps",
         request.max_steps,
         "score only this many segments (memory mode) or window batches (vanilla)")
      ->check(xl::positive_count());
  app.add_option(
         "--file",
         request.file,
         "score this file instead of eval.split: UTF-8 text encoded with the run's vocabulary "
         "(words it lacks read as <unk>) or a token file xl-prep made with it; raw text for XLNet, "
         "labelled text for a classifier; - for standard input. The result goes to stdout (and "
         "--json), not into the run's metrics.jsonl")
      ->transform(xl::app::dash_for_stdin);
  app.add_option(
         "--json", request.json, "also write the result as a JSON object to this file (-: stdout)")
      ->transform(xl::app::dash_for_stdout);
  app.add_option(
         "--per-token",
         request.per_token,
         "also list every token with its log-probability in this TSV file (index, token, "
         "log_prob, and offset and text for words and bytes; see docs/runs.md; -: stdout)")
      ->transform(xl::app::dash_for_stdout);
  app.add_option(
      "--dump-batches",
      request.dump_batches,
      "also write the scored batches to this safetensors file (batch_<s>/<field>), to feed "
      "another implementation the same inputs");
  app.add_option(
         "--streams",
         request.streams,
         "--file: the contiguous streams the text is cut into, each read with the memory from "
         "its own start (1: the whole text with the long memory; more is faster)")
      ->check(xl::positive_count());
  app.add_flag(
      "--permutation",
      request.permutation,
      "--file of an XLNet run: the permutation LM's sampled estimate (num_predict targets per "
      "record, as pretraining evaluates) instead of every piece left to right");
  app.add_flag(
      "--pretokenized",
      request.pretokenized,
      "--file, --documents: the text is tokenized already (WikiText's own files): split it at "
      "blanks, not by the rules for raw text that a word run records (docs/runs.md)");
}

// --documents and its own flags; `shard` receives K/N.
CLI::Option* add_documents_flags(
    CLI::App& app,
    xl::app::DocumentsRequest& documents,
    std::string& shard) {
  auto* many = app.add_option(
      "--documents",
      documents.documents,
      "score each document of this file or folder on its own (JSONL with a \"text\" field, one "
      "document a line, or a folder of .txt files): one JSON line each, to --out");
  app.add_option(
         "--format",
         documents.format,
         "--documents: auto (a folder; a first line starting with '{': jsonl; else lines), "
         "jsonl, lines or folder")
      ->check(CLI::IsMember(std::vector<std::string>(
          std::begin(xl::formats::kDocumentFormats), std::end(xl::formats::kDocumentFormats))));
  app.add_option("--out", documents.out, "--documents: the JSONL file to write (default: stdout)");
  app.add_flag(
      "--resume",
      documents.resume,
      "--documents: continue the --out an interrupted run left, after its last whole line");
  app.add_option(
         "--shard",
         shard,
         "--documents: score part K of N (K/N, from 1/N), so that N processes score one corpus; "
         "their --out files, concatenated from 1 to N, are the whole output")
      ->check(xl::shard_of());
  app.add_option(
         "--sessions",
         documents.sessions,
         "--documents: groups of documents scored at once, each by a session (thread) of its own")
      ->check(xl::positive_count());
  return many;
}

} // namespace

int main(int argc, char** argv) {
  return xl::app::run_main(argv, [&] {
    CLI::App app{"xl-eval: evaluate a trained run (perplexity or bits per character)"};
    xl::app::ConfigFlags flags;
    xl::app::EvalRequest request;
    xl::app::add_run_flags(app, flags, request.run_dir, request.checkpoint);
    add_text_flags(app, request);
    xl::app::DocumentsRequest documents;
    std::string shard;
    auto* many = add_documents_flags(app, documents, shard);
    app.add_flag(
        "--force",
        request.force,
        "replace the files --json, --per-token, --dump-batches and --out name");
    for (const char* single :
         {"--file", "--per-token", "--dump-batches", "--max-steps", "--json"}) {
      many->excludes(app.get_option(single));
    }
    xl::config::Config config;
    if (const auto status = xl::app::parse_and_load(app, argc, argv, flags, config)) {
      return *status;
    }
    if (!documents.documents.empty()) {
      documents.run_dir = request.run_dir;
      documents.checkpoint = request.checkpoint;
      documents.force = request.force;
      documents.enforce_memory = !flags.skip_memory_check;
      documents.pretokenized = request.pretokenized;
      if (!shard.empty()) {
        std::tie(documents.shard, documents.shards) = xl::parse_shard(shard);
      }
      return xl::app::run_documents(config, documents);
    }
    for (const char* alone : {"--out", "--resume", "--shard", "--sessions", "--format"}) {
      if (app.count(alone) > 0) {
        throw xl::UserError(std::string(alone) + " goes with --documents");
      }
    }
    request.enforce_memory = !flags.skip_memory_check;
    return xl::app::run_evaluation(config, request);
  });
}
