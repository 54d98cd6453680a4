#include "xl/lab/plot.h"

#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "xl/util/error.h"

namespace xl::lab {
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
  const int digits = step >= 1.0 ? 0 : static_cast<int>(std::ceil(-std::log10(step)));
  return fmt::format("{:.{}f}", value, digits);
}

// The plot area (the legend is to its right) and the data ranges it maps.
struct Frame {
  double left = 70;
  double top = 40;
  double right = 0;
  double bottom = 0;
  double x_max = 0.0;
  double y_min = std::numeric_limits<double>::infinity();
  double y_max = -std::numeric_limits<double>::infinity();

  double x_of(double step) const {
    return left + (right - left) * step / x_max;
  }
  double y_of(double loss) const {
    return bottom - (bottom - top) * (loss - y_min) / (y_max - y_min);
  }
};

// The evaluation of run `i` in `column` as a point (xl-eval's result at its checkpoint's step),
// if it has one.
std::vector<CurvePoint> evaluation_point(
    const std::vector<RunSummary>& runs,
    size_t i,
    const EvalColumn& column) {
  const RunSummary& r = runs[i];
  const auto it = r.evaluations.find(column.keys[i]);
  if (it == r.evaluations.end()) {
    return {};
  }
  return {{it->second.step, it->second.loss}};
}

// The steps and losses of every finite point, padded by 5% of the loss range.
Frame frame_for(
    const std::vector<RunSummary>& runs,
    const std::vector<EvalColumn>& evaluations,
    const PlotOptions& options) {
  Frame f;
  f.right = options.width - 330.0;
  f.bottom = options.height - 60.0;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::vector<CurvePoint>> curves{runs[i].train, runs[i].valid};
    for (const auto& column : evaluations) {
      curves.push_back(evaluation_point(runs, i, column));
    }
    for (const auto& curve : curves) {
      for (const auto& p : curve) {
        if (std::isfinite(p.loss)) {
          f.x_max = std::max(f.x_max, static_cast<double>(p.step));
          f.y_min = std::min(f.y_min, p.loss);
          f.y_max = std::max(f.y_max, p.loss);
        }
      }
    }
  }
  if (!std::isfinite(f.y_min)) {
    throw UserError("no run has a logged loss to plot");
  }
  if (f.y_max - f.y_min < 1e-9) {
    f.y_min -= 0.5;
    f.y_max += 0.5;
  }
  const double pad = 0.05 * (f.y_max - f.y_min);
  f.y_min -= pad;
  f.y_max += pad;
  f.x_max = std::max(f.x_max, 1.0);
  return f;
}

// Grid, ticks, labels and the frame.
void draw_axes(cairo_t* cr, const Frame& f, const PlotOptions& options) {
  cairo_set_line_width(cr, 1);
  const double x_step = tick_step(0, f.x_max, 8);
  const double y_step = tick_step(f.y_min, f.y_max, 8);
  for (double x = 0; x <= f.x_max + 1e-9; x += x_step) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, f.x_of(x), f.top);
    cairo_line_to(cr, f.x_of(x), f.bottom);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    const auto label = tick_label(x, x_step);
    cairo_move_to(cr, f.x_of(x) - 4.0 * label.size(), f.bottom + 18);
    cairo_show_text(cr, label.c_str());
  }
  for (double y = std::ceil(f.y_min / y_step) * y_step; y <= f.y_max; y += y_step) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, f.left, f.y_of(y));
    cairo_line_to(cr, f.right, f.y_of(y));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    const auto label = tick_label(y, y_step);
    cairo_move_to(cr, f.left - 8.0 - 7.5 * label.size(), f.y_of(y) + 4);
    cairo_show_text(cr, label.c_str());
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, f.left, f.top, f.right - f.left, f.bottom - f.top);
  cairo_stroke(cr);
  cairo_move_to(cr, (f.left + f.right) / 2 - 15, options.height - 20.0);
  cairo_show_text(cr, "step");
  cairo_move_to(cr, f.left, f.top - 15);
  cairo_show_text(cr, "loss (thin: train, thick with points: valid, markers: xl-eval)");
}

// One run's curve: a line through its finite points (a gap at each non-finite one), with
// points on the validation curve.
void draw_curve(cairo_t* cr, const Frame& f, const std::vector<CurvePoint>& curve, bool valid) {
  cairo_set_line_width(cr, valid ? 3.0 : 1.2);
  bool drawing = false;
  for (const auto& p : curve) {
    if (!std::isfinite(p.loss)) {
      drawing = false;
      continue;
    }
    const double x = f.x_of(static_cast<double>(p.step));
    const double y = f.y_of(p.loss);
    drawing ? cairo_line_to(cr, x, y) : cairo_move_to(cr, x, y);
    drawing = true;
  }
  cairo_stroke(cr);
  if (!valid) {
    return;
  }
  for (const auto& p : curve) {
    if (std::isfinite(p.loss)) {
      cairo_arc(cr, f.x_of(static_cast<double>(p.step)), f.y_of(p.loss), 4, 0, 2 * M_PI);
      cairo_fill(cr);
    }
  }
}

