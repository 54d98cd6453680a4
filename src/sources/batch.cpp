#include "xl/sources/batch.h"

#include <algorithm>

namespace xl::sources {

namespace {

// Every tensor field, its name in files and its batch dimension (see the table in batch.h).
struct Field {
  const char* name;
  torch::Tensor Batch::*member;
  int64_t batch_dim;
};
constexpr Field kFields[] = {
    {"tokens", &Batch::tokens, 1},
    {"targets", &Batch::targets, 1},
    {"target_mask", &Batch::target_mask, 1},
    {"segment_ids", &Batch::segment_ids, 1},
    {"padding", &Batch::padding, 1},
    {"reversed", &Batch::reversed, 0},
    {"perm_mask", &Batch::perm_mask, 2},
    {"target_mapping", &Batch::target_mapping, 2},
    {"labels", &Batch::labels, 0},
    {"target_index", &Batch::target_index, 1},
};

} // namespace

int64_t Batch::batch_size() const {
  if (tokens.defined()) {
    return tokens.size(1);
  }
  return labels.defined() ? labels.size(0) : 0;
}

Batch Batch::to(const torch::Device& device) const {
  Batch out = *this;
  bool on_cpu = true;
  for (const Field& f : kFields) {
    on_cpu = on_cpu && (!(this->*f.member).defined() || (this->*f.member).is_cpu());
  }
  const bool upload = device.is_cuda() && on_cpu;
  out.host = device.is_cpu() ? nullptr : upload ? std::make_shared<const Batch>(*this) : host;
  for (const Field& f : kFields) {
    auto& t = out.*f.member;
    if (t.defined()) {
      t = upload && t.is_cpu() ? t.pin_memory().to(device, /*non_blocking=*/true) : t.to(device);
    }
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
  for (const Field& f : kFields) {
    const auto& t = this->*f.member;
    if (t.defined()) {
      out.*f.member = t.narrow(f.batch_dim, start, size);
    }
  }
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

std::map<std::string, torch::Tensor> named_fields(const Batch& batch) {
  std::map<std::string, torch::Tensor> out;
  for (const Field& f : kFields) {
    if ((batch.*f.member).defined()) {
      out.emplace(f.name, batch.*f.member);
    }
  }
  return out;
}

Batch batch_from_fields(const std::map<std::string, torch::Tensor>& fields) {
  Batch batch;
  for (const auto& entry : fields) {
    const auto* f = std::find_if(std::begin(kFields), std::end(kFields), [&](const Field& field) {
      return entry.first == field.name;
    });
    TORCH_CHECK(f != std::end(kFields), "no batch field is called ", entry.first);
    batch.*f->member = entry.second;
  }
  batch.n_targets = count_targets(batch);
  return batch;
}

} // namespace xl::sources
