#include "text_rules.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "xl/util/utf8.h"

namespace xl::formats::text_rules {

namespace {

struct Match {
  size_t end = 0;
  std::array<std::pair<size_t, size_t>, 2> groups{};
};

std::optional<Match> match_at(const Text& t, size_t at, const Pattern& pattern) {
  Match m;
  for (const auto& e : pattern) {
    const size_t start = at;
    switch (e.kind) {
      case Kind::kOne:
        if (at >= t.size() || !e.takes(t[at].c)) {
          return std::nullopt;
        }
        ++at;
        break;
      case Kind::kRun:
        while (at < t.size() && e.takes(t[at].c)) {
          ++at;
        }
        if (at == start) {
          return std::nullopt;
        }
        break;
      case Kind::kAhead:
        if (at >= t.size() || !e.takes(t[at].c)) {
          return std::nullopt;
        }
        break;
      case Kind::kBehind:
        if (at == 0 || !e.takes(t[at - 1].c)) {
          return std::nullopt;
        }
        break;
      case Kind::kEnd:
        if (at != t.size()) {
          return std::nullopt;
        }
        break;
    }
    if (e.group > 0) {
      m.groups.at(static_cast<size_t>(e.group - 1)) = {start, at};
    }
  }
  m.end = at;
  return m;
}

// Appends what replaces the match of `t` at `at`. A character the rule writes stems from the
// matched character it replaces: an equal one, else the first one no group keeps.
void replace(const Text& t, size_t at, const Match& m, const std::u32string& with, Text& out) {
  const auto grouped = [&](size_t i) {
    return std::any_of(m.groups.begin(), m.groups.end(), [&](const auto& g) {
      return g.first <= i && i < g.second;
    });
  };
  for (const char32_t c : with) {
    if (c == 1 || c == 2) {
      const auto [first, last] = m.groups.at(c - 1);
      out.insert(out.end(), t.begin() + first, t.begin() + last);
      continue;
    }
    uint32_t from = t[at].from;
    bool replaced = false;
    for (size_t i = at; i < m.end; ++i) {
      if (grouped(i)) {
        continue;
      }
      if (!replaced || t[i].c == c) {
        from = t[i].from;
        replaced = true;
      }
      if (t[i].c == c) {
        break;
      }
    }
    out.push_back({c, from});
  }
}

} // namespace

Pattern lit(std::u32string_view s) {
  Pattern p;
  for (const char32_t c : s) {
    p.push_back({Kind::kOne, c, nullptr, 0});
  }
  return p;
}
Pattern one(Test test, int group) {
  return {{Kind::kOne, 0, test, group}};
}
Pattern run(Test test, int group) {
  return {{Kind::kRun, 0, test, group}};
}
Pattern ahead(Test test) {
  return {{Kind::kAhead, 0, test, 0}};
}
Pattern behind(Test test) {
  return {{Kind::kBehind, 0, test, 0}};
}
Pattern end() {
  return {{Kind::kEnd, 0, nullptr, 0}};
}
Pattern seq(std::initializer_list<Pattern> parts) {
  Pattern p;
  for (const auto& part : parts) {
    p.insert(p.end(), part.begin(), part.end());
  }
  return p;
}

Text substitute(const Text& t, const Rule& rule) {
  Text out;
  out.reserve(t.size() + t.size() / 4);
  size_t at = 0;
  while (at < t.size()) {
    if (const auto m = match_at(t, at, rule.pattern)) {
      replace(t, at, *m, rule.replacement, out);
      at = m->end;
    } else {
      out.push_back(t[at++]);
    }
  }
  return out;
}

Text apply(Text t, const std::vector<Rule>& rules) {
  for (const auto& rule : rules) {
    t = substitute(t, rule);
  }
  return t;
}

bool contains(const Text& t, std::u32string_view s) {
  return std::search(t.begin(), t.end(), s.begin(), s.end(), [](const Char& a, char32_t b) {
           return a.c == b;
         }) != t.end();
}

Text strip(const Text& t) {
  auto first =
      std::find_if(t.begin(), t.end(), [](const Char& c) { return !is_unicode_space(c.c); });
  auto last =
      std::find_if(t.rbegin(), t.rend(), [](const Char& c) { return !is_unicode_space(c.c); });
  return first == t.end() ? Text{} : Text(first, last.base());
}

std::vector<Text> split(const Text& t) {
  std::vector<Text> words;
  for (const Char& c : t) {
    if (is_unicode_space(c.c)) {
      if (!words.empty() && !words.back().empty()) {
        words.emplace_back();
      }
      continue;
    }
    if (words.empty()) {
      words.emplace_back();
    }
    words.back().push_back(c);
  }
  if (!words.empty() && words.back().empty()) {
    words.pop_back();
  }
  return words;
}

Text join(const std::vector<Text>& words) {
  Text t;
  for (const auto& w : words) {
    if (!t.empty()) {
      t.push_back({U' ', t.back().from});
    }
    t.insert(t.end(), w.begin(), w.end());
  }
  return t;
}

Text decode(std::string_view line) {
  Text t;
  t.reserve(line.size());
  for (size_t at = 0; at < line.size();) {
    const CodePoint point = utf8_at(line, at);
    t.push_back({point.c, static_cast<uint32_t>(at)});
    at += point.length;
  }
  return t;
}

std::string encode(const Text& t) {
  std::string s;
  s.reserve(t.size());
  for (const Char& ch : t) {
    append_utf8(s, ch.c);
  }
  return s;
}

} // namespace xl::formats::text_rules
