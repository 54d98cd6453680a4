#include "xl/nn/bins.h"

#include <algorithm>

#include "xl/runtime/device.h"

namespace xl::nn {

namespace {

// Views of `buffer` [3 N]: head columns, then each bin's rows, then each bin's local ids.
BinnedIds views_of(const torch::Tensor& buffer, const std::vector<int64_t>& sizes, int64_t n) {
  BinnedIds out;
  out.head_cols = buffer.narrow(0, 0, n);
  int64_t offset = n;
  for (const int64_t size : sizes) {
    out.rows.push_back(buffer.narrow(0, offset, size));
    out.local.push_back(buffer.narrow(0, offset + n, size));
    offset += size;
  }
  return out;
}

BinnedIds bin_on_host(
    const torch::Tensor& host_ids,
    const std::vector<int64_t>& bounds,
    const torch::Device& device) {
  const auto ids = host_ids.reshape({-1}).contiguous();
  const int64_t n = ids.numel();
  const size_t n_bins = bounds.size() - 1;
  const auto* id = ids.data_ptr<int64_t>();
  std::vector<int64_t> bin(static_cast<size_t>(n));
  std::vector<int64_t> sizes(n_bins, 0);
  for (int64_t r = 0; r < n; ++r) {
    const auto* past = std::upper_bound(bounds.data() + 1, bounds.data() + bounds.size(), id[r]);
    TORCH_CHECK(
        id[r] >= 0 && id[r] < bounds.back(),
        "token id ",
        id[r],
        " at row ",
        r,
        " is outside the vocabulary [0, ",
        bounds.back(),
        ")");
    const auto b = static_cast<size_t>(past - bounds.data() - 1);
    bin[static_cast<size_t>(r)] = static_cast<int64_t>(b);
    ++sizes[b];
  }
  auto buffer = torch::empty(
      {3 * n}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(device.is_cuda()));
  auto* out = buffer.data_ptr<int64_t>();
  std::vector<int64_t> next(n_bins, n);
  for (size_t b = 1; b < n_bins; ++b) {
    next[b] = next[b - 1] + sizes[b - 1];
  }
  for (int64_t r = 0; r < n; ++r) {
    const auto b = static_cast<size_t>(bin[static_cast<size_t>(r)]);
    out[r] = b == 0 ? id[r] : bounds[1] + static_cast<int64_t>(b) - 1;
    out[next[b]] = r;
    out[next[b] + n] = id[r] - bounds[b];
    ++next[b];
  }
  return views_of(runtime::upload(buffer, device), sizes, n);
}

BinnedIds bin_on_device(const torch::Tensor& ids, const std::vector<int64_t>& bounds) {
  BinnedIds out;
  const auto cutoffs =
      torch::tensor(std::vector<int64_t>(bounds.begin() + 1, bounds.end() - 1), ids.options());
  const auto bin = torch::bucketize(ids, cutoffs, /*out_int32=*/false, /*right=*/true);
  out.head_cols = torch::where(bin == 0, ids, bin + (bounds[1] - 1));
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const auto rows = (bin == static_cast<int64_t>(i)).nonzero().squeeze(1);
    out.rows.push_back(rows);
    out.local.push_back(ids.index_select(0, rows) - bounds[i]);
  }
  return out;
}

} // namespace

BinnedIds bin_ids(
    const torch::Tensor& ids,
    const torch::Tensor& host_ids,
    const std::vector<int64_t>& bounds) {
  TORCH_CHECK(
      ids.dim() == 1 && ids.scalar_type() == torch::kLong && bounds.size() >= 2,
      "bin_ids expects int64 ids [N] and at least one bin, got ",
      ids.sizes(),
      " (",
      ids.scalar_type(),
      ") and ",
      bounds.size(),
      " bounds");
  if (bounds.size() == 2) { // one bin: every row
    return {{torch::arange(ids.numel(), ids.options())}, {ids}, ids};
  }
  if (ids.is_cpu()) {
    return bin_on_host(ids, bounds, ids.device());
  }
  if (host_ids.defined() && host_ids.is_cpu()) {
    TORCH_CHECK(
        host_ids.numel() == ids.numel(),
        "the host copy of ",
        ids.numel(),
        " ids holds ",
        host_ids.numel());
    return bin_on_host(host_ids, bounds, ids.device());
  }
  return bin_on_device(ids, bounds);
}

} // namespace xl::nn
