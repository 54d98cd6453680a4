// Learning curves as a PNG: every run's training loss (thin) and validation loss (thick, with
// points) against the step, on one figure, drawn with cairo.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "xl/run/compare.h"

namespace xl::run {

struct PlotOptions {
  int width = 1200;
  int height = 700;
};

/// Writes the curves of `runs` to `path` (PNG), with a legend of the run directories' names.
/// No logged loss in any run is a UserError, as is a file that cannot be written.
void plot_curves(
    const std::vector<RunSummary>& runs,
    const std::filesystem::path& path,
    const PlotOptions& options = {});

/// The colour of the i-th run, as 8-bit RGB (tests look for it in the image).
std::array<uint8_t, 3> run_colour(size_t i);

} // namespace xl::run
