#include "xl/sources/windows.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <algorithm>

#include "source_state.h"
#include "xl/io/archive.h"
#include "xl/util/error.h"
#include "xl/util/generator.h"

namespace xl::sources {

namespace {

void require_longer_than_window(const formats::Tokens& tokens, int64_t window) {
  if (tokens.size() <= window) {
    throw UserError(fmt::format(
        "{} holds {} tokens: too few for windows of {} inputs and their targets",
        tokens.name(),
        tokens.size(),
        window));
  }
}

} // namespace

// ============================================================================
// SlidingWindows
// ============================================================================

SlidingWindows::SlidingWindows(
    const formats::Tokens& tokens,
    int64_t window,
    int64_t stride,
    int64_t batch_size,
    bool lead)
    : tokens_(tokens),
      window_(window),
      stride_(stride),
      batch_size_(batch_size),
      lead_(lead),
      next_target_(first_target()) {
  TORCH_CHECK(
      window >= 1 && stride >= 1 && stride <= window && batch_size >= 1,
      "sliding windows need 1 <= stride <= window and batch_size >= 1, got window ",
      window,
      ", stride ",
      stride,
      ", batch_size ",
      batch_size);
  require_longer_than_window(tokens, lead ? 1 : window);
}

int64_t SlidingWindows::batches_per_pass() const {
  // Targets W .. size-1: full windows in batches, then a last partial window alone.
  const int64_t targets = std::max<int64_t>(0, tokens_.size() - window_);
  const int64_t full = targets / stride_;
  return (lead_ ? 1 : 0) + (full + batch_size_ - 1) / batch_size_ + (targets % stride_ > 0 ? 1 : 0);
}

std::string SlidingWindows::describe() const {
  return fmt::format(
      "sliding windows: {} tokens, the last {} scored, {} windows per batch, of {} ({} tokens)",
      window_,
      stride_,
      batch_size_,
      tokens_.name(),
      tokens_.size());
}

std::string SlidingWindows::metric_qualifier() const {
  return stride_ > 1 ? fmt::format("@stride={}", stride_) : "";
}

std::optional<Batch> SlidingWindows::next() {
  const int64_t end = tokens_.size(); // targets are tokens [window, end)
  if (next_target_ >= end) {
    ++epoch_;
    next_target_ = first_target();
    return std::nullopt;
  }
  if (next_target_ < window_) {
    // The lead window: tokens [0, m - 1) scoring targets [1, m), m = min(W, size).
    const int64_t m = std::min(window_, end);
    const auto span = tokens_.slice(0, m);
    Batch batch;
    batch.tokens = span.narrow(0, 0, m - 1).unsqueeze(1);
    batch.targets = span.narrow(0, 1, m - 1).unsqueeze(1);
    batch.target_index = torch::arange(1, m, torch::kLong).unsqueeze(1);
    batch.n_targets = m - 1;
    next_target_ = m;
    return batch;
  }
  // Window scoring targets [t, t + s) reads inputs [t + s - 1 - window, t + s - 1).
  int64_t scored = stride_;
  int64_t count = std::min(batch_size_, (end - next_target_) / stride_);
  if (count == 0) {
    scored = end - next_target_; // the last, shorter window
    count = 1;
  }
  const int64_t first_input = next_target_ + scored - 1 - window_;
  // One read spans every window of this batch and their targets.
  const auto span = tokens_.slice(first_input, window_ + (count - 1) * scored + 1);
  Batch batch;
  batch.tokens =
      span.narrow(0, 0, span.size(0) - 1).unfold(0, window_, scored).t().contiguous(); // [W, count]
  batch.targets = span.narrow(0, 1, span.size(0) - 1)
                      .unfold(0, window_, scored)
                      .t()
                      .narrow(0, window_ - scored, scored)
                      .contiguous(); // [S, count]
  batch.n_targets = scored * count;
  // target j of window c is token next_target + c * scored + j
  batch.target_index = (torch::arange(scored, torch::kLong) + next_target_).unsqueeze(1) +
      (torch::arange(count, torch::kLong) * scored).unsqueeze(0);
  next_target_ += scored * count;
  return batch;
}

void SlidingWindows::save(torch::serialize::OutputArchive& archive) const {
  write_source_identity(archive, *this);
  io::write_int(archive, "data.epoch", epoch_);
  io::write_int(archive, "data.next_target", next_target_);
}

void SlidingWindows::load(torch::serialize::InputArchive& archive) {
  check_source_identity(archive, *this);
  epoch_ = io::read_int(archive, "data.epoch");
  next_target_ = io::read_int(archive, "data.next_target");
}

// ============================================================================
// RandomWindows
// ============================================================================

RandomWindows::RandomWindows(
    const formats::Tokens& tokens,
    int64_t window,
    int64_t batch_size,
    uint64_t seed)
    : tokens_(tokens),
      window_(window),
      batch_size_(batch_size),
      generator_(at::make_generator<at::CPUGeneratorImpl>(seed)) {
  TORCH_CHECK(
      window >= 1 && batch_size >= 1,
      "random windows need window >= 1 and batch_size >= 1, got ",
      window,
      " and ",
      batch_size);
  require_longer_than_window(tokens, window);
}

int64_t RandomWindows::batches_per_pass() const {
  const int64_t per_batch = window_ * batch_size_;
  return std::max<int64_t>(1, (tokens_.size() - 1 + per_batch - 1) / per_batch);
}

std::string RandomWindows::describe() const {
  return fmt::format(
      "random windows: {} x {} tokens, of {} ({} tokens)",
      batch_size_,
      window_,
      tokens_.name(),
      tokens_.size());
}

std::optional<Batch> RandomWindows::next() {
  if (drawn_ >= batches_per_pass()) {
    ++epoch_;
    drawn_ = 0;
    return std::nullopt;
  }
  // Offsets o in [0, size - window - 1]: inputs [o, o + W), targets [o + 1, o + W + 1).
  const auto offsets =
      torch::randint(tokens_.size() - window_, {batch_size_}, generator_, torch::kLong);
  std::vector<torch::Tensor> inputs;
  std::vector<torch::Tensor> targets;
  inputs.reserve(static_cast<size_t>(batch_size_));
  targets.reserve(static_cast<size_t>(batch_size_));
  const auto* offset = offsets.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch_size_; ++b) {
    const auto span = tokens_.slice(offset[b], window_ + 1);
    inputs.push_back(span.narrow(0, 0, window_));
    targets.push_back(span.narrow(0, 1, window_));
  }
  ++drawn_;
  Batch batch;
  batch.tokens = torch::stack(inputs, 1);
  batch.targets = torch::stack(targets, 1);
  batch.n_targets = window_ * batch_size_;
  return batch;
}

void RandomWindows::save(torch::serialize::OutputArchive& archive) const {
  write_source_identity(archive, *this);
  io::write_int(archive, "data.epoch", epoch_);
  io::write_int(archive, "data.drawn", drawn_);
  archive.write("data.rng", util::generator_state(generator_));
}

void RandomWindows::load(torch::serialize::InputArchive& archive) {
  check_source_identity(archive, *this);
  epoch_ = io::read_int(archive, "data.epoch");
  drawn_ = io::read_int(archive, "data.drawn");
  torch::Tensor state;
  archive.read("data.rng", state);
  util::set_generator_state(generator_, state);
}

} // namespace xl::sources
