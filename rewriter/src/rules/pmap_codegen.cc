// SPDX-License-Identifier: Apache-2.0
// Writing the shard_map replacement of a pmap construct (pmap_codegen.h).
#include "rules/pmap_codegen.h"

#include <algorithm>
#include <map>

namespace spmd::migrate {
namespace {

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "" : separator) + parts[i];
  return out;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// spmd::P(...) naming `axes` (dimension -> mesh axis name).
std::string spec(const std::map<int, std::string>& axes) {
  if (axes.empty()) return "spmd::P()";
  std::vector<std::string> entries(axes.rbegin()->first + 1, "spmd::None");
  for (const auto& [dim, name] : axes) entries[dim] = quoted(name);
  return "spmd::P(" + join(entries, ", ") + ")";
}

// One spec for all when they agree, else one per value.
std::string specs(const std::vector<std::string>& each) {
  if (each.empty()) return "spmd::P()";
  if (std::all_of(each.begin(), each.end(), [&](const std::string& s) { return s == each[0]; })) {
    return each[0];
  }
  return "{" + join(each, ", ") + "}";
}

// Dimensions of one Array argument in the caller's array: level -> dimension. pmap level L sees
// the argument with the dimensions of levels < L removed, so its in_axes entry counts past them.
std::vector<std::optional<int>> argument_dims(const PmapSite& site, size_t ordinal) {
  std::vector<std::optional<int>> dims;
  std::vector<int> removed;
  for (const PmapSite::Level& level : site.levels) {
    std::optional<int> axis = level.in_axes[ordinal];
    if (axis) {
      int d = *axis;
      for (int r : removed) d += r <= d ? 1 : 0;  // `removed` is sorted
      removed.insert(std::upper_bound(removed.begin(), removed.end(), d), d);
      axis = d;
    }
    dims.push_back(axis);
  }
  return dims;
}

// Where each level's stacked dimension ends up in one output: the innermost level expands first.
std::map<int, std::string> output_dims(const PmapSite& site, size_t output) {
  std::map<int, std::string> dims;
  for (size_t l = site.levels.size(); l-- > 0;) {
    std::optional<int> axis = site.levels[l].out_axes[output];
    if (!axis) continue;
    std::map<int, std::string> shifted;
    for (const auto& [dim, name] : dims) shifted[dim >= *axis ? dim + 1 : dim] = name;
    shifted[*axis] = site.levels[l].axis;
    dims = std::move(shifted);
  }
  return dims;
}

// `value` with every level's stacked dimension added, innermost first.
std::string expanded(const PmapSite& site, size_t output, std::string value) {
  for (size_t l = site.levels.size(); l-- > 0;) {
    std::optional<int> axis = site.levels[l].out_axes[output];
    if (axis) value = "spmd::expand_dims(" + value + ", " + std::to_string(*axis) + ")";
  }
  return value;
}

class Writer {
 public:
  Writer(const PmapSite& site, std::string indent) : site_(site), indent_(std::move(indent)) {
    for (size_t i = 0, ordinal = 0; i < site.arg_is_array.size(); ++i) {
      if (site.arg_is_array[i]) dims_[i] = argument_dims(site, ordinal++);
    }
  }

  // One statement per line, so that clang-format lays it out quickly (a long call with several
  // braced lists and a lambda among its arguments costs it ten times as much).
  std::string write() const {
    const std::string& in = indent_;
    std::string head = "[" + join(captures(), ", ") + "](" + join(params("a"), ", ") + ") {\n";
    std::string block = in + "  auto block = [&](" + join(params("b"), ", ") + ") {\n" +
                        body(in + "    ") + in + "  };\n";
    std::string call = "(" + join(names("a"), ", ") + ");\n";
    if (site_.nest_level) {
      return head + block + in + "  return nest.run(" + mesh_arguments() + ", [&] {\n" + in +
             "    return spmd::shard_map(block, " + in_specs() + ", " + out_specs() + ", " +
             options() + ")" + call + in + "  });\n" + in + "}";
    }
    return head + in + "  spmd::Mesh mesh = spmd::pmap_mesh(" + mesh_arguments() + ");\n" + block +
           in + "  return spmd::shard_map(block, mesh, " + in_specs() + ", " + out_specs() + ", " +
           options() + ")" + call + in + "}";
  }

 private:
  bool single_level() const { return site_.levels.size() == 1; }
  std::string axis_size_name(size_t level) const {
    return single_level() ? "axis_size" : "axis_size" + std::to_string(level);
  }

  // What pmap evaluated once, when it was called: f and the options that are expressions.
  std::vector<std::string> captures() const {
    std::vector<std::string> out = {"f = " + site_.fun};
    if (site_.nest_level) out.push_back("nest = spmd::PmapNest()");
    if (!site_.devices.empty()) out.push_back("devices = " + site_.devices);
    for (size_t l = 0; l < site_.levels.size(); ++l) {
      if (!site_.levels[l].axis_size.empty()) {
        out.push_back(axis_size_name(l) + " = " + site_.levels[l].axis_size);
      }
    }
    return out;
  }

