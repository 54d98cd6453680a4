// What a model family tells the memory estimate (models/memory_estimate.h) of its models: the
// layers' sizes and the shapes of a batch's attention and output. Part of the kit families
// build from; the estimate itself is the front door's.
#pragma once

#include <optional>

#include "xl/nn/decoder_layer_options.h"

namespace xl::models {

/// The sizes of one layer, as doubles so that absurd configs cannot overflow.
struct LayerShape {
  double d = 0;  // d_model
  double hd = 0; // n_head * d_head
  double h = 0;  // n_head
  double f = 0;  // d_inner
  bool dropatt = false;
  bool dropout = false;

  explicit LayerShape(const nn::DecoderLayerOptions& layer);
  /// Attention without biases (q, k, v, o, and `extra_projections` more d x hd projections),
  /// two LayerNorms, the feed-forward with biases.
  double parameters(double extra_projections = 0) const;
  /// The largest weight: the fused q/k/v projection or a feed-forward matrix.
  double largest() const;
};

/// What the estimate needs of a model family (its descriptor's memory_shape): its layers and
/// parameters, and the shape of a batch's attention and output.
struct MemoryShape {
  double n_layer = 0;
  LayerShape layer;
  double parameters = 0;
  /// values of the largest parameter tensor
  double largest = 0;
  /// attention streams per layer
  double streams = 1;
  /// training memory (and extended context)
  double mem_len = 0;
  /// outputs per scored row
  double classes = 0;
  /// scored rows per sequence in training, all heads together
  double training_rows = 0;
  /// scored rows per sequence in evaluation (none: as the evaluation mode says)
  std::optional<double> eval_rows;

  MemoryShape(double n_layer_, const nn::DecoderLayerOptions& layer_)
      : n_layer(n_layer_), layer(layer_) {}
};

} // namespace xl::models
