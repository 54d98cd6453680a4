#include "xl/sources/permutation_records.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "source_state.h"
#include "xl/io/archive.h"
#include "xl/util/error.h"
#include "xl/util/generator.h"

namespace xl::sources {

PermutationRecords::PermutationRecords(
    const formats::SentenceTokens& tokens,
    std::vector<bool> word_starts,
    const PermutationOptions& options)
    : options_(options),
      word_starts_(std::move(word_starts)),
      name_(tokens.name),
      n_tokens_(static_cast<int64_t>(tokens.ids.size())),
      generator_(at::make_generator<at::CPUGeneratorImpl>(options.seed)) {
  validate_options(options_);
  const int64_t streams = options_.bi_data ? options_.batch_size / 2 : options_.batch_size;
  row_len_ = n_tokens_ / streams;
  if (row_len_ < options_.seq_len) {
    throw UserError(fmt::format(
        "{} holds {} tokens: too few for one window of seq_len {} in each of {} "
        "streams (batch_size {}{})",
        name_,
        n_tokens_,
        options_.seq_len,
        streams,
        options_.batch_size,
        options_.bi_data ? ", bi_data" : ""));
  }
  for (const int64_t id : tokens.ids) {
    TORCH_CHECK(
        id >= 0 && id < static_cast<int64_t>(word_starts_.size()),
        "piece id ",
        id,
        " outside the vocabulary of ",
        word_starts_.size());
  }
  // batchify: contiguous rows; backward rows are the forward ones reversed in time.
  for (int64_t s = 0; s < streams; ++s) {
    const auto first = tokens.ids.begin() + s * row_len_;
    const auto first_sent = tokens.sent_ids.begin() + s * row_len_;
    rows_.push_back(
        {std::vector<int64_t>(first, first + row_len_),
         std::vector<uint8_t>(first_sent, first_sent + row_len_),
         s * row_len_,
         false});
  }
  if (options_.bi_data) {
    for (int64_t s = 0; s < streams; ++s) {
      Row row = rows_[static_cast<size_t>(s)];
      std::reverse(row.ids.begin(), row.ids.end());
      std::reverse(row.sent_ids.begin(), row.sent_ids.end());
      row.start += row_len_ - 1;
      row.backward = true;
      rows_.push_back(std::move(row));
    }
  }
}

int64_t PermutationRecords::batches_per_pass() const {
  return (row_len_ - options_.seq_len) / options_.reuse_len + 1;
}

std::string PermutationRecords::describe() const {
  return fmt::format(
      "permutation records: {} rows{} x {} tokens (reuse {}, perm {}, predict {}, "
      "spans {}/{}), of {} ({} tokens)",
      options_.batch_size,
      options_.bi_data ? " (half backward)" : "",
      options_.seq_len,
      options_.reuse_len,
      options_.perm_size,
      options_.num_predict,
      options_.mask_alpha,
      options_.mask_beta,
      name_,
      n_tokens_);
}

int64_t PermutationRecords::draw(int64_t n) {
  auto* gen = at::check_generator<at::CPUGeneratorImpl>(generator_);
  return static_cast<int64_t>(gen->random64() % static_cast<uint64_t>(n));
}

double PermutationRecords::uniform() {
  auto* gen = at::check_generator<at::CPUGeneratorImpl>(generator_);
  return static_cast<double>(gen->random64() >> 11) * 0x1.0p-53;
}

std::vector<int64_t> PermutationRecords::draw_order() {
  std::vector<int64_t> order(static_cast<size_t>(options_.perm_size));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = options_.perm_size - 1; i > 0; --i) {
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(draw(i + 1))]);
  }
  return order;
}

// _split_a_and_b: A starts after the reused part and ends at a sentence boundary closer than
// the room left; B follows it, or half of the time (and always without a boundary) is a random
// stretch of whole sentences; both are then cut to fit.
PermutationRecords::Split PermutationRecords::split_a_and_b(const Row& row, int64_t begin) {
  const int64_t tot_len = options_.seq_len - options_.reuse_len - 3;
  const auto& sent = row.sent_ids;
  const auto data_len = static_cast<int64_t>(row.ids.size());
  const auto at = [&](int64_t k) { return sent[static_cast<size_t>(k)]; };
  Split s{begin + options_.reuse_len, 0, 0, 0};
  int64_t end_idx = s.a_begin + 1;
  std::vector<int64_t> cuts;
  for (; end_idx < data_len; ++end_idx) {
    if (at(end_idx) != at(end_idx - 1)) {
      if (end_idx - s.a_begin >= tot_len) {
        break;
      }
      cuts.push_back(end_idx);
    }
  }
  const auto random_cut = [&] {
    return cuts[static_cast<size_t>(draw(static_cast<int64_t>(cuts.size())))];
  };
  if (cuts.empty() || uniform() < 0.5) {
    // A random B, widened to whole sentences.
    s.a_end = cuts.empty() ? end_idx : random_cut();
    const int64_t b_len = std::max<int64_t>(1, tot_len - (s.a_end - s.a_begin));
    s.b_begin = draw(data_len - b_len); // randint(0, data_len - 1 - b_len)
    s.b_end = s.b_begin + b_len;
    while (s.b_begin > 0 && at(s.b_begin - 1) == at(s.b_begin)) {
      --s.b_begin;
    }
    while (s.b_end < data_len - 1 && at(s.b_end - 1) == at(s.b_end)) {
      ++s.b_end;
    }
  } else {
    s.a_end = random_cut();
    s.b_begin = s.a_end;
    s.b_end = end_idx;
  }
  while (s.a_end - s.a_begin + s.b_end - s.b_begin > tot_len) {
    if (s.a_end - s.a_begin > s.b_end - s.b_begin) {
      --s.a_end;
    } else {
      --s.b_end;
    }
  }
  return s;
}