  std::vector<std::string> names(const std::string& prefix) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < site_.arg_is_array.size(); ++i)
      out.push_back(prefix + std::to_string(i));
    return out;
  }

  std::vector<std::string> params(const std::string& prefix) const {
    std::vector<std::string> out = names(prefix);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = (site_.arg_is_array[i] ? "const spmd::Array& " : "const auto& ") + out[i];
    }
    return out;
  }

  // f's arguments inside the body: the blocks with the mapped dimensions squeezed out.
  std::string call() const {
    std::vector<std::string> args = names("b");
    for (const auto& [i, dims] : dims_) {
      std::vector<std::string> squeezed;
      for (const std::optional<int>& d : dims) {
        if (d) squeezed.push_back(std::to_string(*d));
      }
      std::sort(squeezed.begin(), squeezed.end());
      if (squeezed.size() == 1) args[i] = "spmd::squeeze(" + args[i] + ", " + squeezed[0] + ")";
      if (squeezed.size() > 1) {
        args[i] = "spmd::squeeze(" + args[i] + ", std::vector<int>{" + join(squeezed, ", ") + "})";
      }
    }
    return "f(" + join(args, ", ") + ")";
  }

  std::string body(const std::string& in) const {
    switch (site_.output_kind) {
      case OutputKind::kVoid:
        return in + call() + ";\n";
      case OutputKind::kArray:
        // A nest's result on a line of its own: clang-format takes long over nested calls that
        // do not fit on one line.
        if (single_level()) return in + "return " + expanded(site_, 0, call()) + ";\n";
        return in + "spmd::Array y = " + call() + ";\n" + in + "return " + expanded(site_, 0, "y") +
               ";\n";
      case OutputKind::kVector:
        if (expanded(site_, 0, "y") == "y") return in + "return " + call() + ";\n";
        return in + "std::vector<spmd::Array> ys = " + call() + ";\n" + in +
               "for (spmd::Array& y : ys) y = " + expanded(site_, 0, "y") + ";\n" + in +
               "return ys;\n";
      case OutputKind::kTuple:
        break;
    }
    std::vector<std::string> ys, outs;
    for (size_t o = 0; o < site_.num_outputs; ++o) {
      ys.push_back("y" + std::to_string(o));
      outs.push_back(expanded(site_, o, ys.back()));
    }
    return in + "auto [" + join(ys, ", ") + "] = " + call() + ";\n" + in +
           "return std::make_tuple(" + join(outs, ", ") + ");\n";
  }

  // One level's axis for spmd::pmap_mesh: its name, its in_axes as pmap saw them (one entry
  // when they agree; left out when 0), its axis_size.
  std::string mesh_axis(size_t l) const {
    const PmapSite::Level& level = site_.levels[l];
    std::vector<std::string> entries;
    for (const std::optional<int>& a : level.in_axes) {
      entries.push_back(a ? std::to_string(*a) : "std::nullopt");
    }
    if (std::all_of(entries.begin(), entries.end(),
                    [&](const auto& e) { return e == entries[0]; })) {
      entries.resize(1);
    }
    std::string in_axes =
        entries == std::vector<std::string>{"0"} ? "" : "{" + join(entries, ", ") + "}";
    if (level.axis_size.empty()) {
      return "{" + quoted(level.axis) + (in_axes.empty() ? "" : ", " + in_axes) + "}";
    }
    return "{.name = " + quoted(level.axis) + (in_axes.empty() ? "" : ", .in_axes = " + in_axes) +
           ", .size = " + axis_size_name(l) + "}";
  }

  // The arguments of spmd::pmap_mesh (and PmapNest::run), which checks the arguments as pmap did
  // (spmd/pmap_mesh.h): one axis per level, sized by the mapped dimensions (or axis_size), over
  // `devices` or the first devices.
  std::string mesh_arguments() const {
    std::vector<std::string> arrays, positions, axes, options;
    bool positions_shift = false;
    for (size_t i = 0; i < site_.arg_is_array.size(); ++i) {
      if (!site_.arg_is_array[i]) continue;
      positions_shift = positions_shift || positions.size() != i;
      arrays.push_back("a" + std::to_string(i));
      positions.push_back(std::to_string(i));
    }
    for (size_t l = 0; l < site_.levels.size(); ++l) axes.push_back(mesh_axis(l));
    if (!site_.devices.empty()) options.push_back(".devices = devices");
    if (positions_shift) options.push_back(".arg_positions = {" + join(positions, ", ") + "}");
    return "{" + join(arrays, ", ") + "}, {" + join(axes, ", ") + "}" +
           (options.empty() ? "" : ", {" + join(options, ", ") + "}");
  }

  std::string in_specs() const {
    std::vector<std::string> each;
    for (const auto& [i, dims] : dims_) {
      std::map<int, std::string> axes;
      for (size_t l = 0; l < dims.size(); ++l) {
        if (dims[l]) axes[*dims[l]] = site_.levels[l].axis;
      }
      each.push_back(spec(axes));
    }
    return specs(each);
  }

  std::string out_specs() const {
    if (site_.output_kind == OutputKind::kVoid) return "spmd::P()";
    std::vector<std::string> each;
    for (size_t o = 0; o < site_.num_outputs; ++o) each.push_back(spec(output_dims(site_, o)));
    return site_.output_kind == OutputKind::kTuple && each.size() > 1 ? specs(each) : each[0];
  }

  // ShardMapOptions, in declaration order (designated initializers).
  std::string options() const {
    std::string out = "{.check_vma = false";
    if (site_.nest_level) {
      std::vector<std::string> axes;
      for (const PmapSite::Level& level : site_.levels) axes.push_back(quoted(level.axis));
      out += ", .axis_names = {" + join(axes, ", ") + "}";
    }
    if (!site_.donate_argnums.empty()) {
      std::vector<std::string> positions;
      for (int p : site_.donate_argnums) positions.push_back(std::to_string(p));
      out += ", .donate_argnums = {" + join(positions, ", ") + "}";
    }
    return out + "}";
  }

  const PmapSite& site_;
  std::string indent_;
  std::map<size_t, std::vector<std::optional<int>>> dims_;  // argument position -> level -> dim
};

}  // namespace

std::string generate_shard_map(const PmapSite& site, const std::string& indent) {
  return Writer(site, indent).write();
}

}  // namespace spmd::migrate
