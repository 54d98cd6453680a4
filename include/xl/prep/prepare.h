// Preparing corpora (xl-prep): a word or byte vocabulary and token files, or XLNet's
// SentencePiece model and pieces files, in one folder that training then reads
// (sources/corpus.h, models/xlnet/data.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "xl/formats/vocab.h"
#include "xl/prep/sentencepiece_training.h"

namespace xl::prep {

struct PrepOptions {
  formats::VocabKind kind = formats::VocabKind::kWord;
  /// Split name ("train", "valid", "test") -> text file. "train" is required.
  std::map<std::string, std::filesystem::path> splits;
  std::filesystem::path out;
  /// Build the vocabulary from the training split only ("train") or from all splits ("all"),
  /// counted in the order train, valid, test, as kimiyoung's and NVIDIA's code count WikiText
  /// (the order decides ties of equal counts, and with them the adaptive softmax's clusters).
  std::string vocab_from = "train";
  /// word vocabularies: words seen fewer times are left out (mapped to <unk>)
  int64_t min_freq = 0;
  /// word vocabularies: at most this many tokens, specials included (the rarest left out)
  std::optional<int64_t> max_size;
  /// word vocabularies: add <unk> (unseen words map to it); implied by min_freq > 1 or max_size
  bool unk = false;
  /// word vocabularies built here: how the training text is split, recorded so that a raw text
  /// is split the same way when it is scored: "wikitext", "none", or "auto" (wikitext where the
  /// training text holds WikiText's own tokens, formats::reads_as_wikitext)
  std::string tokenization = "auto";
  /// with `vocab`: the splits are tokenized already (split at blanks), not raw text split by the
  /// vocabulary's rules
  bool pretokenized = false;
  /// Reuse this vocabulary instead of building one (e.g. to encode new text for
  /// a trained model).
  std::optional<std::filesystem::path> vocab;
};

struct PrepReport {
  int64_t vocab_size = 0;
  std::map<std::string, int64_t> tokens; // per split
};

/// Builds (or loads) the vocabulary and writes <out>/vocab.txt and
/// <out>/<split>.bin.
PrepReport prepare_corpus(const PrepOptions& options);

struct XLNetPrepOptions {
  /// Split name -> raw text (one sentence per line, a blank line between
  /// documents). "train" is required unless `model` is given.
  std::map<std::string, std::filesystem::path> splits;
  std::filesystem::path out;
  /// Encode with this SentencePiece model instead of training one on "train".
  std::optional<std::filesystem::path> model;
  SentencePieceOptions sentencepiece;
};

/// Trains a SentencePiece model on the training split (or copies `model`) to
/// <out>/spiece.model and encodes every split into <out>/<split>.pieces.
PrepReport prepare_xlnet_corpus(const XLNetPrepOptions& options);

} // namespace xl::prep
