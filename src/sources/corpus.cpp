#include "xl/sources/corpus.h"

#include "xl/sources/dataset.h"
#include "xl/util/error.h"

namespace xl::sources {

Corpus::Corpus(
    const config::DataConfig& data,
    const formats::Vocab& vocab,
    std::filesystem::path vocab_path)
    : dir_(data.dir),
      files_{{"train", data.train}, {"valid", data.valid}, {"test", data.test}},
      vocab_(vocab),
      vocab_path_(std::move(vocab_path)) {}

const formats::TokenFile& Corpus::split(const std::string& name) {
  auto it = splits_.find(name);
  if (it == splits_.end()) {
    check_data_dir(dir_);
    const auto file = files_.find(name);
    if (file == files_.end()) {
      throw UserError("unknown data split '" + name + "' (expected train, valid or test)");
    }
    auto token_file =
        std::make_unique<formats::TokenFile>(dir_ / file->second, vocab_, vocab_path_);
    if (token_file->size() < 2) {
      throw UserError(
          "token file " + token_file->path().string() + " holds " +
          std::to_string(token_file->size()) + " tokens; a language model needs at least 2");
    }
    it = splits_.emplace(name, std::move(token_file)).first;
  }
  return *it->second;
}

} // namespace xl::sources
