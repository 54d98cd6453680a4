// Rewriting rules over the code points of a line, each keeping the byte of the line it stems
// from: what sacremoses' rules need of Python's re (one character of a class, a run of them, a
// look ahead or behind, the end; every match, left to right), and str's strip, split and join.
// WikiText's rules for raw text (tokenization.cpp) are written in it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace xl::formats::text_rules {

/// A character of the text being rewritten and the byte of the line it stems from.
struct Char {
  char32_t c;
  uint32_t from;
};
using Text = std::vector<Char>;

/// No rule needs backtracking: a run is never followed by an element that could take its
/// characters.
enum class Kind { kOne, kRun, kAhead, kBehind, kEnd };
using Test = bool (*)(char32_t);

struct Elem {
  Kind kind = Kind::kOne;
  char32_t literal = 0; // when `test` is null
  Test test = nullptr;
  int group = 0; // 1-based; 0: not captured

  bool takes(char32_t c) const {
    return test != nullptr ? test(c) : c == literal;
  }
};
using Pattern = std::vector<Elem>;

/// These characters, one after another.
Pattern lit(std::u32string_view s);
/// One character that `test` takes (captured as `group`, 1 or 2, where given).
Pattern one(Test test, int group = 0);
/// One or more.
Pattern run(Test test, int group = 0);
/// A character that `test` takes follows (it is not matched).
Pattern ahead(Test test);
/// One precedes.
Pattern behind(Test test);
/// The end of the text.
Pattern end();
Pattern seq(std::initializer_list<Pattern> parts);

/// A pattern and what replaces each match: characters, and \1 \2 (U+0001, U+0002) for groups.
struct Rule {
  Pattern pattern;
  std::u32string replacement;
};

/// Python's re.sub: every match, left to right, none overlapping. A character the rule writes
/// stems from the matched character it replaces: an equal one, else the first one no group keeps.
Text substitute(const Text& t, const Rule& rule);
/// Each rule in turn.
Text apply(Text t, const std::vector<Rule>& rules);

bool contains(const Text& t, std::u32string_view s);
/// Python's str.strip(), split() and " ".join() (a blank stems from the character before it).
Text strip(const Text& t);
std::vector<Text> split(const Text& t);
Text join(const std::vector<Text>& words);

/// The code points of `line` with their bytes (a byte of no well-formed sequence is U+FFFD),
/// and back to UTF-8.
Text decode(std::string_view line);
std::string encode(const Text& t);

} // namespace xl::formats::text_rules
