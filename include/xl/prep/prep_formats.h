// The formats xl-prep writes, one entry each with its flags, its files and how it writes them:
// the only place that lists them (a family with a new tokenizer adds its entry here).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "xl/prep/prepare.h"

namespace xl::prep {

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
  PrepOptions options;
  /// xlnet: SentencePiece's settings
  XLNetPrepOptions xlnet;
  /// the flags the command line gave ("--min-freq"): one of another format is refused
  std::set<std::string> given;
};

/// The named splits of a request ("train", "valid", "test") and their text files.
using PrepSplits = std::map<std::string, std::filesystem::path>;

/// Flags only some formats take, added to xl-prep's command line once however many formats
/// take them.
struct PrepFlags {
  /// their names ("--min-freq")
  std::vector<std::string> names;
  /// adds them, each writing into `request`
  void (*add)(CLI::App& app, PrepRequest& request) = nullptr;
};

/// One kind of prepared data: what --format names, the flags of its own, the files it writes
/// and how.
struct PrepFormat {
  /// --format's value
  std::string name;
  /// what it reads and writes, for --help
  std::string help;
  /// the flags of its own
  std::vector<const PrepFlags*> flag_sets;
  /// their names
  std::vector<std::string> flags() const;
  /// the files it writes into --out (the vocabulary's too, unless it is reused from there)
  std::vector<std::string> (*outputs)(const PrepRequest& request, const PrepSplits& splits) =
      nullptr;
  /// writes them
  void (*prepare)(const PrepRequest& request, const PrepSplits& splits) = nullptr;
};

/// Every format, in --help's order: word, byte, xlnet, nsmc.
const std::vector<PrepFormat>& prep_formats();

/// The flag sets of every format, each once, in the formats' order.
std::vector<const PrepFlags*> prep_flag_sets();

} // namespace xl::prep
