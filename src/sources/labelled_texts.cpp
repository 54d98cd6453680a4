#include "xl/sources/labelled_texts.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include "source_state.h"
#include "xl/formats/labelled_file.h"
#include "xl/io/archive.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/generator.h"

namespace xl::sources {

namespace {

constexpr int64_t kSegmentA = 0;
constexpr int64_t kSegmentCls = 2;
constexpr int64_t kSegmentPad = 4;

std::vector<EncodedExample> encode_examples(
    const std::filesystem::path& path,
    const formats::SentencePiece& model) {
  std::vector<EncodedExample> out;
  for (auto& example : formats::read_labelled_texts(path)) {
    out.push_back({example.label, model.encode(example.text)});
  }
  return out;
}

// The first `n` examples as rows of `len`: [pad ... | text (cut to fit) | <sep> | <cls>], with
// their segments, labels and lengths.
struct PackedExamples {
  torch::Tensor tokens;
  torch::Tensor segment_ids;
  torch::Tensor labels;
  torch::Tensor lengths;
};

PackedExamples pack_examples(const std::vector<EncodedExample>& examples, int64_t n, int64_t len) {
  PackedExamples out{
      torch::full({n, len}, formats::kPadId, torch::kLong),
      torch::full({n, len}, kSegmentPad, torch::kLong),
      torch::empty({n}, torch::kLong),
      torch::empty({n}, torch::kLong)};
  auto tokens = out.tokens.accessor<int64_t, 2>();
  auto segments = out.segment_ids.accessor<int64_t, 2>();
  auto labels = out.labels.accessor<int64_t, 1>();
  auto lengths = out.lengths.accessor<int64_t, 1>();
  for (int64_t e = 0; e < n; ++e) {
    const auto& example = examples[static_cast<size_t>(e)];
    const auto kept = std::min<int64_t>(static_cast<int64_t>(example.ids.size()), len - 2);
    const int64_t start = len - 2 - kept;
    for (int64_t k = 0; k < kept; ++k) {
      tokens[e][start + k] = example.ids[static_cast<size_t>(k)];
      segments[e][start + k] = kSegmentA;
    }
    tokens[e][len - 2] = formats::kSepId;
    segments[e][len - 2] = kSegmentA;
    tokens[e][len - 1] = formats::kClsId;
    segments[e][len - 1] = kSegmentCls;
    labels[e] = example.label;
    lengths[e] = kept + 2;
  }
  return out;
}

} // namespace

LabelledTexts::LabelledTexts(
    const std::filesystem::path& path,
    const formats::SentencePiece& model,
    const LabelledOptions& options)
    : LabelledTexts(encode_examples(path, model), path.string(), options) {}

LabelledTexts::LabelledTexts(
    const std::vector<EncodedExample>& examples,
    std::string name,
    const LabelledOptions& options)
    : options_(options),
      name_(std::move(name)),
      generator_(at::make_generator<at::CPUGeneratorImpl>(options.seed)) {
  if (options_.batch_size < 1 || options_.seq_len < 3) {
    throw UserError(fmt::format(
        "labelled texts: batch_size ({}) must be positive and seq_len ({}) at "
        "least 3",
        options_.batch_size,
        options_.seq_len));
  }
  available_ = static_cast<int64_t>(examples.size());
  for (size_t e = 0; options_.n_class && e < examples.size(); ++e) {
    if (examples[e].label >= *options_.n_class) {
      throw UserError(fmt::format(
          "{}: example {} has label {}, but the model has {} classes (model.xlnet.n_class): "
          "labels go from 0 to {}",
          name_,
          e + 1,
          examples[e].label,
          *options_.n_class,
          *options_.n_class - 1));
    }
  }
  if (options_.max_examples && *options_.max_examples > available_) {
    throw UserError(fmt::format(
        "{} holds {} examples, fewer than the first {} asked for: ask for at most {}, or "
        "null for all",
        name_,
        available_,
        *options_.max_examples,
        available_));
  }
  const int64_t n = options_.max_examples.value_or(available_);
  if (options_.shuffle && n < options_.batch_size) {
    throw UserError(fmt::format(
        "{} {} examples: too few for one training batch of batch_size {}{}",
        name_,
        options_.max_examples ? "takes" : "holds",
        n,
        options_.batch_size,
        options_.max_examples ? fmt::format(": ask for at least {}", options_.batch_size) : ""));
  }
  auto packed = pack_examples(examples, n, options_.seq_len);
  tokens_ = std::move(packed.tokens);
  segment_ids_ = std::move(packed.segment_ids);
  labels_ = std::move(packed.labels);
  lengths_ = std::move(packed.lengths);
  order_ = pass_order();
}

torch::Tensor LabelledTexts::pass_order() {
  const int64_t n = labels_.size(0);
  if (!options_.shuffle) {
    return options_.group_by_length
        ? std::get<1>(lengths_.sort(/*stable=*/true, 0, /*descending=*/false))
        : torch::arange(n, torch::kLong);
  }
  auto order = torch::randperm(n, generator_, torch::kLong);
  if (!options_.group_by_length) {
    return order;
  }
  // Full batches only (the rest of the shuffled rows waits for another pass), sorted by length
  // window by window, then the batches in random order.
  const int64_t size = options_.batch_size;
  const int64_t batches = n / size;
  order = order.narrow(0, 0, batches * size);
  std::vector<torch::Tensor> windows;
  for (int64_t start = 0; start < batches * size; start += kGroupBatches * size) {
    const auto window =
        order.narrow(0, start, std::min(kGroupBatches * size, batches * size - start));
    const auto by_length =
        std::get<1>(lengths_.index_select(0, window).sort(/*stable=*/true, 0, false));
    windows.push_back(window.index_select(0, by_length));
  }
  const auto grouped = torch::cat(windows).view({batches, size});
  return grouped.index_select(0, torch::randperm(batches, generator_, torch::kLong)).reshape({-1});
}

int64_t LabelledTexts::batches_per_pass() const {
  const int64_t n = labels_.size(0);
  return options_.shuffle ? n / options_.batch_size
                          : (n + options_.batch_size - 1) / options_.batch_size;
}

std::string LabelledTexts::describe() const {
  const char* order = options_.shuffle
      ? (options_.group_by_length ? "shuffled, grouped by length" : "shuffled")
      : (options_.group_by_length ? "by length" : "in file order");
  return fmt::format(
      "labelled texts: {} rows x {} tokens{}, {}, of {} ({} examples{})",
      options_.batch_size,
      options_.seq_len,
      options_.group_by_length ? " at most" : "",
      order,
      name_,
      labels_.size(0),
      labels_.size(0) < available_ ? fmt::format(": the first of {}", available_) : "");
}

std::optional<Batch> LabelledTexts::next() {
  if (read_ >= batches_per_pass()) {
    ++epoch_;
    read_ = 0;
    if (options_.shuffle) {
      order_ = pass_order();
    }
    return std::nullopt;
  }
  const int64_t begin = read_ * options_.batch_size;
  const int64_t rows = std::min(options_.batch_size, labels_.size(0) - begin);
  const auto rows_index = order_.narrow(0, begin, rows);
  ++read_;
  // Grouped by length: the positions every row pads are left out (they change no score).
  const int64_t len = options_.seq_len;
  const int64_t width =
      options_.group_by_length ? lengths_.index_select(0, rows_index).max().item<int64_t>() : len;
  Batch batch;
  batch.tokens = tokens_.index_select(0, rows_index).narrow(1, len - width, width).t().contiguous();
  batch.segment_ids =
      segment_ids_.index_select(0, rows_index).narrow(1, len - width, width).t().contiguous();
  batch.padding = batch.segment_ids.eq(kSegmentPad);
  batch.labels = labels_.index_select(0, rows_index);
  batch.target_index = rows_index.unsqueeze(0);
  batch.n_targets = rows;
  return batch;
}

void LabelledTexts::save(torch::serialize::OutputArchive& archive) const {
  write_source_identity(archive, *this);
  io::write_int(archive, "data.epoch", epoch_);
  io::write_int(archive, "data.read", read_);
  archive.write("data.order", order_);
  archive.write("data.rng", util::generator_state(generator_));
}

void LabelledTexts::load(torch::serialize::InputArchive& archive) {
  check_source_identity(archive, *this);
  epoch_ = io::read_int(archive, "data.epoch");
  read_ = io::read_int(archive, "data.read");
  archive.read("data.order", order_);
  torch::Tensor state;
  archive.read("data.rng", state);
  util::set_generator_state(generator_, state);
}

} // namespace xl::sources
