#include "xl/data/sentence_tokens.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "xl/data/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::data {

namespace {

constexpr char kPiecesMagic[8] = {'X', 'L', 'P', 'I', 'E', 'C', 'E', 'S'};
// Version 2 added the data checksum.
constexpr uint32_t kFormatVersion = 2;

struct PiecesHeader {
  char magic[8];
  uint32_t version;
  uint32_t width;
  uint64_t count;
  uint64_t model_checksum;
  uint64_t vocab_size;
  uint64_t data_checksum; // hash64 over everything after the header
  unsigned char reserved[16];
};
static_assert(
    sizeof(PiecesHeader) == 64,
    "pieces file header must be 64 bytes");

uint64_t bitmap_bytes(uint64_t count) {
  return (count + 7) / 8;
}

} // namespace

SentenceTokens encode_raw_text(
    const std::filesystem::path& path,
    const SentencePiece& model) {
  const std::string text = read_utf8_text(path, "corpus file");
  SentenceTokens out;
  out.name = path.string();
  // data_utils._create_data with use_eod: the id flips after every line, and back before an <eod>.
  uint8_t sent_id = 1;
  bool any_text = false;
  for (const auto line : split_lines(text)) {
    std::vector<int64_t> ids;
    if (split_words(line).empty()) {
      sent_id ^= 1U;
      ids.push_back(kEodId);
    } else {
      ids = model.encode(line);
      any_text = true;
    }
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    out.sent_ids.insert(out.sent_ids.end(), ids.size(), sent_id);
    sent_id ^= 1U;
  }
  if (!any_text) {
    throw UserError("corpus file has no text: " + path.string());
  }
  return out;
}

void write_sentence_tokens(
    const std::filesystem::path& path,
    const SentenceTokens& tokens,
    const SentencePiece& model) {
  TORCH_CHECK(
      tokens.ids.size() == tokens.sent_ids.size(),
      "ids and sentence ids differ in length");
  PiecesHeader header{};
  std::memcpy(header.magic, kPiecesMagic, sizeof(kPiecesMagic));
  header.version = kFormatVersion;
  header.width = model.size() <= 65536 ? 2 : 4;
  header.count = tokens.ids.size();
  header.model_checksum = model.checksum();
  header.vocab_size = static_cast<uint64_t>(model.size());
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof(header));
  bytes.reserve(sizeof(header) + header.count * (header.width + 1));
  for (const int64_t id : tokens.ids) {
    TORCH_CHECK(id >= 0 && id < model.size(), "piece id ", id, " out of range");
    for (uint32_t b = 0; b < header.width; ++b) {
      bytes.push_back(static_cast<char>(static_cast<uint64_t>(id) >> (8 * b)));
    }
  }
  std::string bits(bitmap_bytes(header.count), '\0');
  for (size_t i = 0; i < tokens.sent_ids.size(); ++i) {
    if (tokens.sent_ids[i] != 0) {
      bits[i / 8] = static_cast<char>(bits[i / 8] | (1 << (i % 8)));
    }
  }
  bytes += bits;
  const uint64_t checksum =
      hash64(bytes.data() + sizeof(header), bytes.size() - sizeof(header));
  std::memcpy(
      bytes.data() + offsetof(PiecesHeader, data_checksum),
      &checksum,
      sizeof(checksum));
  atomic_write(path, bytes);
}

SentenceTokens read_sentence_tokens(
    const std::filesystem::path& path,
    const SentencePiece& model) {
  const std::string bytes = read_file(path, "encoded corpus");
  const auto fail = [&](const std::string& what) {
    throw UserError(path.string() + ": " + what);
  };
  PiecesHeader header{};
  if (bytes.size() < sizeof(header)) {
    fail("not an xl pieces file (shorter than its 64-byte header)");
  }
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.magic, kPiecesMagic, sizeof(kPiecesMagic)) != 0) {
    fail(
        "not an xl pieces file (bad magic); encode it with xl-prep --format xlnet");
  }
  if (header.version != kFormatVersion) {
    fail(fmt::format(
        "pieces file format version {}, this xl reads version {}; re-run xl-prep",
        header.version,
        kFormatVersion));
  }
  if (header.width != 2 && header.width != 4) {
    fail(fmt::format("unsupported id width {} bytes", header.width));
  }
  // The count is bounded first so that the size arithmetic cannot wrap.
  const uint64_t expected = header.count > bytes.size()
      ? std::numeric_limits<uint64_t>::max()
      : sizeof(header) + header.count * header.width +
          bitmap_bytes(header.count);
  if (expected != bytes.size()) {
    fail(fmt::format(
        "file is {} bytes but its header announces {} tokens ({} bytes): truncated "
        "or corrupt; re-run xl-prep",
        bytes.size(),
        header.count,
        expected));
  }
  if (header.model_checksum != model.checksum() ||
      header.vocab_size != static_cast<uint64_t>(model.size())) {
    fail(fmt::format(
        "encoded with a different SentencePiece model (size {}, checksum {:016x}) "
        "than {} (size {}, checksum {:016x}); re-encode it with that model",
        header.vocab_size,
        header.model_checksum,
        model.path().string(),
        model.size(),
        model.checksum()));
  }
  if (hash64(bytes.data() + sizeof(header), bytes.size() - sizeof(header)) !=
      header.data_checksum) {
    fail(
        "the data does not match the checksum in its header: the file is corrupt; "
        "re-run xl-prep");
  }
  SentenceTokens out;
  out.name = path.string();
  out.ids.resize(header.count);
  out.sent_ids.resize(header.count);
  const auto* data =
      reinterpret_cast<const unsigned char*>(bytes.data()) + sizeof(header);
  for (uint64_t i = 0; i < header.count; ++i) {
    uint64_t id = 0;
    for (uint32_t b = 0; b < header.width; ++b) {
      id |= static_cast<uint64_t>(data[i * header.width + b]) << (8 * b);
    }
    if (id >= header.vocab_size) {
      fail(fmt::format(
          "piece id {} at position {} is outside the vocabulary of {} ({})",
          id,
          i,
          header.vocab_size,
          model.path().string()));
    }
    out.ids[i] = static_cast<int64_t>(id);
  }
  const unsigned char* bits = data + header.count * header.width;
  for (uint64_t i = 0; i < header.count; ++i) {
    out.sent_ids[i] = (bits[i / 8] >> (i % 8)) & 1U;
  }
  return out;
}

} // namespace xl::data
