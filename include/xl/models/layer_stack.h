// The layer stack every family runs its layers through, in every mode: eagerly, with activation
// recomputation (train.activation_checkpointing), with generation's per-layer decoding cache, or
// as a CUDA graph (or its CPU emulation) once the shapes repeat. A family gives its layer call
// and the tensors of one forward; the loop, the graphs and the memory's copies are here.
//
//   auto out = layers->forward(call, {streams, {{"mask", mask}, {"r", r}}, mems, cache,
//                                     full_memory(mems, mem_len)});
//   out.streams: the last layer's outputs; out.hiddens: stream 0 into every layer, then out of
//   the last; out.next_memory(...): the memory for the next batch (and the cache's tails).
// A layer reads its per-call tensors by name (args.tensors["r"]); under a graph, the backward
// reaches every parameter of the model outside the stack that a layer reads.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xl/models/language_model.h"
#include "xl/nn/attention_core.h"
#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/init.h"
#include "xl/nn/memory.h"
#include "xl/runtime/cuda_graph.h"

namespace xl::models {

/// The name of a model's layer stack: train.lr_layer_decay finds layer i by its parameters'
/// names, layers.<i>.*, and takes none without it.
inline constexpr const char* kLayerStack = "layers";

/// The tensors every layer of one forward reads besides its streams (a mask, positions), by
/// name, in the order given. An undefined one is kept: which are defined is part of a graph's
/// key.
class CallTensors {
 public:
  CallTensors() = default;
  CallTensors(std::initializer_list<std::pair<std::string, torch::Tensor>> named);
  CallTensors(std::vector<std::string> names, std::vector<torch::Tensor> tensors);

  /// The tensor given as `name` (undefined where it was given so); a name not given is a logic
  /// error naming it.
  const torch::Tensor& operator[](std::string_view name) const;
  const std::vector<std::string>& names() const {
    return names_;
  }
  const std::vector<torch::Tensor>& tensors() const {
    return tensors_;
  }

 private:
  std::vector<std::string> names_;
  std::vector<torch::Tensor> tensors_;
};

/// What one layer reads besides its streams in a call.
struct LayerArgs {
  /// the layer's place in the stack, from 0
  int64_t index = 0;
  /// the tensors every layer of this forward reads (StackInput::tensors)
  const CallTensors& tensors;
  /// the layer's memory (undefined: none)
  torch::Tensor mem;
  /// the layer's slot of the ProjectionCache (null: none, and always in a graph)
  nn::AttentionCache* cache = nullptr;
};

/// A family's layer `args.index`: its streams (h, or h and g) in, the same streams out. In a
/// graph the call is captured at the first forward of its shapes and replayed after, so it reads
/// its streams, `args` and the weights alone.
using LayerCall = std::function<
    std::vector<torch::Tensor>(const std::vector<torch::Tensor>& streams, const LayerArgs& args)>;

/// One forward of the stack.
struct StackInput {
  /// the streams into the first layer: {h}, or {h, g} (XLNet's two streams), each defined
  std::vector<torch::Tensor> streams;
  /// per-call tensors every layer reads, by name (a mask, positions)
  CallTensors tensors;
  /// each layer's memory, or none
  nn::Memory mems;
  /// generation's or the evaluation's projections (null: none); a forward with one runs eagerly
  ProjectionCache* cache = nullptr;
  /// the calls to come have these shapes (full_memory, or a window read whole): a graph may
  /// serve them
  bool steady = false;
};

/// Whether a forward over `mems` has the shapes of the calls to come: the memory is full at
/// `mem_len`, or none is kept (mem_len 0, no memory).
bool full_memory(const nn::Memory& mems, int64_t mem_len);

/// What the stack computed.
struct StackOutput {
  /// the last layer's streams
  std::vector<torch::Tensor> streams;
  /// stream 0 into each layer, then out of the last: n_layer + 1 tensors
  std::vector<torch::Tensor> hiddens;
  /// ran as a graph: the outputs are its static buffers, overwritten by its next replay
  bool graphed = false;
  /// the forward's projection cache (StackInput::cache)
  ProjectionCache* cache = nullptr;

