// How a word model's training text was split into words, so that a user's raw text is split the
// same way before it is scored. WikiText is tokenized already (spaces around punctuation,
// "@-@" inside hyphenated words, "@,@" and "@.@" inside numbers); its rules, as Hugging Face's
// TransfoXLTokenizer applies them to raw text (sacremoses' English punctuation normalizer and
// tokenizer with aggressive dash splits and no escaping, then the number splits), are ported
// here character for character, so that a text splits where Hugging Face splits it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace xl::formats {

enum class Tokenization {
  /// the text is split at blanks, as it stands
  kNone,
  /// raw text gets WikiText's rules (wikitext_words)
  kWikiText,
};

/// "none" or "wikitext", as vocabulary files and messages name it.
std::string to_string(Tokenization tokenization);
/// The tokenization `name` names; a UserError naming `where` and the two names otherwise.
Tokenization tokenization_named(std::string_view name, const std::string& where);

/// A word of a line and where it came from: `offset` and `length` are the bytes of the line
/// it stems from (a "@-@" stems from its hyphen, a "..." from a "…"); `word` may differ from
/// them where the rules normalize characters (“ becomes ").
struct LineWord {
  std::string word;
  size_t offset = 0;
  size_t length = 0;
};

/// The words of `line` (no line break in it) under WikiText's rules, as Hugging Face's
/// TransfoXLTokenizer splits the line: "It's 1,000.5 km—e.g. (north-east)" gives It 's 1 @,@
/// 000 @.@ 5 km - e.g. ( north @-@ east ). <unk> and <eos> stay whole (any case). Bytes that
/// are no UTF-8 read as U+FFFD.
std::vector<LineWord> wikitext_words(std::string_view line);

/// Whether `text` holds a word only WikiText's own tokenization writes ("@-@", "@,@", "@.@"
/// between blanks): a text tokenized already, which WikiText's rules would split again.
bool reads_as_wikitext(std::string_view text);

} // namespace xl::formats
