#include "xl/sources/permutation_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "xl/util/error.h"

namespace xl::sources {

void validate_options(const PermutationOptions& o) {
  const auto fail = [](const std::string& what) {
    throw UserError("permutation records: " + what);
  };
  if (o.batch_size < 1 || o.perm_size < 1 || o.num_predict < 1) {
    fail(fmt::format(
        "batch_size ({}), perm_size ({}) and num_predict ({}) must be positive",
        o.batch_size,
        o.perm_size,
        o.num_predict));
  }
  if (o.reuse_len < 1) {
    fail(fmt::format(
        "reuse_len must be positive, found {}: pretraining caches the first reuse_len "
        "positions of each record for the next (0, all of them, is for fine-tuning)",
        o.reuse_len));
  }
  if (o.seq_len < o.reuse_len + 3) {
    fail(fmt::format(
        "seq_len ({}) must be at least reuse_len ({}) + 3, for <sep> <sep> <cls>",
        o.seq_len,
        o.reuse_len));
  }
  if (o.reuse_len % o.perm_size != 0 || (o.seq_len - o.reuse_len) % o.perm_size != 0) {
    fail(fmt::format(
        "perm_size ({}) must divide reuse_len ({}) and seq_len - reuse_len ({})",
        o.perm_size,
        o.reuse_len,
        o.seq_len - o.reuse_len));
  }
  if (o.num_predict - o.num_predict / 2 > o.reuse_len ||
      o.num_predict / 2 > o.seq_len - o.reuse_len - 3) {
    fail(fmt::format(
        "num_predict ({}) is larger than a record can hold: {} predictions on the "
        "reuse_len ({}) part and {} on the seq_len - reuse_len - 3 ({}) others",
        o.num_predict,
        o.num_predict - o.num_predict / 2,
        o.reuse_len,
        o.num_predict / 2,
        o.seq_len - o.reuse_len - 3));
  }
  if (o.mask_beta < 1 || o.mask_alpha < o.mask_beta) {
    fail(fmt::format(
        "mask_alpha ({}) must be at least mask_beta ({}) >= 1 (a span needs context)",
        o.mask_alpha,
        o.mask_beta));
  }
  if (o.bi_data && o.batch_size % 2 != 0) {
    fail(fmt::format(
        "batch_size ({}) must be even with bi_data (forward and backward halves)", o.batch_size));
  }
}

std::string fit_to_text(PermutationOptions& o, int64_t n_tokens, const std::string& name) {
  const int64_t streams = o.bi_data ? o.batch_size / 2 : o.batch_size;
  if (n_tokens / std::max<int64_t>(streams, 1) >= o.seq_len) {
    return "";
  }
  if (n_tokens < kShortestRecord) {
    throw UserError(fmt::format(
        "{} holds {} pieces: too few to score, a permutation-LM record needs at least {}",
        name,
        n_tokens,
        kShortestRecord));
  }
  const PermutationOptions asked = o;
  const auto rows = [&](int64_t s) { return o.bi_data ? 2 * s : s; };
  if (n_tokens >= o.seq_len) {
    o.batch_size = rows(n_tokens / o.seq_len);
    return fmt::format(
        "{} holds {} pieces, too few for {} streams of a record (seq_len {}) each: scored as {} "
        "streams ({} rows)",
        name,
        n_tokens,
        streams,
        o.seq_len,
        n_tokens / o.seq_len,
        o.batch_size);
  }
  o.batch_size = rows(1);
  o.seq_len = n_tokens - n_tokens % 2;
  o.reuse_len = o.seq_len / 2;
  o.perm_size = o.reuse_len;
  // As many predictions per piece as asked, within what the second half holds (seq_len / 2 - 3
  // pieces besides <sep> <sep> <cls>, for num_predict / 2 of them).
  const int64_t scaled = (asked.num_predict * o.seq_len + asked.seq_len / 2) / asked.seq_len;
  o.num_predict = std::clamp<int64_t>(scaled, 2, 2 * (o.seq_len - o.reuse_len - 3) + 1);
  return fmt::format(
      "{} holds {} pieces, fewer than one record of seq_len {}: scored as one stream ({} "
      "rows) of a record of {} (reuse_len {}, perm_size {}, num_predict {})",
      name,
      n_tokens,
      asked.seq_len,
      o.batch_size,
      o.seq_len,
      o.reuse_len,
      o.perm_size,
      o.num_predict);
}

} // namespace xl::sources
