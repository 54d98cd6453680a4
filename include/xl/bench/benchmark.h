// Speed and memory of a config's model: training steps, memory-mode evaluation
// segments and vanilla (sliding-window) evaluation, on random data of the family's
// shapes (models::random_dataset) so that no prepared data is needed, or on the config's
// prepared data. A mode the config cannot run (XLNet has no vanilla evaluation) is skipped
// with the reason.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "xl/config/schema.h"

namespace xl::bench {

struct BenchOptions {
  int64_t n_token = 0; // 0: the vocabulary size of the config's prepared data
  /// read the config's prepared data (training: its training split; evaluation: its test
  /// split) instead of random tokens: an adaptive softmax's cost depends on which of its bins
  /// the targets fall in, and uniform random tokens fill the rarest bin, real text the head
  bool prepared_data = false;
  int64_t warmup = 3; // untimed iterations first
  int64_t steps = 10; // timed iterations
  std::string modes = "train,eval,vanilla";
  /// refuse a training config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
  /// list this many of the most-called operators of the counted iteration (0: none)
  int64_t top_ops = 0;
  /// profile one more iteration and list this many of the kernels (GPU) or operators (CPU)
  /// that took the longest (0: no profile)
  int64_t profile = 0;
  /// CPU: the model's graphed blocks run emulated (runtime::GraphReplay::kEmulated), and the
  /// counts add the operator calls a CUDA step would leave to its graphs
  bool emulate_graphs = false;
};

/// Runs the benchmarks and returns one record per mode: targets/s (tokens_per_s), input
/// tokens/s, milliseconds per iteration, peak memory (CUDA: allocator peak; CPU: peak resident
/// set of the process), the memory estimate of models/memory_estimate.h, and what one more
/// iteration asked of LibTorch (runtime/op_counter.h): operator calls, autograd nodes, host
/// reads and blocking uploads.
nlohmann::json run_benchmark(const config::Config& config, const BenchOptions& options);

} // namespace xl::bench
