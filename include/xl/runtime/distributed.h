// Data-parallel processes as torchrun starts them: the environment it sets, and one process
// group over every rank (LibTorch's c10d: Gloo for CPU tensors, NCCL for CUDA ones).
//
//   torchrun --nproc-per-node 2 --no-python build/bin/xl-train --config ...
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/util/error.h"

namespace c10d {
class ProcessGroup;
}

namespace xl::runtime {

/// What torchrun tells each process.
struct DistributedEnv {
  int rank = 0;                          // RANK
  int world_size = 1;                    // WORLD_SIZE
  int local_rank = 0;                    // LOCAL_RANK: the GPU of this process on its machine
  std::string master_addr = "127.0.0.1"; // MASTER_ADDR
  int master_port = 29500;               // MASTER_PORT
  /// TORCHELASTIC_USE_AGENT_STORE: torchrun already serves the store at the master address
  bool agent_store = false;
  /// TORCHELASTIC_RESTART_COUNT: how often torchrun restarted the group (--max-restarts)
  int restart = 0;
};

/// The environment of a process started for data-parallel training: nullopt unless WORLD_SIZE
/// is set and above 1. A missing or malformed variable is a UserError naming it, as is RANK
/// without WORLD_SIZE.
std::optional<DistributedEnv> distributed_env();

/// One process group over every rank. Collectives take and return CPU tensors whatever the
/// backend; a peer that died or timed out is a UserError naming this rank.
class Group {
 public:
  /// Logs what it waits for, then joins the other ranks: an address that does not resolve is
  /// a UserError at once, ranks missing after `start_timeout` one that says so; `timeout`
  /// bounds each collective afterwards.
  Group(
      const DistributedEnv& env,
      const torch::Device& device,
      std::chrono::milliseconds start_timeout,
      std::chrono::milliseconds timeout);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int rank() const {
    return rank_;
  }
  int size() const {
    return size_;
  }
  /// Sums `t` over the ranks, in place.
  void all_reduce_sum(torch::Tensor& t);
  /// Replaces `t` on every rank with rank `root`'s.
  void broadcast(torch::Tensor& t, int root);
  /// Every rank's `t` (same shape and type everywhere), in rank order.
  std::vector<torch::Tensor> all_gather(const torch::Tensor& t);
  /// Whether `flag` is true on any rank.
  bool any(bool flag);
  void barrier();

  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const;
  /// The error to report when communication `what` failed with `cause`.
  UserError lost(const std::string& what, const std::exception& cause) const;

 private:
  // Moves to the backend's device, runs, waits; turns communication errors into UserErrors.
  template <class F>
  void collective(const char* what, F run);

  int rank_;
  int size_;
  torch::Device device_;
  double timeout_s_; // each collective's limit, for messages
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace xl::runtime
