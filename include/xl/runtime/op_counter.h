// Counts what a stretch of work asks of LibTorch, through its RecordFunction callbacks: the
// operator calls (each dispatched call, nested ones included: a launch-bound GPU step is as slow
// as its count), the autograd nodes the backward pass runs, and the points where the host waits
// for a device value. xl-bench reports them per training step and per evaluated segment.
#pragma once

#include <ATen/record_function.h>

#include <cstdint>
#include <map>
#include <string>

namespace xl::runtime {

struct OpCounts {
  /// dispatched operator calls, nested ones included (aten::linear and the addmm it calls)
  int64_t ops = 0;
  /// autograd nodes run by backward passes
  int64_t backward_nodes = 0;
  /// reads of a tensor's value by the host: item() and a tensor's truth value
  /// (aten::_local_scalar_dense), nonzero, and copies from a device to the CPU. Counted on every
  /// device, the CPU included, so that a CPU test sees the reads a GPU would wait for; except
  /// those of LibTorch's fused optimizer kernels on the CPU, which read each parameter's step
  /// count there (their CUDA kernels read it on the device).
  int64_t host_reads = 0;
  /// copies from the CPU to a device that wait for it (not non_blocking)
  int64_t blocking_uploads = 0;
  /// of `ops`, those a graphed block ran emulated (runtime/cuda_graph.h): on a GPU one replay of
  /// its graph stands for them
  int64_t graphed = 0;
  /// replays of graphed blocks (emulated runs included)
  int64_t replays = 0;

  /// The operator calls the host makes when the graphed blocks replay CUDA graphs: `ops` less
  /// `graphed`, plus one a replay.
  int64_t host_calls() const {
    return ops - graphed + replays;
  }

  OpCounts operator-(const OpCounts& other) const;
};

/// Counts on every thread while it lives; the graphed blocks' replays and emulated runs through
/// the hooks of runtime/cuda_graph.h, which the first counter sets (the backward pass of a CUDA step runs on LibTorch's
/// device threads). Counters may nest; each sees what happened since it was made.
class OpCounter {
 public:
  /// `count_names`: also count the calls of each operator and autograd node by name (slower).
  explicit OpCounter(bool count_names = false);
  ~OpCounter();
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  /// What was counted since this counter was made.
  OpCounts counts() const;
  /// Calls by name since this counter was made (empty unless made `by_name`).
  std::map<std::string, int64_t> by_name() const;

 private:
  OpCounts start_;
  bool by_name_;
  std::map<std::string, int64_t> names_start_;
};

} // namespace xl::runtime