// The marker of the i-th evaluation column at (x, y): a square, a triangle, a diamond, a cross
// or a ring, over again.
void draw_marker(cairo_t* cr, size_t i, double x, double y) {
  constexpr double r = 6.0;
  cairo_set_line_width(cr, 2.0);
  switch (i % 5) {
    case 0:
      cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r);
      cairo_fill(cr);
      break;
    case 1:
      cairo_move_to(cr, x, y - r);
      cairo_line_to(cr, x + r, y + r);
      cairo_line_to(cr, x - r, y + r);
      cairo_close_path(cr);
      cairo_fill(cr);
      break;
    case 2:
      cairo_move_to(cr, x, y - r);
      cairo_line_to(cr, x + r, y);
      cairo_line_to(cr, x, y + r);
      cairo_line_to(cr, x - r, y);
      cairo_close_path(cr);
      cairo_fill(cr);
      break;
    case 3:
      cairo_move_to(cr, x - r, y - r);
      cairo_line_to(cr, x + r, y + r);
      cairo_move_to(cr, x + r, y - r);
      cairo_line_to(cr, x - r, y + r);
      cairo_stroke(cr);
      break;
    default:
      cairo_arc(cr, x, y, r, 0, 2 * M_PI);
      cairo_stroke(cr);
  }
}

// Each run's colour and folder name right of the plot area, then each evaluation's marker.
void draw_legend(
    cairo_t* cr,
    const Frame& f,
    const std::vector<RunSummary>& runs,
    const std::vector<EvalColumn>& evaluations) {
  for (size_t i = 0; i < evaluations.size(); ++i) {
    const double y = f.top + 10 + 22.0 * static_cast<double>(runs.size() + 1 + i);
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
    draw_marker(cr, i, f.right + 32, y - 4);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, f.right + 52, y);
    cairo_show_text(cr, evaluations[i].name.c_str());
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const double y = f.top + 10 + 22.0 * static_cast<double>(i);
    set_colour(cr, i);
    cairo_rectangle(cr, f.right + 20, y - 9, 24, 10);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, f.right + 52, y);
    auto name = runs[i].dir;
    if (name.filename().empty()) { // "runs/a/"
      name = name.parent_path();
    }
    cairo_show_text(cr, name.filename().string().c_str());
  }
}

std::string encode_png(cairo_surface_t* surface) {
  std::string png;
  const auto append = [](void* closure, const unsigned char* data, unsigned int size) {
    static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), size);
    return CAIRO_STATUS_SUCCESS;
  };
  if (cairo_surface_write_to_png_stream(surface, append, &png) != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error("cairo could not encode the plot as PNG");
  }
  return png;
}

} // namespace

std::array<uint8_t, 3> run_colour(size_t i) {
  return kPalette[i % kPalette.size()];
}

std::string plot_curves(const std::vector<RunSummary>& runs, const PlotOptions& options) {
  const auto evaluations = evaluation_columns(runs, "loss");
  const Frame frame = frame_for(runs, evaluations, options);
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, options.width, options.height),
      cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> context(
      cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 13);
  draw_axes(cr, frame, options);
  // The curves, clipped to the plot area, then the legend.
  cairo_save(cr);
  cairo_rectangle(cr, frame.left, frame.top, frame.right - frame.left, frame.bottom - frame.top);
  cairo_clip(cr);
  for (size_t i = 0; i < runs.size(); ++i) {
    set_colour(cr, i);
    draw_curve(cr, frame, runs[i].train, false);
    draw_curve(cr, frame, runs[i].valid, true);
  }
  cairo_restore(cr);
  // Evaluations, unclipped: most sit at the last step, on the frame.
  for (size_t i = 0; i < runs.size(); ++i) {
    set_colour(cr, i);
    for (size_t e = 0; e < evaluations.size(); ++e) {
      for (const auto& p : evaluation_point(runs, i, evaluations[e])) {
        draw_marker(cr, e, frame.x_of(static_cast<double>(p.step)), frame.y_of(p.loss));
      }
    }
  }
  draw_legend(cr, frame, runs, evaluations);
  return encode_png(surface.get());
}

} // namespace xl::lab
