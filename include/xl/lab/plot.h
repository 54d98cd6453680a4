// Learning curves as a PNG: every run's training loss (thin) and validation loss (thick, with
// points) against the step, and xl-eval's results as markers at their checkpoint's step (a
// shape per evaluation setting, named in the legend as xl-compare's columns), on one figure,
// drawn with cairo.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "xl/lab/compare.h"

namespace xl::lab {

struct PlotOptions {
  int width = 1200;
  int height = 700;
};

/// The curves of `runs` as the bytes of a PNG file, with a legend of the run directories'
/// names (written by the caller, through run/outputs.h). No logged loss in any run is a
/// UserError.
std::string plot_curves(const std::vector<RunSummary>& runs, const PlotOptions& options = {});

/// The colour of the i-th run, as 8-bit RGB (tests look for it in the image).
std::array<uint8_t, 3> run_colour(size_t i);

} // namespace xl::lab
