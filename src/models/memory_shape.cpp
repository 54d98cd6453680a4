#include "xl/models/memory_shape.h"

#include <algorithm>

namespace xl::models {

LayerShape::LayerShape(const nn::DecoderLayerOptions& layer) {
  const auto& a = layer.attention();
  d = static_cast<double>(a.d_model());
  h = static_cast<double>(a.n_head());
  hd = h * static_cast<double>(a.d_head());
  f = static_cast<double>(layer.d_inner());
  dropatt = a.dropatt() > 0;
  dropout = a.dropout() > 0;
}

double LayerShape::parameters(double extra_projections) const {
  return (4 + extra_projections) * d * hd + 4 * d + 2 * d * f + f + d;
}

double LayerShape::largest() const {
  return std::max(3 * d * hd, d * f);
}

} // namespace xl::models
