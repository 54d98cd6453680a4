#include "xl/sources/unigram_baseline.h"

namespace xl::sources {

UnigramBaseline UnigramBaseline::from_counts(
    const torch::Tensor& counts,
    const torch::Tensor& chars) {
  TORCH_CHECK(
      counts.dim() == 1 && chars.sizes() == counts.sizes(),
      "a unigram baseline needs counts [V] and characters [V], got ",
      counts.sizes(),
      " and ",
      chars.sizes());
  const auto c = counts.to(torch::kDouble);
  const double total = c.sum().item<double>() + static_cast<double>(c.size(0));
  return {-torch::log((c + 1.0) / total), chars.to(torch::kDouble)};
}

UnigramBaseline piece_unigram_baseline(
    const formats::SentenceTokens& train,
    const formats::SentencePiece& model) {
  const int64_t size = model.size();
  auto counts = torch::zeros({size}, torch::kLong);
  auto count = counts.accessor<int64_t, 1>();
  for (const int64_t id : train.ids) {
    ++count[id];
  }
  auto chars = torch::ones({size}, torch::kDouble);
  auto chars_of = chars.accessor<double, 1>();
  for (int64_t id = formats::kEopId + 1; id < size; ++id) {
    // UTF-8 code points: every byte but the continuation bytes 10xxxxxx.
    int64_t points = 0;
    for (const char byte : model.piece(id)) {
      points += (static_cast<unsigned char>(byte) & 0xC0) != 0x80 ? 1 : 0;
    }
    chars_of[id] = static_cast<double>(std::max<int64_t>(points, 1));
  }
  return UnigramBaseline::from_counts(counts, chars);
}

void BaselineTotals::add(const Batch& batch, const UnigramBaseline& baseline) {
  if (!batch.targets.defined()) {
    return;
  }
  const auto ids = batch.targets.reshape({-1}).cpu();
  auto nll = baseline.nll.index_select(0, ids);
  auto chars_of = baseline.chars.index_select(0, ids);
  if (batch.target_mask.defined()) {
    const auto keep = batch.target_mask.reshape({-1}).cpu().to(torch::kBool);
    nll = nll.masked_select(keep);
    chars_of = chars_of.masked_select(keep);
  }
  unigram_nll += nll.sum().item<double>();
  chars += chars_of.sum().item<double>();
  targets += nll.numel();
}

} // namespace xl::sources
