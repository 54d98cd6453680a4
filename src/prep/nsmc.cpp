#include "xl/prep/nsmc.h"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "xl/formats/labelled_file.h"
#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::prep {

namespace {

// NSMC's documents that hold a sentence: each as its sentences, one per line, and a blank line,
// and as a labelled example.
struct NsmcDocuments {
  std::vector<std::string> corpora;
  std::vector<formats::LabelledText> examples;
  NsmcCounts counts;
};

NsmcDocuments read_nsmc(const std::filesystem::path& tsv) {
  // Each review's UTF-8 is checked on its own, naming its line.
  std::string text = read_file(tsv, "NSMC file");
  formats::drop_byte_order_mark(text);
  const auto lines = formats::split_lines(text);
  NsmcDocuments out;
  // Line 1 is the header "id document label": a file without it would lose its first review,
  // and another file's header says it holds something else.
  if (!lines.empty() && lines[0] != formats::kNsmcHeader) {
    throw UserError(fmt::format(
        "{}:1: expected NSMC's header 'id<TAB>document<TAB>label', found '{}'{}",
        tsv.string(),
        lines[0].substr(0, 60),
        lines[0].find('\t') != std::string_view::npos && lines[0].back() >= '0' &&
                lines[0].back() <= '1'
            ? ": a review; add the header line first"
            : ""));
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    auto review = formats::nsmc_review(lines[i], fmt::format("{}:{}", tsv.string(), i + 1));
    const std::string& document = review.text;
    const auto sentences = formats::split_sentences(document);
    if (sentences.empty()) {
      ++out.counts.empty;
      continue;
    }
    std::string& corpus = out.corpora.emplace_back();
    for (const auto sentence : sentences) {
      corpus.append(sentence.data(), sentence.size()).push_back('\n');
    }
    corpus.push_back('\n');
    ++out.counts.documents;
    out.counts.sentences += static_cast<int64_t>(sentences.size());
    out.examples.push_back(std::move(review));
  }
  return out;
}

// Documents [begin, end) as a raw corpus and as labelled texts.
void write_nsmc_part(
    const NsmcDocuments& documents,
    size_t begin,
    size_t end,
    const std::filesystem::path& raw,
    const std::filesystem::path& labelled) {
  std::string corpus;
  for (size_t d = begin; d < end; ++d) {
    corpus += documents.corpora[d];
  }
  atomic_write(raw, corpus);
  formats::write_labelled_texts(
      labelled,
      {documents.examples.begin() + static_cast<std::ptrdiff_t>(begin),
       documents.examples.begin() + static_cast<std::ptrdiff_t>(end)});
}

} // namespace

NsmcCounts convert_nsmc(
    const std::filesystem::path& tsv,
    const std::filesystem::path& raw,
    const std::filesystem::path& labelled,
    int64_t held_out,
    const std::filesystem::path& held_raw,
    const std::filesystem::path& held_labelled) {
  const NsmcDocuments documents = read_nsmc(tsv);
  const NsmcCounts& counts = documents.counts;
  if (counts.documents == 0) {
    throw UserError("NSMC file has no documents: " + tsv.string());
  }
  if (held_out >= counts.documents) {
    throw UserError(fmt::format(
        "{} has {} documents: cannot hold out {} and train on the rest",
        tsv.string(),
        counts.documents,
        held_out));
  }
  const size_t total = documents.corpora.size();
  const size_t kept = total - static_cast<size_t>(held_out);
  write_nsmc_part(documents, 0, kept, raw, labelled);
  if (held_out > 0) {
    write_nsmc_part(documents, kept, total, held_raw, held_labelled);
  }
  return counts;
}

} // namespace xl::prep
