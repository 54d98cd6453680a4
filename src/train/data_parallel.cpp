#include "xl/train/data_parallel.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_map>

#include "xl/config/config.h"
#include "xl/run/checkpoint.h"
#include "xl/util/hash.h"

namespace xl::train {

namespace {

// The model's parameters, a line each: name and shape.
std::string parameter_shapes(const torch::nn::Module& model) {
  std::string text;
  for (const auto& item : model.named_parameters()) {
    text += fmt::format("{} {}\n", item.key(), fmt::join(item.value().sizes(), "x"));
  }
  return text;
}

// Every rank's `text` (of any length), in rank order: the lengths first, so that every
// exchange has the same shape on every rank (Gloo aborts the process otherwise).
std::vector<std::string> gather_texts(runtime::Group& group, const std::string& text) {
  const auto lengths = group.all_gather(torch::tensor({static_cast<int64_t>(text.size())}));
  int64_t longest = 0;
  for (const auto& length : lengths) {
    longest = std::max(longest, length.item<int64_t>());
  }
  auto bytes = torch::zeros({longest}, torch::kUInt8);
  std::memcpy(bytes.data_ptr<uint8_t>(), text.data(), text.size());
  std::vector<std::string> texts;
  const auto gathered = group.all_gather(bytes);
  for (size_t r = 0; r < gathered.size(); ++r) {
    const auto* data = gathered[r].data_ptr<uint8_t>();
    texts.emplace_back(
        reinterpret_cast<const char*>(data), static_cast<size_t>(lengths[r].item<int64_t>()));
  }
  return texts;
}

// The first difference between two ranks' setups, in one line.
std::string first_difference(
    const std::string& mine,
    const std::string& theirs,
    int rank,
    const std::string& shapes_mine,
    const std::string& shapes_theirs) {
  const auto a = run::flatten_config(theirs);
  const auto b = run::flatten_config(mine);
  for (const auto& [key, value] : a) {
    const auto it = b.find(key);
    const std::string other = it == b.end() ? "(none)" : it->second;
    if (other != value) {
      return fmt::format("{}: rank 0 {}, rank {} {}", key, value, rank, other);
    }
  }
  for (const auto& [key, value] : b) {
    if (a.count(key) == 0) {
      return fmt::format("{}: rank 0 (none), rank {} {}", key, rank, value);
    }
  }
  return shapes_mine != shapes_theirs
      ? fmt::format("the model's parameters (names and shapes) differ on rank {}", rank)
      : "";
}

} // namespace

void require_same_setup(
    runtime::Group& group,
    const config::Config& config,
    const torch::nn::Module& model,
    const std::vector<std::pair<std::string, std::string>>& facts) {
  const std::string resolved = config::dump(config);
  const std::string shapes = parameter_shapes(model);
  std::string said;
  for (const auto& [name, value] : facts) {
    said += name + ": " + value + "\n";
  }
  const auto digest = static_cast<int64_t>(hash64(
      said.data(),
      said.size(),
      hash64(shapes.data(), shapes.size(), hash64(resolved.data(), resolved.size()))));
  const auto digests = group.all_gather(torch::tensor({digest}));
  const bool same = std::all_of(digests.begin(), digests.end(), [&](const torch::Tensor& d) {
    return d.item<int64_t>() == digests[0].item<int64_t>();
  });
  if (same) {
    return;
  }
  // Every rank learns every rank's setup, so that each prints the same line.
  const auto configs = gather_texts(group, resolved);
  const auto models = gather_texts(group, shapes);
  std::vector<std::vector<std::string>> values(facts.size());
  for (size_t f = 0; f < facts.size(); ++f) {
    values[f] = gather_texts(group, facts[f].second);
  }
  for (size_t r = 1; r < configs.size(); ++r) {
    auto difference =
        first_difference(configs[r], configs[0], static_cast<int>(r), models[r], models[0]);
    for (size_t f = 0; f < facts.size() && difference.empty(); ++f) {
      if (values[f][r] != values[f][0]) {
        difference = fmt::format(
            "{}: rank 0 {}, rank {} {}",
            facts[f].first,
            values[f][0].empty() ? "(none)" : values[f][0],
            r,
            values[f][r].empty() ? "(none)" : values[f][r]);
      }
    }
    if (!difference.empty()) {
      throw UserError(fmt::format(
          "rank {} of {}: the ranks would train different things: {}; start every rank with "
          "the same config and overrides (torchrun runs one command for all)",
          group.rank(),
          group.size(),
          difference));
    }
  }
}

DataParallel::DataParallel(
    runtime::Group& group,
    const std::vector<std::pair<std::string, torch::Tensor>>& named_params)
    : group_(group) {
  std::vector<torch::Tensor> params;
  std::unordered_map<size_t, std::string> names;
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, p] : named_params) {
      auto value = p.detach();
      group_.broadcast(value, 0);
      names.emplace(params.size(), name);
      params.push_back(p);
    }
  }
  // As torch.nn.parallel.DistributedDataParallel does: buckets filled in reverse order of the
  // parameters, the order in which the backward pass produces their gradients.
  std::vector<int64_t> reversed(params.size());
  std::iota(reversed.rbegin(), reversed.rend(), 0);
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      params,
      {static_cast<size_t>(c10d::kDefaultFirstBucketBytes),
       static_cast<size_t>(c10d::kDefaultBucketBytesCap)},
      std::vector<bool>(params.size(), false),
      reversed);
  std::reverse(buckets.begin(), buckets.end());
  std::vector<int64_t> caps(limits.rbegin(), limits.rend());
  reducer_ = std::make_shared<c10d::Reducer>(
      params,
      buckets,
      group_.process_group(),
      std::vector<bool>(params.size(), false),
      c10d::kDefaultBucketBytesCap,
      /*find_unused_parameters=*/true,
      /*gradient_as_bucket_view=*/false,
      names,
      c10d::kDefaultFirstBucketBytes,
      /*skip_all_reduce_unused_params=*/false,
      /*use_python_reducer=*/false,
      caps);
}

DataParallel::~DataParallel() = default;

void DataParallel::backward_and_reduce(const torch::Tensor& objective) {
  reducer_->prepare_for_backward({objective});
  try {
    objective.backward();
  } catch (const std::exception& e) {
    throw group_.lost("reducing the gradients", e);
  }
}

} // namespace xl::train
