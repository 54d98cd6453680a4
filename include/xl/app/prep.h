// xl-prep: a vocabulary built and text corpora encoded into a folder of prepared data.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "xl/prep/prepare.h"

namespace xl::app {

struct PrepRequest {
  /// word, byte, xlnet or nsmc
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

/// Writes the prepared files of `request.format` into `request.out`, after checking every file
/// it will write (an existing one needs `force`). Returns the process exit status.
int run_prep(const PrepRequest& request);

} // namespace xl::app
