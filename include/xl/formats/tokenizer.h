// What turns a run's text into ids and back: a word or byte vocabulary (vocab.txt, vocab.h) or
// XLNet's SentencePiece model (spiece.model, sentencepiece.h). The training data's folder holds
// it, and a trained run keeps a copy beside its config.yaml (infer/run_tokenizer.h), so that the
// run opens without its data. Immutable once loaded: threads may share one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xl/formats/sentencepiece.h"
#include "xl/formats/vocab.h"

namespace xl::formats {

class Tokenizer {
 public:
  /// Loads `path`, a vocabulary xl-prep wrote (its header line says so) or a SentencePiece
  /// model; a missing or malformed file is a UserError naming it.
  static std::shared_ptr<const Tokenizer> load(const std::filesystem::path& path);
  Tokenizer(Vocab vocab, std::filesystem::path path);
  explicit Tokenizer(std::unique_ptr<SentencePiece> pieces);

  /// Entries the model embeds.
  int64_t size() const;
  /// How token losses read: per word or piece (kWord: perplexity) or per byte (bits).
  VocabKind unit() const;
  /// The file it was loaded from.
  const std::filesystem::path& file() const {
    return path_;
  }
  /// The kind, the size and a checksum, as checkpoints record it ("word-level vocabulary of
  /// 33278, checksum ...", "SentencePiece vocabulary of 8000, checksum ...").
  const std::string& fingerprint() const {
    return fingerprint_;
  }
  /// "SentencePiece model", or "word vocabulary" / "byte vocabulary", for messages.
  std::string describe() const;

  /// The word or byte vocabulary (null for a SentencePiece model), and the SentencePiece model
  /// (null for a vocabulary).
  const Vocab* vocab() const {
    return vocab_.get();
  }
  const SentencePiece* pieces() const {
    return pieces_.get();
  }
  /// vocab(), or a UserError saying that `use` needs a word or byte vocabulary.
  const Vocab& word_vocab(const std::string& use) const;

  /// The ids of `text`: a vocabulary's words (a raw text split by its rules; a last line
  /// without a line break gets no <eos>; a word it lacks is <unk> where it has one, else an
  /// error) or bytes, or the SentencePiece pieces of each line.
  std::vector<int64_t> encode(std::string_view text) const;
  /// The text of `ids`: words spaced with <eos> as line breaks, bytes, or pieces joined with
  /// their word starts (U+2581) as spaces. An id outside the vocabulary is a UserError.
  std::string decode(const std::vector<int64_t>& ids) const;
  /// The text of one token: a word, a byte, a piece.
  std::string token(int64_t id) const;

 private:
  std::filesystem::path path_;
  std::unique_ptr<const Vocab> vocab_;
  std::unique_ptr<const SentencePiece> pieces_;
  std::string fingerprint_;
};

} // namespace xl::formats
