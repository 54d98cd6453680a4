// CUDA graphs for the part of a step whose shapes do not change: a block of operations (a model's
// layer stack once its memory is full) is captured once as a CUDA graph and replayed after, one
// launch in place of the thousands of kernel launches and dispatches that bound a GPU step.
//
// A captured graph reads and writes fixed addresses: each call copies its inputs into the
// block's static buffers, replays, and returns views of the block's static outputs, valid until
// the block runs again. With gradients, the forward and the backward are two graphs sharing one
// memory pool (what torch.cuda.make_graphed_callables does in Python): the forward's outputs get
// one autograd node, whose backward copies the incoming gradients into static buffers and replays
// the backward graph, handing on the gradients of the inputs that need them and of the block's
// parameters. A forward must be followed by its backward before the block's next forward (the
// saved activations are the graph's); a backward of a replaced forward is an error.
//
// Dropout inside a graph draws from the CUDA generator as the same operators eagerly would (the
// generator advances by the whole graph's draws at each replay), and the capture leaves the
// random state where it found it. Weight casts of bf16 autocast are made inside the graph:
// autocast's cache is off while capturing, so that no cast made outside (freed later) is read by
// the graph and no cast made inside is handed to code outside it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

namespace xl::runtime {

enum class GraphReplay {
  /// captured on a CUDA device at the first call and replayed after
  kCuda,
  /// every call runs the block on the static buffers, as a replay reads them: the CPU's stand-in,
  /// through which tests exercise the buffers, the gradients and the order of calls
  kEmulated,
};

/// A block of operations: inputs -> outputs, reading nothing else that changes between calls
/// but its parameters (updated in place), and no value on the host.
using GraphFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

/// The leaves a block reads whose gradients its backward computes (its parameters): asked for
/// at a capture only, not on every call.
using GraphParams = std::function<std::vector<at::Tensor>()>;

/// One block captured for its inputs' shapes (those of its first call).
class GraphedBlock {
 public:
  /// Captures fn for inputs shaped as `inputs` (all defined). With grad mode on and an input or
  /// a parameter requiring grad, the backward is captured too: `params` are the leaves fn reads
  /// whose gradients the backward computes.
  GraphedBlock(
      GraphReplay replay,
      GraphFn fn,
      const std::vector<at::Tensor>& params,
      const std::vector<at::Tensor>& inputs);
  ~GraphedBlock();
  GraphedBlock(const GraphedBlock&) = delete;
  GraphedBlock& operator=(const GraphedBlock&) = delete;

  /// fn(inputs), shaped as at the capture; views of the static outputs, valid until the next call.
  std::vector<at::Tensor> operator()(const std::vector<at::Tensor>& inputs);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// The graphs of one model, by the signature of their inputs (shapes, types, devices, which need
/// gradients, grad mode, autocast, and the caller's key), the least recently used dropped beyond
/// `max_graphs`.
class GraphCache {
 public:
  explicit GraphCache(GraphReplay replay, size_t max_graphs = 3);

  /// fn(inputs) through the graph of their signature, captured at the first call with it. A
  /// capture that fails (an operator a graph cannot hold) logs one warning with the error, and
  /// fn runs eagerly from then on, on the random state the capture found.
  std::vector<at::Tensor> run(
      const std::string& key,
      const GraphFn& fn,
      const GraphParams& params,
      const std::vector<at::Tensor>& inputs);

  GraphReplay replay() const {
    return replay_;
  }
  /// Graphs held.
  size_t size() const {
    return graphs_.size();
  }
  /// Graphs captured so far, dropped ones included.
  int64_t captures() const {
    return captures_;
  }

 private:
  GraphReplay replay_;
  size_t max_graphs_;
  int64_t captures_ = 0;
  bool failed_ = false;
  // Most recently used first.
  std::list<std::pair<std::string, std::unique_ptr<GraphedBlock>>> graphs_;
};

/// What the graph code tells whoever watches it (the operator counter, runtime/op_counter.h),
/// which it knows nothing of otherwise. Null hooks are skipped.
struct GraphHooks {
  /// a graphed block replayed, forward or backward (emulated runs included)
  void (*replayed)() = nullptr;
  /// an emulated run's operators begin, and end, on this thread
  void (*emulation_begins)() = nullptr;
  void (*emulation_ends)() = nullptr;
};

/// Sets the hooks every graphed block calls from now on (a later call replaces them).
void set_graph_hooks(const GraphHooks& hooks);

/// The signature GraphCache files `inputs` under, after `key`.
std::string graph_signature(const std::string& key, const std::vector<at::Tensor>& inputs);

} // namespace xl::runtime
