#include "xl/train/data_parallel.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <numeric>
#include <unordered_map>

namespace xl::train {

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
