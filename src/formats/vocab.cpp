#include "xl/formats/vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <utility>

#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/hash.h"

namespace xl::formats {

namespace {

// The files read whole, to count them.
std::vector<std::string> read_corpora(
    const std::vector<std::filesystem::path>& files,
    VocabKind kind) {
  std::vector<std::string> texts;
  for (const auto& file : files) {
    texts.push_back(read_corpus(file, kind));
  }
  return texts;
}

std::vector<std::string_view> views(const std::vector<std::string>& texts) {
  return {texts.begin(), texts.end()};
}

} // namespace

std::string read_corpus(const std::filesystem::path& path, VocabKind kind) {
  std::string text = kind == VocabKind::kWord ? read_utf8_text(path, "corpus file")
                                              : read_file(path, "corpus file");
  if (text.empty()) {
    throw UserError("corpus file is empty: " + path.string());
  }
  return text;
}

std::string to_string(VocabKind kind) {
  return kind == VocabKind::kWord ? "word" : "byte";
}

Vocab::Vocab(VocabKind kind, std::vector<std::string> tokens)
    : kind_(kind), tokens_(std::move(tokens)) {
  const std::string kind_name = to_string(kind_);
  checksum_ = fnv1a64(kind_name.data(), kind_name.size());
  ids_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    ids_.emplace(tokens_[i], static_cast<int64_t>(i));
    const char separator = '\0';
    checksum_ = fnv1a64(&separator, 1, checksum_);
    checksum_ = fnv1a64(tokens_[i].data(), tokens_[i].size(), checksum_);
  }
}

Vocab Vocab::build_word(
    const std::vector<std::filesystem::path>& files,
    const std::vector<std::string>& specials,
    int64_t min_freq,
    std::optional<int64_t> max_size) {
  const auto texts = read_corpora(files, VocabKind::kWord);
  return build_word_from(views(texts), specials, min_freq, max_size);
}

Vocab Vocab::build_word_from(
    const std::vector<std::string_view>& texts,
    const std::vector<std::string>& specials,
    int64_t min_freq,
    std::optional<int64_t> max_size) {
  struct Entry {
    std::string token;
    int64_t count;
  };
  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> position;
  const auto count = [&](std::string_view token) {
    const auto [it, first] = position.try_emplace(std::string(token), entries.size());
    if (first) {
      entries.push_back({it->first, 1});
    } else {
      ++entries[it->second].count;
    }
  };
  for (const auto text : texts) {
    for (const auto line : split_lines(text)) {
      for (const auto word : split_words(line)) {
        count(word);
      }
      count("<eos>");
    }
  }
  // Counter.most_common: descending count, ties in first-seen order.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.count > b.count;
  });
  std::vector<std::string> tokens = specials;
  for (const auto& e : entries) {
    if (e.count < min_freq || (max_size && static_cast<int64_t>(tokens.size()) >= *max_size)) {
      break; // sorted by count: the rest are rarer still
    }
    if (std::find(specials.begin(), specials.end(), e.token) == specials.end()) {
      tokens.push_back(e.token);
    }
  }
  return Vocab(VocabKind::kWord, std::move(tokens));
}

Vocab Vocab::build_byte(const std::vector<std::filesystem::path>& files) {
  const auto texts = read_corpora(files, VocabKind::kByte);
  return build_byte_from(views(texts));
}

Vocab Vocab::build_byte_from(const std::vector<std::string_view>& texts) {
  std::array<int64_t, 256> counts{};
  for (const auto text : texts) {
    for (const char c : text) {
      ++counts[static_cast<unsigned char>(c)];
    }
  }
  std::vector<int> order;
  for (int b = 0; b < 256; ++b) {
    if (counts[b] > 0) {
      order.push_back(b);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return counts[a] > counts[b]; });
  std::vector<std::string> tokens;
  for (const int b : order) {
    tokens.emplace_back(1, static_cast<char>(b));
  }
  return Vocab(VocabKind::kByte, std::move(tokens));
}

void Vocab::set_tokenization(Tokenization tokenization) {
  if (kind_ == VocabKind::kByte && tokenization != Tokenization::kNone) {
    throw InternalError(
        "a byte vocabulary splits no words: tokenization " + to_string(tokenization));
  }
  tokenization_ = tokenization;
}

Vocab Vocab::of_words(
    std::vector<std::string> words,
    Tokenization tokenization,
    const std::string& where) {
  for (const auto& w : words) {
    if (w.empty()) {
      throw UserError(where + ": an empty word");
    }
  }
  Vocab vocab(VocabKind::kWord, std::move(words));
  if (static_cast<int64_t>(vocab.ids_.size()) != vocab.size()) {
    throw UserError(where + ": a word twice: each word has one id");
  }
  vocab.tokenization_ = tokenization;
  return vocab;
}

