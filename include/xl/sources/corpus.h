// Opening a prepared word or byte corpus (xl-prep's folder) for training and evaluation.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "xl/config/schema.h"
#include "xl/formats/token_file.h"
#include "xl/formats/vocab.h"

namespace xl::sources {

/// A prepared corpus: its vocabulary and memory-mapped splits, checked against
/// each other. The splits are opened when first read: a trained run opened with its own copy
/// of the vocabulary reads nothing of data.dir unless it evaluates a split.
class Corpus {
 public:
  /// The corpus data.dir holds, encoded with `vocab` (data.dir's or a run's copy, at `vocab_path`).
  Corpus(
      const config::DataConfig& data,
      const formats::Vocab& vocab,
      std::filesystem::path vocab_path);

  const formats::Vocab& vocab() const {
    return vocab_;
  }
  /// The split "train", "valid" or "test", mapped on first use.
  const formats::TokenFile& split(const std::string& name);

 private:
  std::filesystem::path dir_;
  std::map<std::string, std::string> files_;
  const formats::Vocab& vocab_;
  std::filesystem::path vocab_path_;
  std::map<std::string, std::unique_ptr<formats::TokenFile>> splits_;
};

} // namespace xl::sources
