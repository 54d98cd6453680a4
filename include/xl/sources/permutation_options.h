// The options of XLNet's pretraining records (sources/permutation_records.h): checked, and fit
// to a text too short for them.
#pragma once

#include <cstdint>
#include <string>

namespace xl::sources {

struct PermutationOptions {
  /// Rows B; with bi_data, B/2 forward and B/2 backward.
  int64_t batch_size = 16;
  int64_t seq_len = 256;
  /// Tokens of each record the next window continues from (memory); also the window step.
  int64_t reuse_len = 128;
  /// Positions permuted together; divides reuse_len and seq_len - reuse_len.
  int64_t perm_size = 128;
  /// Predictions per record, padded (target_mapping rows).
  int64_t num_predict = 45;
  /// A span of n words comes with n * mask_alpha / mask_beta positions of context.
  int64_t mask_alpha = 6;
  int64_t mask_beta = 1;
  bool bi_data = true;
  uint64_t seed = 0;
};

/// The fewest pieces fit_to_text makes a record of.
inline constexpr int64_t kShortestRecord = 10;

/// Fits `options` to a text of `n_tokens` pieces too short for them (scoring a user's text):
/// fewer streams, each holding at least one record, and for a text shorter than one record, one
/// stream of one record as long as the text (even, at least kShortestRecord), half of it reused,
/// permuted as a whole and the predictions scaled down with it. Returns how, in one line ("" when
/// the text is long enough as it is); a text shorter than kShortestRecord is a UserError naming
/// `name`.
std::string fit_to_text(PermutationOptions& options, int64_t n_tokens, const std::string& name);

/// A UserError naming the first option that is out of range or inconsistent.
void validate_options(const PermutationOptions& options);

} // namespace xl::sources