int64_t Vocab::index(std::string_view token) const {
  const auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

const std::string& Vocab::token(int64_t id) const {
  return tokens_.at(static_cast<size_t>(id));
}

std::vector<int64_t> Vocab::encode_file(const std::filesystem::path& path) const {
  return encode(read_corpus(path, kind_), path.string());
}

std::vector<int64_t> Vocab::encode(
    std::string_view text,
    const std::string& where,
    bool open_end,
    bool raw) const {
  std::vector<int64_t> ids;
  // A prompt (open_end) cannot change the trained vocabulary; a split's data can.
  const char* fix =
      open_end ? "the model never saw it in training: leave it out of the prompt" : nullptr;
  // A prompt's unfinished last line is continued, not ended.
  const bool continued = open_end && !text.empty() && text.back() != '\n' && text.back() != '\r';
  encode_into(text, {continued, raw}, ids, [&](std::string_view token, size_t at) -> int64_t {
    if (kind_ == VocabKind::kByte) {
      throw UserError(fmt::format(
          "{}: byte {} at offset {} is not in the vocabulary ({})",
          where,
          static_cast<unsigned char>(token[0]),
          at,
          fix != nullptr ? fix : "build it from all splits with --vocab-from all"));
    }
    throw UserError(fmt::format(
        "{}:{}: token '{}' is not in the vocabulary, which has no <unk> to map it to ({})",
        where,
        at,
        token,
        fix != nullptr ? fix
                       : "xl-prep: --vocab-from all counts every split, --unk maps unseen "
                         "words to <unk>"));
  });
  return ids;
}

void Vocab::encode_counting(
    std::string_view text,
    bool line_goes_on,
    std::vector<int64_t>& ids,
    UnknownCount& count,
    bool raw,
    std::vector<TextSpan>* spans) const {
  const size_t before = ids.size();
  int64_t left_out = 0;
  int64_t mapped = 0;
  encode_into(
      text, {line_goes_on, raw, &mapped, spans}, ids, [&](std::string_view /*token*/, size_t) {
        ++left_out;
        return int64_t{-1};
      });
  // Line ends are no words of the text.
  const int64_t eos = kind_ == VocabKind::kWord ? index("<eos>") : -1;
  const auto line_ends =
      std::count(ids.begin() + static_cast<std::ptrdiff_t>(before), ids.end(), eos);
  count.unknown += left_out + mapped;
  count.units += static_cast<int64_t>(ids.size() - before) - line_ends + left_out;
}

bool Vocab::has_unknown_token() const {
  return kind_ == VocabKind::kWord && index("<unk>") >= 0;
}

void Vocab::encode_into(
    std::string_view text,
    const Encoding& how,
    std::vector<int64_t>& ids,
    const std::function<int64_t(std::string_view token, size_t at)>& unknown) const {
  if (kind_ == VocabKind::kWord) {
    encode_words(text, how, ids, unknown);
    return;
  }
  std::array<int64_t, 256> table;
  table.fill(-1);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    table[static_cast<unsigned char>(tokens_[i][0])] = static_cast<int64_t>(i);
  }
  ids.reserve(ids.size() + text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    int64_t id = table[static_cast<unsigned char>(text[i])];
    if (id < 0 && (id = unknown(text.substr(i, 1), i)) < 0) {
      continue;
    }
    ids.push_back(id);
    if (how.spans != nullptr) {
      how.spans->push_back({static_cast<int64_t>(i), 1});
    }
  }
}

void Vocab::encode_words(
    std::string_view text,
    const Encoding& how,
    std::vector<int64_t>& ids,
    const std::function<int64_t(std::string_view token, size_t at)>& unknown) const {
  const int64_t eos = index("<eos>");
  const int64_t unk = index("<unk>");
  if (eos < 0) {
    throw UserError("the word vocabulary has no <eos> token to end its lines with");
  }
  ids.reserve(ids.size() + text.size() / 5);
  const bool rules = how.raw && tokenization_ == Tokenization::kWikiText;
  const auto lines = split_lines(text);
  size_t line_number = 0;
  for (const auto line : lines) {
    ++line_number;
    const auto line_at = static_cast<size_t>(line.data() - text.data());
    const auto add = [&](int64_t id, size_t offset, size_t length) {
      ids.push_back(id);
      if (how.spans != nullptr) {
        how.spans->push_back({static_cast<int64_t>(offset), static_cast<int64_t>(length)});
      }
    };
    const auto word = [&](std::string_view w, size_t offset, size_t length) {
      int64_t id = index(w);
      if (id < 0 && unk >= 0) {
        id = unk;
        if (how.mapped_to_unk != nullptr) {
          ++*how.mapped_to_unk;
        }
      } else if (id < 0 && (id = unknown(w, line_number)) < 0) {
        return;
      }
      add(id, line_at + offset, length);
    };
    if (rules) {
      for (const auto& w : wikitext_words(line)) {
        word(w.word, w.offset, w.length);
      }
    } else {
      for (const auto w : split_words(line)) {
        word(w, static_cast<size_t>(w.data() - line.data()), w.size());
      }
    }
    if (!(how.line_goes_on && line_number == lines.size())) {
      // The line break: "\r\n", "\n" or "\r", or none at the end of the text.
      const size_t end = line_at + line.size();
      const size_t brk = end >= text.size() ? 0 : text.substr(end, 2) == "\r\n" ? 2 : 1;
      add(eos, end, brk);
    }
  }
}

std::string Vocab::decode(const std::vector<int64_t>& ids, bool after_word) const {
  std::string text;
  for (const int64_t id : ids) {
    const std::string& t = token(id);
    if (kind_ == VocabKind::kByte) {
      text += t;
    } else if (t == "<eos>") {
      text += '\n';
    } else {
      if (text.empty() ? after_word : text.back() != '\n') {
        text += ' ';
      }
      text += t;
    }
  }
  return text;
}

} // namespace xl::formats
