#include "xl/formats/tokenization.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <utility>

#include "text_rules.h"
#include "xl/util/error.h"
#include "xl/util/utf8.h"

namespace xl::formats {

// Named, so that the unity build's other sources of formats/ meet none of these names.
namespace wikitext {
namespace {

using text_rules::ahead;
using text_rules::apply;
using text_rules::behind;
using text_rules::Char;
using text_rules::contains;
using text_rules::decode;
using text_rules::encode;
using text_rules::end;
using text_rules::join;
using text_rules::lit;
using text_rules::one;
using text_rules::Pattern;
using text_rules::Rule;
using text_rules::run;
using text_rules::seq;
using text_rules::split;
using text_rules::strip;
using text_rules::substitute;
using text_rules::Test;
using text_rules::Text;

struct CodeRange {
  char32_t first;
  char32_t last;
};

#include "moses_tables.inc"

template <size_t N>
bool in_table(const CodeRange (&table)[N], char32_t c) {
  const auto* after =
      std::upper_bound(std::begin(table), std::end(table), c, [](char32_t v, const CodeRange& r) {
        return v < r.first;
      });
  return after != std::begin(table) && c <= (after - 1)->last;
}

bool is_n(char32_t c) {
  return in_table(kIsN, c);
}
bool is_alnum(char32_t c) {
  return in_table(kIsAlnum, c);
}
bool is_alpha(char32_t c) {
  return in_table(kIsAlpha, c);
}
bool is_lower(char32_t c) {
  return in_table(kIsLower, c);
}
bool is_decimal(char32_t c) {
  return in_table(kDecimal, c);
}

template <char32_t... Cs>
bool is_any(char32_t c) {
  return ((c == Cs) || ...);
}
bool is_ascii_letter(char32_t c) {
  return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z');
}

// sacremoses' MosesPunctNormalizer("en"): Penn quotes, quotes before commas and numbers
// normalized, as Hugging Face builds it.
const std::vector<Rule>& normalizer_rules() {
  static const std::vector<Rule> rules = {
      {lit(U"\r"), U""},
      {lit(U"("), U" ("},
      {lit(U")"), U") "},
      {run(is_any<U' '>), U" "},
      {seq({lit(U") "), one(is_any<U'.', U'!', U':', U'?', U';', U','>, 1)}), U")\1"},
      {lit(U"( "), U"("},
      {lit(U" )"), U")"},
      {seq({one(is_decimal, 1), lit(U" %")}), U"\1%"},
      {lit(U" :"), U":"},
      {lit(U" ;"), U";"},
      {lit(U"`"), U"'"},
      {lit(U"''"), U" \" "},
      {lit(U"\u201e"), U"\""},
      {lit(U"\u201c"), U"\""},
      {lit(U"\u201d"), U"\""},
      {lit(U"\u2013"), U"-"},
      {lit(U"\u2014"), U" - "},
      {run(is_any<U' '>), U" "},
      {lit(U"\u00b4"), U"'"},
      {seq({one(is_ascii_letter, 1), lit(U"\u2018"), one(is_ascii_letter, 2)}), U"\1'\2"},
      {seq({one(is_ascii_letter, 1), lit(U"\u2019"), one(is_ascii_letter, 2)}), U"\1'\2"},
      {lit(U"\u2018"), U"'"},
      {lit(U"\u201a"), U"'"},
      {lit(U"\u2019"), U"'"},
      {lit(U"''"), U"\""},
      {lit(U"\u00b4\u00b4"), U"\""},
      {lit(U"\u2026"), U"..."},
      {lit(U"\u00a0\u00ab\u00a0"), U"\""},
      {lit(U"\u00ab\u00a0"), U"\""},
      {lit(U"\u00ab"), U"\""},
      {lit(U"\u00a0\u00bb\u00a0"), U"\""},
      {lit(U"\u00a0\u00bb"), U"\""},
      {lit(U"\u00bb"), U"\""},
      {lit(U"\u00a0%"), U"%"},
      {lit(U"n\u00ba\u00a0"), U"n\u00ba "},
      {lit(U"\u00a0:"), U":"},
      {lit(U"\u00a0\u00baC"), U" \u00baC"},
      {lit(U"\u00a0cm"), U" cm"},
      {lit(U"\u00a0?"), U"?"},
      {lit(U"\u00a0!"), U"!"},
      {lit(U"\u00a0;"), U";"},
      {lit(U",\u00a0"), U", "},
      {run(is_any<U' '>), U" "},
      {seq({lit(U"\""), run(is_any<U',', U'.'>, 1)}), U"\1\""},
      {seq({one(is_decimal, 1), lit(U"\u00a0"), one(is_decimal, 2)}), U"\1.\2"},
  };
  return rules;
}

// MosesTokenizer("en").tokenize's rules up to the non-breaking prefixes, aggressive dash splits
// on; multidots are handled apart (they repeat).
const std::vector<Rule>& padding_rules() {
  static const std::vector<Rule> rules = {
      {one(
           [](char32_t c) {
             return !is_alnum(c) && !is_unicode_space(c) &&
                 !is_any<U'.', U'\'', U'`', U',', U'-'>(c);
           },
           1),
       U" \1 "},
      {seq({one(is_alnum, 1), lit(U"-"), ahead(is_alnum)}), U"\1 @-@ "},
  };
  return rules;
}

const std::vector<Rule>& comma_and_apostrophe_rules() {
  static const Test not_n = [](char32_t c) { return !is_n(c); };
  static const Test not_alpha = [](char32_t c) { return !is_alpha(c); };
  static const std::vector<Rule> rules = {
      {seq({one(not_n, 1), lit(U",")}), U"\1 , "},
      {seq({lit(U","), one(not_n, 1)}), U" , \1"},
      {seq({one(is_n, 1), lit(U","), end()}), U"\1 , "},
      {seq({one(not_alpha, 1), lit(U"'"), one(not_alpha, 2)}), U"\1 ' \2"},
      {seq(
           {one([](char32_t c) { return !is_alpha(c) && !is_n(c); }, 1),
            lit(U"'"),
            one(is_alpha, 2)}),
       U"\1 ' \2"},
      {seq({one(is_alpha, 1), lit(U"'"), one(not_alpha, 2)}), U"\1 ' \2"},
      {seq({one(is_alpha, 1), lit(U"'"), one(is_alpha, 2)}), U"\1 '\2"},
      {seq({one(is_n, 1), lit(U"'"), one(is_any<U's'>, 2)}), U"\1 '\2"},
  };
  return rules;
}

Text replace_multidots(Text t) {
  t = substitute(t, {seq({lit(U"."), run(is_any<U'.'>, 1)}), U" DOTMULTI\1"});
  while (contains(t, U"DOTMULTI.")) {
    t = substitute(
        t,
        {seq({lit(U"DOTMULTI."), one([](char32_t c) { return c != U'.'; }, 1)}),
         U"DOTDOTMULTI \1"});
    t = substitute(t, {lit(U"DOTMULTI."), U"DOTDOTMULTI"});
  }
  return t;
}

Text restore_multidots(Text t) {
  while (contains(t, U"DOTDOTMULTI")) {
    t = substitute(t, {lit(U"DOTDOTMULTI"), U"DOTMULTI."});
  }
  return substitute(t, {lit(U"DOTMULTI"), U"."});
}

bool listed(const std::string& word, const std::string_view* first, const std::string_view* last) {
  return std::find(first, last, word) != last;
}

// A word ending in a period keeps it where the period ends no sentence: an abbreviation
// ("e.g.", "Mr."), a word followed by a lowercase one, a numeric-only prefix before digits.
Text nonbreaking_prefixes(const Text& t) {
  auto words = split(t);
  std::vector<Text> out;
  for (size_t i = 0; i < words.size(); ++i) {
    const Text& w = words[i];
    if (w.size() < 2 || w.back().c != U'.') {
      out.push_back(w);
      continue;
    }
    const Text prefix(w.begin(), w.end() - 1);
    const std::string name = encode(prefix);
    const bool next = i + 1 < words.size();
    const bool dotted_alpha = contains(prefix, U".") &&
        std::any_of(prefix.begin(), prefix.end(), [](const Char& c) { return is_alpha(c.c); });
    const bool numeric =
        listed(name, std::begin(kNumericOnlyPrefixes), std::end(kNumericOnlyPrefixes));
    const bool keep = dotted_alpha ||
        (listed(name, std::begin(kNonbreakingPrefixes), std::end(kNonbreakingPrefixes)) &&
         !numeric) ||
        (next && is_lower(words[i + 1].front().c)) ||
        (numeric && next && words[i + 1].front().c >= U'0' && words[i + 1].front().c <= U'9');
    out.push_back(keep ? w : prefix);
    if (!keep) {
      out.push_back({w.back()});
    }
  }
  return join(out);
}

// Hugging Face's never_split for a TransfoXL tokenizer: its special tokens, found in any case and
// kept whole through the rules as sacremoses keeps them, behind a placeholder.
struct Protected {
  std::vector<Text> words;
};

Text placeholder(size_t i, const Text& word) {
  Text t;
  const std::string name = fmt::format("THISISPROTECTED{:03d}", i);
  for (size_t k = 0; k < name.size(); ++k) {
    t.push_back({static_cast<char32_t>(name[k]), word[std::min(k, word.size() - 1)].from});
  }
  return t;
}

Text replace_all(const Text& t, const Text& from, const Text& to) {
  Text out;
  const auto same = [](const Char& a, const Char& b) { return a.c == b.c; };
  auto at = t.begin();
  while (true) {
    const auto found = std::search(at, t.end(), from.begin(), from.end(), same);
    out.insert(out.end(), at, found);
    if (found == t.end()) {
      return out;
    }
    for (size_t k = 0; k < to.size(); ++k) {
      out.push_back(
          {to[k].c, (found + static_cast<std::ptrdiff_t>(std::min(k, from.size() - 1)))->from});
    }
    at = found + static_cast<std::ptrdiff_t>(from.size());
  }
}

Text protect(Text t, Protected& p) {
  for (const std::u32string_view special :
       {std::u32string_view(U"<eos>"), std::u32string_view(U"<unk>")}) {
    const auto same = [](const Char& a, char32_t b) {
      const char32_t lower = a.c >= U'A' && a.c <= U'Z' ? a.c + (U'a' - U'A') : a.c;
      return lower == b;
    };
    for (auto at = t.begin();;) {
      at = std::search(at, t.end(), special.begin(), special.end(), same);
      if (at == t.end()) {
        break;
      }
      const Text word(at, at + static_cast<std::ptrdiff_t>(special.size()));
      const bool seen = std::any_of(
          p.words.begin(), p.words.end(), [&](const Text& w) { return encode(w) == encode(word); });
      if (!seen) {
        p.words.push_back(word);
      }
      at += static_cast<std::ptrdiff_t>(special.size());
    }
  }
  for (size_t i = 0; i < p.words.size(); ++i) {
    t = replace_all(t, p.words[i], placeholder(i, p.words[i]));
  }
  return t;
}

Text unprotect(Text t, const Protected& p) {
  for (size_t i = 0; i < p.words.size(); ++i) {
    t = replace_all(t, placeholder(i, p.words[i]), p.words[i]);
  }
  return t;
}

// MosesTokenizer("en").tokenize(text, aggressive_dash_splits=True, escape=False,
// protected_patterns=["<eos>", "<unk>"]).
Text moses_tokenize(Text t) {
  t = substitute(t, {run(is_unicode_space), U" "});
  t = substitute(t, {one([](char32_t c) { return c < 0x20; }), U""});
  Protected p;
  t = strip(protect(std::move(t), p));
  t = replace_multidots(apply(std::move(t), padding_rules()));
  t = nonbreaking_prefixes(apply(std::move(t), comma_and_apostrophe_rules()));
  t = strip(substitute(t, {run(is_unicode_space), U" "}));
  t = substitute(t, {seq({lit(U".'"), end()}), U" . ' "});
  return restore_multidots(unprotect(std::move(t), p));
}

LineWord line_word(std::string_view line, const Text& w) {
  LineWord out{encode(w), line.size(), 0};
  size_t end = 0;
  for (const Char& c : w) {
    out.offset = std::min<size_t>(out.offset, c.from);
    end = std::max(end, c.from + utf8_at(line, c.from).length);
  }
  out.length = end - out.offset;
  return out;
}

} // namespace
} // namespace wikitext

std::string to_string(Tokenization tokenization) {
  return tokenization == Tokenization::kWikiText ? "wikitext" : "none";
}

Tokenization tokenization_named(std::string_view name, const std::string& where) {
  if (name == "wikitext") {
    return Tokenization::kWikiText;
  }
  if (name != "none") {
    throw UserError(fmt::format(
        "{}: tokenization '{}': expected wikitext (WikiText's rules for raw text) or none "
        "(split at blanks)",
        where,
        name));
  }
  return Tokenization::kNone;
}

std::vector<LineWord> wikitext_words(std::string_view line) {
  using namespace wikitext;
  Text t = apply(strip(decode(line)), normalizer_rules());
  t = moses_tokenize(strip(t));
  // Hugging Face's tokenize_numbers: "1,000.5" is 1 @,@ 000 @.@ 5.
  const Rule numbers{
      seq({behind(is_decimal), one(is_any<U',', U'.'>, 1), ahead(is_decimal)}), U" @\1@ "};
  std::vector<LineWord> words;
  for (const auto& w : split(t)) {
    for (const auto& part : split(substitute(w, numbers))) {
      words.push_back(line_word(line, part));
    }
  }
  return words;
}

bool reads_as_wikitext(std::string_view text) {
  for (const std::string_view mark : {" @-@ ", " @,@ ", " @.@ "}) {
    if (text.find(mark) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

} // namespace xl::formats
