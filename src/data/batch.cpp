#include "xl/data/batch.h"

namespace xl::data {

namespace {

// The batch dimension of each field (see the table in batch.h).
constexpr int64_t kTokensDim = 1;
constexpr int64_t kPairDim = 2; // perm_mask, target_mapping
constexpr int64_t kRowDim = 0;  // labels, reversed

torch::Tensor narrow_defined(
    const torch::Tensor& t,
    int64_t dim,
    int64_t start,
    int64_t size) {
  return t.defined() ? t.narrow(dim, start, size) : t;
}

torch::Tensor to_defined(const torch::Tensor& t, const torch::Device& device) {
  return t.defined() ? t.to(device) : t;
}

} // namespace

int64_t Batch::batch_size() const {
  if (tokens.defined()) {
    return tokens.size(kTokensDim);
  }
  return labels.defined() ? labels.size(kRowDim) : 0;
}

Batch Batch::to(const torch::Device& device) const {
  Batch out = *this;
  for (auto* t :
       {&out.tokens,
        &out.targets,
        &out.target_mask,
        &out.segment_ids,
        &out.padding,
        &out.reversed,
        &out.perm_mask,
        &out.target_mapping,
        &out.labels}) {
    *t = to_defined(*t, device);
  }
  return out;
}

Batch Batch::narrow(int64_t start, int64_t size) const {
  TORCH_CHECK(
      start >= 0 && size >= 0 && start + size <= batch_size(),
      "rows [",
      start,
      ", ",
      start + size,
      ") of a batch of ",
      batch_size());
  Batch out;
  out.tokens = narrow_defined(tokens, kTokensDim, start, size);
  out.targets = narrow_defined(targets, kTokensDim, start, size);
  out.target_mask = narrow_defined(target_mask, kTokensDim, start, size);
  out.segment_ids = narrow_defined(segment_ids, kTokensDim, start, size);
  out.padding = narrow_defined(padding, kTokensDim, start, size);
  out.reversed = narrow_defined(reversed, kRowDim, start, size);
  out.perm_mask = narrow_defined(perm_mask, kPairDim, start, size);
  out.target_mapping = narrow_defined(target_mapping, kPairDim, start, size);
  out.labels = narrow_defined(labels, kRowDim, start, size);
  out.n_targets = count_targets(out);
  return out;
}

std::vector<Batch> Batch::split(int64_t chunks) const {
  const int64_t rows = batch_size();
  TORCH_CHECK(
      chunks >= 1 && rows % chunks == 0,
      "cannot split a batch of ",
      rows,
      " rows into ",
      chunks,
      " equal chunks");
  if (chunks == 1) {
    return {*this};
  }
  std::vector<Batch> parts;
  parts.reserve(static_cast<size_t>(chunks));
  const int64_t size = rows / chunks;
  for (int64_t c = 0; c < chunks; ++c) {
    parts.push_back(narrow(c * size, size));
  }
  return parts;
}

int64_t count_targets(const Batch& batch) {
  if (batch.target_mask.defined()) {
    TORCH_CHECK(
        batch.target_mask.is_cpu(),
        "counting a target mask on ",
        batch.target_mask.device(),
        " would wait for the device: split batches before moving them");
    return batch.target_mask.sum().item<int64_t>();
  }
  if (batch.targets.defined()) {
    return batch.targets.numel();
  }
  return batch.labels.defined() ? batch.labels.numel() : 0;
}

} // namespace xl::data
