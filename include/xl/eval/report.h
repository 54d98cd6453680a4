// How evaluation and training results read: metric names by term kind, the console line and the
// metrics.jsonl record. Training's validation and xl-eval report through the same functions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "xl/eval/evaluator.h"
#include "xl/formats/vocab.h"
#include "xl/models/loss.h"
#include "xl/sources/dataset.h"

namespace xl::eval {

struct Metric {
  std::string name; // "ppl", "bpc", "acc", with the source's qualifier: "bpc@stride=8"
  double value = 0.0;
};

/// The metric `term` reads as: perplexity (word or piece data) or bits per character (bytes) for
/// a token NLL, accuracy for an accuracy count; none for a per-example NLL (its loss says it).
std::optional<Metric> metric(
    const models::TermTotal& term,
    formats::VocabKind unit,
    const std::string& qualifier = "");

/// Adds "loss" and the headline metric (terms[0]), then every term that counted anything (a
/// stopped auxiliary loss counts nothing) under "loss/<name>" or, for
/// accuracy counts, "acc/<name>".
void add_terms(
    nlohmann::json& record,
    const std::vector<models::TermTotal>& terms,
    formats::VocabKind unit,
    const std::string& qualifier = "");

/// " | loss 5.6512 | ppl 284.47", then " | <name> <mean>" for each further term that counted
/// anything.
std::string terms_line(
    const std::vector<models::TermTotal>& terms,
    formats::VocabKind unit,
    const std::string& qualifier = "");

struct EvalReport {
  std::string line;
  nlohmann::json record;
};

/// "<label> | loss .. | ppl .. | N tokens | R tok/s[ | PARTIAL: b of n batches]" and the
/// record: `fields` (step, split, setting, ...) followed by the terms, tokens, tokens_per_s,
/// batches, and for a partial pass "partial": true and pass_batches. When the result holds the
/// unigram guess of the same targets, also " | unigram .. | nats/char .. (unigram ..)": the
/// record's unigram_loss, loss_per_char and unigram_loss_per_char.
EvalReport report_evaluation(
    const std::string& label,
    const EvalResult& result,
    formats::VocabKind unit,
    nlohmann::json fields);

/// What reading a user's text adds to its report: the share of it the vocabulary lacks (a
/// warning when it is most of the text) and how a short text was cut (the record's "read").
void add_text_reading(EvalReport& report, const sources::TextReading& reading);

/// The perplexity over the targets a word vocabulary has (`tokens` of them, summing `nll`),
/// beside the usual one over every target, <unk> included, which the rare-word class flatters:
/// " | in-vocabulary ppl .. over N targets (<unk> left out)" and the record's "in_vocabulary".
void add_in_vocabulary(EvalReport& report, int64_t tokens, double nll);

} // namespace xl::eval
