#include "xl/formats/sentence_tokens.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#include "id_file.h"
#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/hash.h"

namespace xl::formats {

namespace {

uint64_t bitmap_bytes(uint64_t count) {
  return (count + 7) / 8;
}

// Version 2 added the data checksum.
const IdFileFormat& sentence_format() {
  static const IdFileFormat kFormat{
      "XLPIECES", 2, "pieces file", "encode it with xl-prep --format pieces", bitmap_bytes};
  return kFormat;
}

} // namespace

bool looks_like_pieces_file(const std::filesystem::path& path) {
  return starts_with_magic(path, sentence_format());
}

SentenceTokens encode_raw_text(const std::filesystem::path& path, const SentencePiece& model) {
  return encode_raw_text(read_utf8_text(path, "corpus file"), path.string(), model);
}

SentenceTokens encode_raw_text(
    std::string_view text,
    const std::string& name,
    const SentencePiece& model) {
  SentenceTokens out;
  out.name = name;
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
    throw UserError("corpus file has no text: " + name);
  }
  return out;
}

void write_sentence_tokens(
    const std::filesystem::path& path,
    const SentenceTokens& tokens,
    const SentencePiece& model) {
  TORCH_CHECK(tokens.ids.size() == tokens.sent_ids.size(), "ids and sentence ids differ in length");
  auto header = make_id_file_header(
      sentence_format(), tokens.ids.size(), model.checksum(), static_cast<uint64_t>(model.size()));
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof(header));
  bytes.reserve(sizeof(header) + header.count * (header.width + 1));
  for (const int64_t id : tokens.ids) {
    TORCH_CHECK(id >= 0 && id < model.size(), "piece id ", id, " out of range");
  }
  encode_ids(tokens.ids, header.width, [&](const unsigned char* data, size_t n) {
    bytes.append(reinterpret_cast<const char*>(data), n);
  });
  std::string bits(bitmap_bytes(header.count), '\0');
  for (size_t i = 0; i < tokens.sent_ids.size(); ++i) {
    if (tokens.sent_ids[i] != 0) {
      bits[i / 8] = static_cast<char>(bits[i / 8] | (1 << (i % 8)));
    }
  }
  bytes += bits;
  const uint64_t checksum = hash64(bytes.data() + sizeof(header), bytes.size() - sizeof(header));
  std::memcpy(bytes.data() + offsetof(IdFileHeader, data_checksum), &checksum, sizeof(checksum));
  atomic_write(path, bytes);
}

SentenceTokens read_sentence_tokens(const std::filesystem::path& path, const SentencePiece& model) {
  const std::string bytes = read_file(path, "encoded corpus");
  const auto* start = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto header = read_id_file_header(path, start, bytes.size(), sentence_format());
  const auto fail = [&](const std::string& what) { throw UserError(path.string() + ": " + what); };
  if (header.vocab_checksum != model.checksum() ||
      header.vocab_size != static_cast<uint64_t>(model.size())) {
    fail(fmt::format(
        "encoded with a different SentencePiece model (size {}, checksum {:016x}) "
        "than {} (size {}, checksum {:016x}); re-encode it with that model",
        header.vocab_size,
        header.vocab_checksum,
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
  const unsigned char* data = start + sizeof(header);
  if (const int64_t i = first_id_at_or_above(data, header.width, header.count, header.vocab_size);
      i >= 0) {
    fail(fmt::format(
        "piece id {} at position {} is outside the vocabulary of {} ({})",
        id_at(data, header.width, static_cast<uint64_t>(i)),
        i,
        header.vocab_size,
        model.path().string()));
  }
  SentenceTokens out;
  out.name = path.string();
  out.ids.resize(header.count);
  out.sent_ids.resize(header.count);
  for (uint64_t i = 0; i < header.count; ++i) {
    out.ids[i] = static_cast<int64_t>(id_at(data, header.width, i));
  }
  const unsigned char* bits = data + header.count * header.width;
  for (uint64_t i = 0; i < header.count; ++i) {
    out.sent_ids[i] = (bits[i / 8] >> (i % 8)) & 1U;
  }
  return out;
}

} // namespace xl::formats
