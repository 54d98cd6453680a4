#include "xl/eval/report.h"

#include <fmt/format.h>

#include <cmath>

#include "xl/run/progress.h"
#include "xl/util/log.h"

namespace xl::eval {

std::optional<Metric> metric(
    const models::TermTotal& term,
    formats::VocabKind unit,
    const std::string& qualifier) {
  switch (term.kind) {
    case models::TermKind::kTokenNll:
      if (unit == formats::VocabKind::kByte) {
        return Metric{"bpc" + qualifier, term.mean() / std::log(2.0)};
      }
      return Metric{"ppl" + qualifier, std::exp(term.mean())};
    case models::TermKind::kAccuracy:
      return Metric{"acc" + qualifier, term.mean()};
    case models::TermKind::kNll:
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

std::string term_key(const models::TermTotal& term) {
  return (term.kind == models::TermKind::kAccuracy ? "acc/" : "loss/") + term.name;
}

} // namespace

void add_terms(
    nlohmann::json& record,
    const std::vector<models::TermTotal>& terms,
    formats::VocabKind unit,
    const std::string& qualifier) {
  const auto& headline = terms.at(0);
  record["loss"] = headline.mean();
  if (const auto m = metric(headline, unit, qualifier)) {
    record[m->name] = m->value;
  }
  for (const auto& term : terms) {
    if (term.count > 0) { // a stopped auxiliary loss counts nothing
      record[term_key(term)] = term.mean();
    }
  }
}

std::string terms_line(
    const std::vector<models::TermTotal>& terms,
    formats::VocabKind unit,
    const std::string& qualifier) {
  const auto& headline = terms.at(0);
  std::string line = fmt::format(" | loss {:.4f}", headline.mean());
  if (const auto m = metric(headline, unit, qualifier)) {
    line += fmt::format(" | {} {:.3f}", m->name, m->value);
  }
  for (size_t i = 1; i < terms.size(); ++i) {
    if (terms[i].count > 0) {
      line += fmt::format(" | {} {:.4f}", term_key(terms[i]), terms[i].mean());
    }
  }
  return line;
}

EvalReport report_evaluation(
    const std::string& label,
    const EvalResult& result,
    formats::VocabKind unit,
    nlohmann::json fields) {
  EvalReport report;
  // The baseline reads beside a headline that counted the same targets.
  const auto& headline = result.headline();
  const auto& baseline = result.baseline;
  const bool compared = baseline.targets > 0 && baseline.targets == headline.count &&
      headline.kind == models::TermKind::kTokenNll;
  std::string versus;
  if (compared) {
    versus = fmt::format(
        " | unigram {:.4f} | nats/char {:.4f} (unigram {:.4f})",
        baseline.unigram_nll / static_cast<double>(baseline.targets),
        headline.sum / baseline.chars,
        baseline.unigram_nll / baseline.chars);
  }
  // A classifier's headline counts examples.
  const bool tokens = headline.kind == models::TermKind::kTokenNll;
  report.line = fmt::format(
      "{}{}{} | {} {} | {} {}/s{}",
      label,
      terms_line(result.terms, unit, result.qualifier),
      versus,
      result.tokens(),
      tokens ? "tokens" : "examples",
      run::format_count(result.tokens_per_second()),
      tokens ? "tok" : "ex",
      result.partial
          ? fmt::format(" | PARTIAL: {} of {} batches", result.batches, result.pass_batches)
          : "");
  report.record = std::move(fields);
  add_terms(report.record, result.terms, unit, result.qualifier);
  if (compared) {
    report.record["unigram_loss"] = baseline.unigram_nll / static_cast<double>(baseline.targets);
    report.record["loss_per_char"] = headline.sum / baseline.chars;
    report.record["unigram_loss_per_char"] = baseline.unigram_nll / baseline.chars;
  }
  report.record["tokens"] = result.tokens();
  report.record["tokens_per_s"] = result.tokens_per_second();
  report.record["batches"] = result.batches;
  if (result.partial) {
    report.record["partial"] = true;
    report.record["pass_batches"] = result.pass_batches;
  }
  return report;
}

void add_text_reading(EvalReport& report, const sources::TextReading& reading) {
  const auto& count = reading.count;
  nlohmann::json read{{"unit", reading.unit}, {"units", count.units}, {"unknown", count.unknown}};
  if (count.unknown > 0) {
    const double share = 100.0 * static_cast<double>(count.unknown) / count.units;
    report.line += fmt::format(
        " | {} of {} {} ({:.1f}%) not in the vocabulary, {}",
        count.unknown,
        count.units,
        reading.unit,
        share,
        reading.unknown_as == "<unk>" ? "read as <unk>" : reading.unknown_as);
    read["unknown_as"] = reading.unknown_as;
    if (2 * count.unknown > count.units) {
      logger().warn(
          "{:.1f}% of the {} are not in the run's vocabulary: the score says little about "
          "this text",
          share,
          reading.unit);
    }
  }
  if (!reading.rules.empty()) {
    report.line += fmt::format(
        " | words split by {}'s rules for raw text",
        reading.rules == "wikitext" ? "WikiText" : reading.rules);
    read["tokenization"] = reading.rules;
  }
  if (!reading.fitted.empty()) {
    read["fitted"] = reading.fitted;
  }
  report.record["read"] = std::move(read);
}

void add_in_vocabulary(EvalReport& report, int64_t tokens, double nll) {
  if (tokens <= 0) {
    return;
  }
  const double loss = nll / static_cast<double>(tokens);
  report.line += fmt::format(
      " | in-vocabulary ppl {:.3f} over {} targets (<unk> left out)", std::exp(loss), tokens);
  report.record["in_vocabulary"] = {{"tokens", tokens}, {"loss", loss}, {"ppl", std::exp(loss)}};
}

} // namespace xl::eval
