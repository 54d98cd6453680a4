// xl-prep: a vocabulary built and text corpora encoded into a folder of prepared data, in one of
// the registered formats (prep_formats()).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "xl/prep/prepare.h"

namespace xl::app {

struct PrepRequest {
  /// a registered format's name (prep_formats())
  std::string format = "word";
  /// the splits' text files (train required; empty: no such split)
  std::string train;
  std::string valid;
  std::string test;
  /// the folder to write
  std::string out;
  /// word, byte: encode with this vocab.txt instead of building one
  std::string vocab;
  /// xlnet: encode with this SentencePiece model instead of training one
  std::string spm_model;
  /// nsmc: the last this many training documents become the valid split
  int64_t holdout = 0;
  /// replace the files of an earlier xl-prep in `out`
  bool force = false;
  /// word, byte: how the vocabulary is counted
  prep::PrepOptions options;
  /// xlnet: SentencePiece's settings
  prep::XLNetPrepOptions xlnet;
  /// the flags the command line gave ("--min-freq"): one of another format is refused
  std::set<std::string> given;
};

/// The named splits of a request ("train", "valid", "test") and their text files.
using PrepSplits = std::map<std::string, std::filesystem::path>;

/// One kind of prepared data: what --format names, the flags of its own, the files it writes
/// and how.
struct PrepFormat {
  /// --format's value
  std::string name;
  /// what it reads and writes, for --help
  std::string help;
  /// the flags only some formats take that this one does ("--min-freq")
  std::vector<std::string> flags;
  /// the files it writes into --out (the vocabulary's too, unless it is reused from there)
  std::vector<std::string> (*outputs)(const PrepRequest& request, const PrepSplits& splits) =
      nullptr;
  /// writes them
  void (*prepare)(const PrepRequest& request, const PrepSplits& splits) = nullptr;
};

/// Every format, in --help's order: word, byte, xlnet, nsmc.
const std::vector<PrepFormat>& prep_formats();

/// Writes the prepared files of `request.format` into `request.out`, after checking every file
/// it will write (an existing one needs `force`). Returns the process exit status.
int run_prep(const PrepRequest& request);

} // namespace xl::app
