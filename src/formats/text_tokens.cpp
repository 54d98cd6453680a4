#include "xl/formats/text_tokens.h"

#include <vector>

#include "xl/formats/text.h"

namespace xl::formats {

TextTokens::TextTokens(
    const std::filesystem::path& path,
    const Vocab& vocab,
    const std::filesystem::path& scratch_dir)
    : path_(path), ids_(scratch_dir, "the tokens of " + path.string()) {
  std::vector<int64_t> ids;
  std::vector<int32_t> narrow;
  read_text_pieces(
      path,
      "text file",
      vocab.kind() == VocabKind::kWord,
      [&](std::string_view piece, bool line_goes_on) {
        ids.clear();
        vocab.encode_counting(piece, line_goes_on, ids, unknown_);
        narrow.assign(ids.begin(), ids.end());
        ids_.append(narrow.data(), narrow.size() * sizeof(int32_t));
        count_ += static_cast<int64_t>(ids.size());
      });
}

torch::Tensor TextTokens::slice(int64_t start, int64_t length) const {
  check_slice(start, length, count_, path_.string());
  auto out = torch::empty({length}, torch::kInt);
  ids_.read_at(
      static_cast<uint64_t>(start) * sizeof(int32_t),
      out.data_ptr<int32_t>(),
      static_cast<size_t>(length) * sizeof(int32_t));
  return out.to(torch::kLong);
}

} // namespace xl::formats
