#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "stats.h"

namespace kiln {

namespace {

// Display width in a terminal: count UTF-8 code points, not bytes ("–", "×").
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string escape_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out.push_back(c);
  }
  return out;
}

std::string pad(const std::string& s, size_t width, Align align) {
  size_t w = display_width(s);
  std::string fill(w < width ? width - w : 0, ' ');
  return align == Align::kRight ? fill + s : s + fill;
}


std::string svg_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Axis ticks at 1, 2 or 5 times a power of ten, about `wanted` of them over [lo, hi].
struct Ticks {
  double first = 0, step = 1;
  int count = 0;
  int decimals = 0;
};

Ticks nice_ticks(double lo, double hi, int wanted) {
  double raw = (hi - lo) / std::max(1, wanted);
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  Ticks t;
  t.step = step;
  t.first = std::floor(lo / step) * step;
  t.count = static_cast<int>(std::ceil((hi - t.first) / step - 1e-9)) + 1;
  t.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  return t;
}

const char* series_color(size_t i) {
  // Paul Tol's "bright" palette: distinguishable with common colour blindness.
  static const char* palette[] = {"#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377"};
  return palette[i % (sizeof palette / sizeof palette[0])];
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string format_fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                           const std::vector<Align>& align) {
  size_t columns = header.size();
  auto align_of = [&](size_t c) { return c < align.size() ? align[c] : Align::kLeft; };
  auto cell = [&](const std::vector<std::string>& row, size_t c) {
    return c < row.size() ? escape_cell(row[c]) : std::string();
  };
  std::vector<size_t> width(columns, 3);  // "---" is the shortest separator
  for (size_t c = 0; c < columns; ++c) {
    width[c] = std::max(width[c], display_width(escape_cell(header[c])));
    for (const auto& row : rows) width[c] = std::max(width[c], display_width(cell(row, c)));
  }

  auto line = [&](const std::vector<std::string>& row) {
    std::string out = "|";
    for (size_t c = 0; c < columns; ++c) out += " " + pad(cell(row, c), width[c], align_of(c)) + " |";
    return out + "\n";
  };
  std::string out = line(header) + "|";
  for (size_t c = 0; c < columns; ++c) {
    bool right = align_of(c) == Align::kRight;
    out += " " + std::string(width[c] - (right ? 1 : 0), '-') + (right ? ":" : "") + " |";
  }
  out += "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string strip_chart_svg(const std::vector<ChartSeries>& series, const std::string& title, const std::string& unit) {
  const double width = 720, left = 130, right = 40, top = 56, row_height = 64, bottom = 60;
  const double height = top + row_height * static_cast<double>(std::max<size_t>(series.size(), 1)) + bottom;
  const double plot_right = width - right;

  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series)
    for (double v : s.values)
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  bool empty = !(lo <= hi);
  if (empty) {
    lo = 0;
    hi = 1;
  }
  // Start at zero unless that would squash every dot into a corner: from zero the
  // distance between the medians reads as their real ratio.
  if (lo >= 0 && lo < 0.5 * hi) lo = 0;
  if (hi - lo < 1e-12) {
    double margin = hi != 0 ? std::fabs(hi) * 0.1 : 1;
    lo = (lo >= 0 && lo < margin) ? 0 : lo - margin;  // no negative axis for zeros
    hi += margin;
  }
  Ticks ticks = nice_ticks(lo, hi, 6);
  double axis_lo = ticks.first, axis_hi = ticks.first + ticks.step * (ticks.count - 1);
  auto x_of = [&](double v) { return left + (v - axis_lo) / (axis_hi - axis_lo) * (plot_right - left); };

  std::string svg;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svg_number(width) + "\" height=\"" +
      svg_number(height) + "\" viewBox=\"0 0 " + svg_number(width) + " " + svg_number(height) +
      "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<title>" + xml_escape(title) + "</title>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + svg_number(width / 2) + "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">" +
      xml_escape(title) + "</text>\n";

  double plot_bottom = height - bottom;
  for (int i = 0; i < ticks.count; ++i) {
    double v = ticks.first + ticks.step * i;
    std::string x = svg_number(x_of(v));
    svg += "<line x1=\"" + x + "\" y1=\"" + svg_number(top) + "\" x2=\"" + x + "\" y2=\"" + svg_number(plot_bottom) +
        "\" stroke=\"#dddddd\"/>\n";
    svg += "<text x=\"" + x + "\" y=\"" + svg_number(plot_bottom + 18) + "\" text-anchor=\"middle\">" +
        format_fixed(v, ticks.decimals) + "</text>\n";
  }
  svg += "<line x1=\"" + svg_number(left) + "\" y1=\"" + svg_number(plot_bottom) + "\" x2=\"" + svg_number(plot_right) +
      "\" y2=\"" + svg_number(plot_bottom) + "\" stroke=\"#333333\"/>\n";
  svg += "<text x=\"" + svg_number((left + plot_right) / 2) + "\" y=\"" + svg_number(height - 14) +
      "\" text-anchor=\"middle\">" + xml_escape(unit) + "</text>\n";
  if (empty)
    svg += "<text x=\"" + svg_number((left + plot_right) / 2) + "\" y=\"" + svg_number(top + row_height / 2) +
        "\" text-anchor=\"middle\" fill=\"#777777\">no data</text>\n";

  for (size_t s = 0; s < series.size(); ++s) {
    double center = top + row_height * (static_cast<double>(s) + 0.5);
    const char* color = series_color(s);
    svg += "<text x=\"" + svg_number(left - 12) + "\" y=\"" + svg_number(center + 4) + "\" text-anchor=\"end\">" +
        xml_escape(series[s].name) + "</text>\n";
    std::vector<double> finite;
    for (size_t i = 0; i < series[s].values.size(); ++i) {
      double v = series[s].values[i];
      if (!std::isfinite(v)) continue;
      finite.push_back(v);
      // A fixed vertical jitter so that equal values stay visible as separate dots.
      double jitter = static_cast<double>(static_cast<int>((i * 7) % 9) - 4) * 3;
      svg += "<circle cx=\"" + svg_number(x_of(v)) + "\" cy=\"" + svg_number(center + jitter) + "\" r=\"4\" fill=\"" +
          color + "\" fill-opacity=\"0.55\" stroke=\"" + color + "\"/>\n";
    }
    if (finite.empty()) continue;
    double m = median(finite);
    std::string x = svg_number(x_of(m));
    svg += "<line x1=\"" + x + "\" y1=\"" + svg_number(center - 18) + "\" x2=\"" + x + "\" y2=\"" +
        svg_number(center + 18) + "\" stroke=\"#222222\" stroke-width=\"3\"/>\n";
    // Keep the label inside the picture when the median sits at an end of the axis.
    std::string label_x = svg_number(std::clamp(x_of(m), left + 80, width - 80));
    svg += "<text x=\"" + label_x + "\" y=\"" + svg_number(center - 23) +
        "\" text-anchor=\"middle\" font-size=\"11\">median " + format_fixed(m, ticks.decimals + 2) + " " +
        xml_escape(unit) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace kiln
