#include "xl/run/plot.h"

#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "xl/util/error.h"

namespace xl::run {
namespace {

// Tableau's ten colours: distinct, and readable on white.
constexpr std::array<std::array<uint8_t, 3>, 10> kPalette{{
    {31, 119, 180},
    {255, 127, 14},
    {44, 160, 44},
    {214, 39, 40},
    {148, 103, 189},
    {140, 86, 75},
    {227, 119, 194},
    {127, 127, 127},
    {188, 189, 34},
    {23, 190, 207},
}};

void set_colour(cairo_t* cr, size_t run) {
  const auto c = run_colour(run);
  cairo_set_source_rgb(cr, c[0] / 255.0, c[1] / 255.0, c[2] / 255.0);
}

// Round tick steps (1, 2 or 5 times a power of ten) giving about `count` ticks over [lo, hi].
double tick_step(double lo, double hi, int count) {
  const double raw = (hi - lo) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) {
      return m * power;
    }
  }
  return 10.0 * power;
}

std::string tick_label(double value, double step) {
  const int digits =
      step >= 1.0 ? 0 : static_cast<int>(std::ceil(-std::log10(step)));
  return fmt::format("{:.{}f}", value, digits);
}

} // namespace

std::array<uint8_t, 3> run_colour(size_t i) {
  return kPalette[i % kPalette.size()];
}

std::string plot_curves(
    const std::vector<RunSummary>& runs,
    const PlotOptions& options) {
  double x_max = 0.0;
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = -std::numeric_limits<double>::infinity();
  for (const auto& r : runs) {
    for (const auto* curve : {&r.train, &r.valid}) {
      for (const auto& p : *curve) {
        if (std::isfinite(p.loss)) {
          x_max = std::max(x_max, static_cast<double>(p.step));
          y_min = std::min(y_min, p.loss);
          y_max = std::max(y_max, p.loss);
        }
      }
    }
  }
  if (!std::isfinite(y_min)) {
    throw UserError("no run has a logged loss to plot");
  }
  if (y_max - y_min < 1e-9) {
    y_min -= 0.5;
    y_max += 0.5;
  }
  const double pad = 0.05 * (y_max - y_min);
  y_min -= pad;
  y_max += pad;
  x_max = std::max(x_max, 1.0);

  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(
          CAIRO_FORMAT_RGB24, options.width, options.height),
      cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> context(
      cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(
      cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 13);

  // The plot area, and the legend to its right.
  const double left = 70;
  const double top = 40;
  const double right = options.width - 330.0;
  const double bottom = options.height - 60.0;
  const auto x_of = [&](double step) {
    return left + (right - left) * step / x_max;
  };
  const auto y_of = [&](double loss) {
    return bottom - (bottom - top) * (loss - y_min) / (y_max - y_min);
  };

  // Grid, ticks and labels.
  cairo_set_line_width(cr, 1);
  const double x_step = tick_step(0, x_max, 8);
  const double y_step = tick_step(y_min, y_max, 8);
  for (double x = 0; x <= x_max + 1e-9; x += x_step) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, x_of(x), top);
    cairo_line_to(cr, x_of(x), bottom);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    const auto label = tick_label(x, x_step);
    cairo_move_to(cr, x_of(x) - 4.0 * label.size(), bottom + 18);
    cairo_show_text(cr, label.c_str());
  }
  for (double y = std::ceil(y_min / y_step) * y_step; y <= y_max; y += y_step) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, left, y_of(y));
    cairo_line_to(cr, right, y_of(y));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    const auto label = tick_label(y, y_step);
    cairo_move_to(cr, left - 8.0 - 7.5 * label.size(), y_of(y) + 4);
    cairo_show_text(cr, label.c_str());
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, left, top, right - left, bottom - top);
  cairo_stroke(cr);
  cairo_move_to(cr, (left + right) / 2 - 15, options.height - 20.0);
  cairo_show_text(cr, "step");
  cairo_move_to(cr, left, top - 15);
  cairo_show_text(cr, "loss (thin: train, thick with points: valid)");

  // The curves, then the legend.
  cairo_save(cr);
  cairo_rectangle(cr, left, top, right - left, bottom - top);
  cairo_clip(cr);
  for (size_t i = 0; i < runs.size(); ++i) {
    set_colour(cr, i);
    for (const auto* curve : {&runs[i].train, &runs[i].valid}) {
      const bool valid = curve == &runs[i].valid;
      cairo_set_line_width(cr, valid ? 3.0 : 1.2);
      bool drawing = false;
      for (const auto& p : *curve) {
        if (!std::isfinite(p.loss)) {
          drawing = false;
          continue;
        }
        const double x = x_of(static_cast<double>(p.step));
        const double y = y_of(p.loss);
        drawing ? cairo_line_to(cr, x, y) : cairo_move_to(cr, x, y);
        drawing = true;
      }
      cairo_stroke(cr);
      if (valid) {
        for (const auto& p : *curve) {
          if (std::isfinite(p.loss)) {
            cairo_arc(
                cr,
                x_of(static_cast<double>(p.step)),
                y_of(p.loss),
                4,
                0,
                2 * M_PI);
            cairo_fill(cr);
          }
        }
      }
    }
  }
  cairo_restore(cr);
  for (size_t i = 0; i < runs.size(); ++i) {
    const double y = top + 10 + 22.0 * static_cast<double>(i);
    set_colour(cr, i);
    cairo_rectangle(cr, right + 20, y - 9, 24, 10);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, right + 52, y);
    auto name = runs[i].dir;
    if (name.filename().empty()) { // "runs/a/"
      name = name.parent_path();
    }
    cairo_show_text(cr, name.filename().string().c_str());
  }

  std::string png;
  const auto append =
      [](void* closure, const unsigned char* data, unsigned int size) {
        static_cast<std::string*>(closure)->append(
            reinterpret_cast<const char*>(data), size);
        return CAIRO_STATUS_SUCCESS;
      };
  if (cairo_surface_write_to_png_stream(surface.get(), append, &png) !=
      CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error("cairo could not encode the plot as PNG");
  }
  return png;
}

} // namespace xl::run