  /// nn::update_memory over the layers' inputs (copies of them after a replay, which the next
  /// replay would overwrite); the cache's rows then end where the next memory does, `ext_len`
  /// rows before the last (AttentionCache::tail).
  nn::Memory next_memory(const nn::Memory& mems, int64_t mem_len, int64_t ext_len) const;
};

/// What the options of every family hold of its layers: how many, each one's attention and
/// feed-forward, how the model's weights are drawn, and whether the backward recomputes them.
struct StackShape {
  StackShape(int64_t n_layer, const nn::DecoderLayerOptions& layer)
      : n_layer_(n_layer), layer_(layer) {}
  TORCH_ARG(int64_t, n_layer);
  /// every layer: attention (d_model, heads, dropouts, pre- or post-norm, eps), feed-forward
  TORCH_ARG(nn::DecoderLayerOptions, layer);
  TORCH_ARG(nn::InitOptions, init) = {};
  /// recompute each layer's activations in the backward pass instead of keeping them
  /// (train.activation_checkpointing)
  TORCH_ARG(bool, checkpoint_layers) = false;
};

/// Makes layer i.
using MakeLayer = std::function<std::shared_ptr<torch::nn::Module>(int64_t)>;

struct LayerStackOptions {
  LayerStackOptions(int64_t n_layer, MakeLayer make) : n_layer_(n_layer), make_(std::move(make)) {}
  /// `shape`'s layers (at least one, of at least one head), recomputed as it says
  LayerStackOptions(const StackShape& shape, MakeLayer make);
  TORCH_ARG(int64_t, n_layer);
  TORCH_ARG(MakeLayer, make);
  /// activation recomputation of every layer (train.activation_checkpointing)
  TORCH_ARG(bool, recompute) = false;
  /// why the family's forward cannot be graphed whatever its shapes ("": it can)
  TORCH_ARG(std::string, no_graphs);
};

/// `shape`'s layers, each a `Layer` (a module holder) made from shape.layer().
template <class Layer>
LayerStackOptions layers_alike(const StackShape& shape) {
  return LayerStackOptions(shape, [layer = shape.layer()](int64_t) { return Layer(layer).ptr(); });
}

/// The layers as children "0", "1", ...: their parameters are layers.<i>.*, as in a ModuleList.
class LayerStackImpl : public torch::nn::Module {
 public:
  explicit LayerStackImpl(LayerStackOptions options);
  /// Registers the layers.
  void reset();
  /// reset_parameters(init) of every layer (each a layer module that has one: `Layer`).
  template <class... Layer>
  void reset_parameters(const nn::InitOptions& init) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      const bool reset = (reset_if<Layer>(*layers_[i], init) || ...);
      TORCH_CHECK(reset, "layer ", i, " is of none of the types reset_parameters was given");
    }
  }

  /// Runs every layer over `in` with `call`: as a graph when graphs are on, `in` is steady and
  /// has no cache; else layer by layer, recomputed when the options say so.
  StackOutput forward(const LayerCall& call, const StackInput& in);

  /// Runs the stack's steady forwards as graphs replayed through `replay` from now on, or
  /// eagerly again (nullopt); a graph's backward reaches `outside` too, the parameters of the
  /// model beyond the stack's that a layer call may read (shared biases, position tables).
  /// Returns "" when it does, else why it cannot.
  std::string use_graphs(
      std::optional<runtime::GraphReplay> replay,
      std::vector<torch::Tensor> outside = {});
  bool uses_graphs() const {
    return graph_cache_ != nullptr;
  }

  /// The layers, as a ModuleList gives them.
  size_t size() const {
    return layers_.size();
  }
  const std::shared_ptr<torch::nn::Module>& operator[](size_t i) const {
    return layers_.at(i);
  }
  template <class Layer>
  std::shared_ptr<Layer> ptr(size_t i) const {
    return std::dynamic_pointer_cast<Layer>(layers_.at(i));
  }
  auto begin() const {
    return layers_.begin();
  }
  auto end() const {
    return layers_.end();
  }

  LayerStackOptions options;

 private:
  template <class Layer>
  static bool reset_if(torch::nn::Module& layer, const nn::InitOptions& init) {
    auto* typed = layer.as<Layer>();
    if (typed != nullptr) {
      typed->reset_parameters(init);
    }
    return typed != nullptr;
  }
  StackOutput eager(const LayerCall& call, const StackInput& in);
  StackOutput graphed(const LayerCall& call, const StackInput& in);

  std::vector<std::shared_ptr<torch::nn::Module>> layers_;
  std::vector<torch::Tensor> outside_;
  std::unique_ptr<runtime::GraphCache> graph_cache_;
};
TORCH_MODULE(LayerStack);

/// Registers `model`'s layer stack under kLayerStack.
LayerStack register_layer_stack(torch::nn::Module& model, const LayerStackOptions& options);

/// use_graphs() on every layer stack of `model`, each reaching the model's parameters outside
/// it: "" when they all run as graphs, else the first reason one cannot (a model without a
/// stack: it has none).
std::string use_graphs(torch::nn::Module& model, std::optional<runtime::GraphReplay> replay);

/// Whether a layer stack of `model` runs as graphs: an evaluation then keeps no projections
/// between calls.
bool uses_graphs(const torch::nn::Module& model);

} // namespace xl::models
