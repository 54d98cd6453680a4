// A user's own text encoded with a run's word or byte vocabulary, for scoring it (xl-eval
// --file): read in pieces and stored in scratch space on disk, so that a text of any size costs
// bounded memory; what the vocabulary lacks is counted, mapped to <unk> or left out.
#pragma once

#include <filesystem>
#include <string>

#include "xl/formats/tokens.h"
#include "xl/formats/vocab.h"
#include "xl/util/scratch_file.h"

namespace xl::formats {

class TextTokens : public Tokens {
 public:
  /// Encodes the UTF-8 text file `path` with `vocab` (read_text_pieces and
  /// Vocab::encode_counting), the ids kept in scratch space in `scratch_dir`.
  TextTokens(
      const std::filesystem::path& path,
      const Vocab& vocab,
      const std::filesystem::path& scratch_dir);

  int64_t size() const override {
    return count_;
  }
  torch::Tensor slice(int64_t start, int64_t length) const override;
  std::string name() const override {
    return path_.string();
  }
  /// The words or bytes read, and those the vocabulary lacks.
  const UnknownCount& unknown() const {
    return unknown_;
  }

 private:
  std::filesystem::path path_;
  ScratchFile ids_; // int32 each
  int64_t count_ = 0;
  UnknownCount unknown_;
};

} // namespace xl::formats
