// SPDX-License-Identifier: Apache-2.0
// Mesh and sharding pictures (spmd/debug.h).
#include "spmd/debug.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "spmd/errors.h"

namespace spmd {
namespace {

std::string trim_right(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// One grid over the last two axes (or the only one) at a fixed index of the leading axes.
void append_grid(const Mesh& mesh, int64_t first, std::string& out) {
  int n = mesh.ndim();
  const std::vector<std::string>& names = mesh.axis_names();
  int64_t rows = n >= 2 ? mesh.axis_sizes()[n - 2] : 1;
  int64_t cols = mesh.axis_sizes()[n - 1];
  size_t width = 0;
  for (int64_t c = 0; c < cols; ++c)
    width = std::max(width, fmt::format("{}={}", names[n - 1], c).size());
  for (int64_t i = 0; i < rows * cols; ++i) {
    width = std::max(width, mesh.devices()[first + i].str().size());
  }
  std::string row_label_proto = n >= 2 ? fmt::format("{}={}", names[n - 2], rows - 1) : "";
  size_t label = row_label_proto.size();
  std::string header = std::string(label + 5, ' ');
  for (int64_t c = 0; c < cols; ++c)
    header += pad(fmt::format("{}={}", names[n - 1], c), width + 3);
  out += trim_right(header) + "\n";
  for (int64_t r = 0; r < rows; ++r) {
    out += "  " + pad(n >= 2 ? fmt::format("{}={}", names[n - 2], r) : "", label) + " |";
    for (int64_t c = 0; c < cols; ++c) {
      // Appends, not `" " + ...`: GCC 12 at -O3 warns (-Wrestrict) on that string concatenation.
      out.append(" ").append(pad(mesh.devices()[first + r * cols + c].str(), width)).append(" |");
    }
    out += "\n";
  }
}

}  // namespace

std::string describe_mesh(const Mesh& mesh) {
  if (mesh.empty()) return "Mesh() (empty)\n";
  std::string out = fmt::format("{}, {} devices\n", mesh.str(), mesh.size());
  int n = mesh.ndim();
  if (n == 0) return out + "  " + mesh.devices()[0].str() + "\n";  // no axes: one device
  int lead = std::max(0, n - 2);
  int64_t grid = mesh.size();
  int64_t count = 1;
  for (int a = 0; a < lead; ++a) count *= mesh.axis_sizes()[a];
  grid /= count;
  for (int64_t g = 0; g < count; ++g) {
    if (lead > 0) {
      std::vector<int64_t> c = mesh.coords(g * grid);
      std::string where;
      for (int a = 0; a < lead; ++a)
        where += fmt::format("{}{}={}", a ? ", " : "", mesh.axis_names()[a], c[a]);
      out += where + ":\n";
    }
    append_grid(mesh, g * grid, out);
  }
  return out;
}

std::string visualize_array_sharding(const Array& x) {
  if (x.ndim() != 1 && x.ndim() != 2) {
    throw ValueError(
        fmt::format("visualize_array_sharding only supports arrays of rank 1 or 2, got {}",
                    type_string(x.dtype(), x.shape())));
  }
  std::vector<Shard> shards = x.addressable_shards();
  // Distinct row and column ranges, and the devices holding each (row, column) block.
  std::set<std::pair<int64_t, int64_t>> row_set, col_set;
  std::map<std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>>, std::string> cells;
  for (const Shard& s : shards) {
    std::pair<int64_t, int64_t> rows =
        x.ndim() == 2 ? s.index[0] : std::make_pair<int64_t, int64_t>(0, 1);
    std::pair<int64_t, int64_t> cols = s.index[x.ndim() - 1];
    row_set.insert(rows);
    col_set.insert(cols);
    std::string& cell = cells[{rows, cols}];
    cell.append(cell.empty() ? "" : ",").append(s.device.str());  // (GCC 12 -O3 -Wrestrict)
  }
  size_t width = 9;
  for (const auto& [key, text] : cells) width = std::max(width, text.size() + 2);
  std::string rule = "+";
  for (size_t c = 0; c < col_set.size(); ++c) rule += std::string(width, '-') + "+";
  std::string out =
      fmt::format("{}  {}\n{}\n", type_string(x.dtype(), x.shape()), x.sharding().str(), rule);
  for (const auto& rows : row_set) {
    std::string line = "|";
    for (const auto& cols : col_set) {
      std::string text = cells.count({rows, cols}) ? cells[{rows, cols}] : "";
      size_t left = (width - text.size()) / 2;
      line += std::string(left, ' ') + text + std::string(width - left - text.size(), ' ') + "|";
    }
    out += line;
    if (x.ndim() == 2) out += fmt::format(" rows {}:{}", rows.first, rows.second);
    out += "\n" + rule + "\n";
  }
  // Column ranges centred under their boxes.
  std::string axis = " ";
  for (const auto& cols : col_set) {
    std::string text = fmt::format("{}:{}", cols.first, cols.second);
    size_t left = (width - std::min(width, text.size())) / 2;
    axis += pad(std::string(left, ' ') + text, width + 1);
  }
  out += trim_right(axis) + (x.ndim() == 2 ? "  cols" : "") + "\n";
  return out;
}

}  // namespace spmd
