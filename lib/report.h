// Presentation helpers shared by the tools that write reports: aligned Markdown
// tables (readable both raw in a terminal and rendered) and a plain SVG strip chart.
#pragma once
#include <string>
#include <vector>

namespace kiln {

enum class Align { kLeft, kRight };

// A Markdown table whose columns are padded to equal width. Missing alignments
// default to left; '|' inside a cell is escaped. Rows shorter than the header are
// padded with empty cells.
std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                           const std::vector<Align>& align = {});

// Text for SVG/XML: &, <, >, " and ' as entities.
std::string xml_escape(const std::string& s);

// printf("%.*f") into a std::string; "n/a" for NaN or infinity.
std::string format_fixed(double value, int decimals);

struct ChartSeries {
  std::string name;            // e.g. "baseline"
  std::vector<double> values;  // one dot each, e.g. the wall time of each run
};

// A horizontal strip (dot) plot: one row per series, each value a dot, the median a
// bar with its value written beside it; the value axis is labelled with unit.
// Returns a complete standalone SVG document.
std::string strip_chart_svg(const std::vector<ChartSeries>& series, const std::string& title, const std::string& unit);

}  // namespace kiln