PermutationRecords::Record PermutationRecords::make_record(
    const Row& row,
    int64_t begin,
    bool reverse) {
  const int64_t reuse = options_.reuse_len;
  const Split s = split_a_and_b(row, begin);
  Record r;
  const auto append = [&](int64_t from, int64_t to, int64_t segment) {
    r.tokens.insert(r.tokens.end(), row.ids.begin() + from, row.ids.begin() + to);
    for (int64_t i = from; i < to; ++i) {
      r.positions.push_back(row.position(i));
    }
    r.segment_ids.insert(r.segment_ids.end(), to - from, segment);
  };
  append(begin, begin + reuse, 0);
  append(s.a_begin, s.a_end, 0);
  r.tokens.push_back(formats::kSepId);
  r.positions.push_back(-1);
  r.segment_ids.push_back(0);
  append(s.b_begin, s.b_end, 1);
  r.tokens.insert(r.tokens.end(), {formats::kSepId, formats::kClsId});
  r.positions.insert(r.positions.end(), {-1, -1});
  r.segment_ids.insert(r.segment_ids.end(), {1, 2});
  const int64_t len = options_.seq_len;
  TORCH_CHECK(
      static_cast<int64_t>(r.tokens.size()) == len,
      "record of ",
      r.tokens.size(),
      " tokens, expected ",
      len);

  // Masks and orders per half; the halves' blocks are composed after.
  const std::vector<int64_t> first(r.tokens.begin(), r.tokens.begin() + reuse);
  const std::vector<int64_t> second(r.tokens.begin() + reuse, r.tokens.end());
  const int64_t p = options_.num_predict;
  const auto perm0 = local_perm(first, sample_mask(first, p - p / 2, reverse), draw_order());
  const auto perm1 = local_perm(second, sample_mask(second, p / 2, reverse), draw_order());
  r.is_target = perm0.is_target;
  r.is_target.insert(r.is_target.end(), perm1.is_target.begin(), perm1.is_target.end());
  r.cannot_see = compose_halves(perm0, perm1, reuse, len);
  return r;
}

std::optional<Batch> PermutationRecords::next() {
  if (window_ >= batches_per_pass()) {
    ++epoch_;
    window_ = 0;
    return std::nullopt;
  }
  const int64_t len = options_.seq_len;
  const int64_t rows = options_.batch_size;
  const int64_t p = options_.num_predict;
  std::lock_guard<std::mutex> lock(generator_.mutex());
  Batch batch;
  batch.tokens = torch::empty({len, rows}, torch::kLong);
  batch.segment_ids = torch::empty({len, rows}, torch::kLong);
  batch.perm_mask = torch::empty({len, len, rows}, torch::kBool);
  batch.target_mapping = torch::zeros({p, len, rows}, torch::kFloat);
  batch.targets = torch::zeros({p, rows}, torch::kLong);
  batch.target_mask = torch::zeros({p, rows}, torch::kBool);
  batch.target_index = torch::full({p, rows}, -1, torch::kLong);
  if (options_.bi_data) {
    // the model negates the relative positions of these rows, whatever chunk they land in
    batch.reversed = torch::arange(rows).ge(rows / 2);
  }
  auto tokens = batch.tokens.accessor<int64_t, 2>();
  auto segments = batch.segment_ids.accessor<int64_t, 2>();
  auto perm = batch.perm_mask.accessor<bool, 3>();
  auto mapping = batch.target_mapping.accessor<float, 3>();
  auto targets = batch.targets.accessor<int64_t, 2>();
  auto target_mask = batch.target_mask.accessor<bool, 2>();
  auto target_index = batch.target_index.accessor<int64_t, 2>();
  const int64_t begin = window_ * options_.reuse_len;
  for (int64_t b = 0; b < rows; ++b) {
    const bool reverse = options_.bi_data && b >= rows / 2;
    const Record r = make_record(rows_[static_cast<size_t>(b)], begin, reverse);
    int64_t predicted = 0;
    for (int64_t i = 0; i < len; ++i) {
      const auto k = static_cast<size_t>(i);
      tokens[i][b] = r.tokens[k];
      segments[i][b] = r.segment_ids[k];
      for (int64_t j = 0; j < len; ++j) {
        perm[i][j][b] = r.cannot_see[static_cast<size_t>(i * len + j)] != 0;
      }
      if (r.is_target[k] != 0) {
        TORCH_CHECK(predicted < p, "more targets than num_predict");
        mapping[predicted][i][b] = 1.0F;
        targets[predicted][b] = r.tokens[k];
        target_mask[predicted][b] = true;
        target_index[predicted][b] = r.positions[k];
        ++predicted;
      }
    }
    batch.n_targets += predicted;
  }
  ++window_;
  return batch;
}

void PermutationRecords::save(torch::serialize::OutputArchive& archive) const {
  write_source_identity(archive, *this);
  io::write_int(archive, "data.epoch", epoch_);
  io::write_int(archive, "data.window", window_);
  archive.write("data.rng", util::generator_state(generator_));
}

void PermutationRecords::load(torch::serialize::InputArchive& archive) {
  check_source_identity(archive, *this);
  epoch_ = io::read_int(archive, "data.epoch");
  window_ = io::read_int(archive, "data.window");
  torch::Tensor state;
  archive.read("data.rng", state);
  util::set_generator_state(generator_, state);
}

} // namespace xl::sources
