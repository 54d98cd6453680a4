#include "xl/models/layer_stack.h"

#include <algorithm>
#include <set>
#include <utility>

#include "xl/nn/recompute.h"

namespace xl::models {

CallTensors::CallTensors(std::initializer_list<std::pair<std::string, torch::Tensor>> named) {
  for (const auto& [name, tensor] : named) {
    names_.push_back(name);
    tensors_.push_back(tensor);
  }
}

CallTensors::CallTensors(std::vector<std::string> names, std::vector<torch::Tensor> tensors)
    : names_(std::move(names)), tensors_(std::move(tensors)) {
  TORCH_CHECK(
      names_.size() == tensors_.size(), names_.size(), " names for ", tensors_.size(), " tensors");
}

const torch::Tensor& CallTensors::operator[](std::string_view name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  TORCH_CHECK(it != names_.end(), "no per-call tensor named ", name, " was given");
  return tensors_[static_cast<size_t>(it - names_.begin())];
}

bool full_memory(const nn::Memory& mems, int64_t mem_len) {
  return mems.empty() ? mem_len == 0 : mems.front().size(0) == mem_len;
}

nn::Memory StackOutput::next_memory(const nn::Memory& mems, int64_t mem_len, int64_t ext_len)
    const {
  const std::vector<torch::Tensor> inputs(hiddens.begin(), hiddens.end() - 1);
  auto next = nn::update_memory(mems, inputs, mem_len, ext_len);
  if (graphed) { // the graph's next replay (another chunk's, first) overwrites its outputs
    for (auto& m : next) {
      m = m.clone();
    }
  }
  if (cache != nullptr) {
    for (auto& layer : cache->layers) {
      layer.tail = ext_len;
    }
  }
  return next;
}

LayerStackOptions::LayerStackOptions(const StackShape& shape, MakeLayer make)
    : n_layer_(shape.n_layer()), make_(std::move(make)), recompute_(shape.checkpoint_layers()) {
  const auto& attention = shape.layer().attention();
  TORCH_CHECK(
      shape.n_layer() >= 1 && attention.n_head() >= 1 && attention.d_head() >= 1,
      "a layer stack needs at least one layer and head, got ",
      shape.n_layer(),
      " layers of ",
      attention.n_head(),
      " heads of ",
      attention.d_head());
}

LayerStackImpl::LayerStackImpl(LayerStackOptions options_) : options(std::move(options_)) {
  reset();
}

void LayerStackImpl::reset() {
  TORCH_CHECK(options.n_layer() >= 1, "a layer stack needs a layer, got ", options.n_layer());
  layers_.clear();
  for (int64_t i = 0; i < options.n_layer(); ++i) {
    layers_.push_back(register_module(std::to_string(i), options.make()(i)));
  }
}

std::string LayerStackImpl::use_graphs(
    std::optional<runtime::GraphReplay> replay,
    std::vector<torch::Tensor> outside) {
  graph_cache_.reset();
  outside_ = std::move(outside);
  if (!replay) {
    return "";
  }
  if (!options.no_graphs().empty()) {
    return options.no_graphs();
  }
  if (options.recompute()) {
    return "activation checkpointing recomputes each layer with the random state it sets on the "
           "host, which a graph cannot replay";
  }
  graph_cache_ = std::make_unique<runtime::GraphCache>(*replay);
  return "";
}

StackOutput LayerStackImpl::forward(const LayerCall& call, const StackInput& in) {
  TORCH_CHECK(
      in.mems.empty() || in.mems.size() == layers_.size(),
      "expected ",
      layers_.size(),
      " memory tensors, got ",
      in.mems.size());
  TORCH_CHECK(!in.streams.empty(), "a layer stack needs a stream, got none");
  return graph_cache_ && in.steady && in.cache == nullptr ? graphed(call, in) : eager(call, in);
}

StackOutput LayerStackImpl::eager(const LayerCall& call, const StackInput& in) {
  if (in.cache != nullptr) {
    in.cache->layers.resize(layers_.size());
  }
  // Recomputation runs a layer again in the backward pass, after forward has returned: the
  // call's tensors are held by value.
  const auto shared = std::make_shared<const CallTensors>(in.tensors);
  StackOutput out;
  out.cache = in.cache;
  out.streams = in.streams;
  out.hiddens.reserve(layers_.size() + 1);
  for (size_t i = 0; i < layers_.size(); ++i) {
    out.hiddens.push_back(out.streams[0]);
    const auto mem = in.mems.empty() ? torch::Tensor() : in.mems[i];
    auto* cache = in.cache != nullptr ? &in.cache->layers[i] : nullptr;
    const auto layer = [call, shared, i, mem, cache](const std::vector<torch::Tensor>& streams) {
      return call(streams, {static_cast<int64_t>(i), *shared, mem, cache});
    };
    out.streams = options.recompute() ? nn::recompute(layer, out.streams) : layer(out.streams);
  }
  out.hiddens.push_back(out.streams[0]);
  return out;
}

StackOutput LayerStackImpl::graphed(const LayerCall& call, const StackInput& in) {
  // The graph's inputs: [streams..., the defined per-call tensors..., mems...] (a graph holds
  // defined tensors only); which of them are defined is part of its key.
  std::vector<torch::Tensor> x = in.streams;
  std::vector<bool> present;
  std::string key = is_training() ? "train:" : "eval:";
  for (const auto& t : in.tensors.tensors()) {
    present.push_back(t.defined());
    key += t.defined() ? '1' : '0';
    if (t.defined()) {
      x.push_back(t);
    }
  }
  x.insert(x.end(), in.mems.begin(), in.mems.end());
  const size_t n_streams = in.streams.size();
  const size_t n_layer = layers_.size();
  // Outputs: stream 0 out of every layer, then the last layer's other streams.
  const auto stack =
      [call, present, names = in.tensors.names(), n_streams, n_layer, has_mem = !in.mems.empty()](
          const std::vector<torch::Tensor>& inputs) {
        std::vector<torch::Tensor> streams(inputs.begin(), inputs.begin() + n_streams);
        std::vector<torch::Tensor> given;
        size_t k = n_streams;
        for (const bool p : present) {
          given.push_back(p ? inputs[k++] : torch::Tensor());
        }
        const CallTensors tensors(names, std::move(given));
        std::vector<torch::Tensor> outs;
        for (size_t i = 0; i < n_layer; ++i) {
          const auto mem = has_mem ? inputs[k + i] : torch::Tensor();
          streams = call(streams, {static_cast<int64_t>(i), tensors, mem, nullptr});
          outs.push_back(streams[0]);
        }
        outs.insert(outs.end(), streams.begin() + 1, streams.end());
        return outs;
      };
  const auto params = [this] {
    auto p = parameters();
    p.insert(p.end(), outside_.begin(), outside_.end());
    return p;
  };
  const auto outs = graph_cache_->run(key, stack, params, x);
  StackOutput out;
  out.graphed = true;
  out.hiddens.push_back(in.streams[0]);
  out.hiddens.insert(out.hiddens.end(), outs.begin(), outs.begin() + n_layer);
  out.streams.push_back(outs[n_layer - 1]);
  out.streams.insert(out.streams.end(), outs.begin() + n_layer, outs.end());
  return out;
}

LayerStack register_layer_stack(torch::nn::Module& model, const LayerStackOptions& options) {
  return model.register_module(kLayerStack, LayerStack(options));
}

std::string use_graphs(torch::nn::Module& model, std::optional<runtime::GraphReplay> replay) {
  std::string why_not = replay ? "its forward has no layer stack" : "";
  bool found = false;
  for (const auto& module : model.modules()) {
    if (auto* stack = module->as<LayerStackImpl>()) {
      // The model's parameters that are not the stack's own, each once (tied ones are listed
      // under every name): a layer call may read any.
      std::set<const void*> seen;
      for (const auto& p : stack->parameters()) {
        seen.insert(p.unsafeGetTensorImpl());
      }
      std::vector<torch::Tensor> outside;
      for (const auto& p : model.parameters()) {
        if (seen.insert(p.unsafeGetTensorImpl()).second) {
          outside.push_back(p);
        }
      }
      const auto said = stack->use_graphs(replay, std::move(outside));
      if (!found || (why_not.empty() && !said.empty())) {
        why_not = said;
      }
      found = true;
    }
  }
  return why_not;
}

bool uses_graphs(const torch::nn::Module& model) {
  for (const auto& module : model.modules()) {
    if (const auto* stack = module->as<LayerStackImpl>();
        stack != nullptr && stack->uses_graphs()) {
      return true;
    }
  }
  return false;
}

} // namespace xl::models
