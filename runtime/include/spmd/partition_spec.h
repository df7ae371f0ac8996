// SPDX-License-Identifier: Apache-2.0
// File: spmd/partition_spec.h
//
// PartitionSpec says, for each dimension of an array, which mesh axes split it (JAX's
// jax.sharding.PartitionSpec, alias P). Each entry is one of:
//   - None: the dimension is not split;
//   - an axis name: split over that mesh axis;
//   - a braced list of names: split over the product of those axes, major-to-minor in list order.
// Missing trailing entries are None. A mesh axis may appear at most once in a spec.
//
// Example:
//   using spmd::P; using spmd::None;
//   P()                     // replicated
//   P("x")                  // dim 0 split over x
//   P(None, "y")            // dim 1 split over y
//   P({"x", "y"})           // dim 0 split over x*y, x major
//   P("x", {"y", "z"})      // dim 0 over x, dim 1 over y*z
//   P({"x", "y"}).str()     // "P(('x', 'y'),)"
#pragma once

#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "spmd/format.h"

namespace spmd {

struct NoneType {
  bool operator==(const NoneType&) const = default;
};
// The "not split" entry of a PartitionSpec (Python's None).
inline constexpr NoneType None{};

class PartitionSpec {
 public:
  // One entry: None, one axis name, or a tuple of axis names.
  class Entry {
   public:
    Entry() : absent_(true) {}  // only as a defaulted trailing argument; dropped by PartitionSpec
    Entry(NoneType) {}
    Entry(const char* name);  // TypeError for a null pointer (write None for "not split")
    Entry(std::string name) : names_{std::move(name)} {}
    Entry(std::string_view name) : names_{std::string(name)} {}
    Entry(std::initializer_list<std::string_view> names);
    explicit Entry(std::vector<std::string> names) : names_(std::move(names)) {}

    bool is_none() const { return names_.empty(); }
    bool is_tuple() const { return names_.size() > 1; }
    // The axis names, major to minor; empty for None.
    const std::vector<std::string>& names() const { return names_; }
    // "None", "'x'", "('x', 'y')".
    std::string str() const;
    bool operator==(const Entry& o) const { return names_ == o.names_; }

   private:
    friend class PartitionSpec;
    std::vector<std::string> names_;
    bool absent_ = false;
  };

  PartitionSpec() = default;
  // P({"x", "y"}): a single entry splitting dim 0 over x*y. Listed first so braced lists bind here.
  PartitionSpec(std::initializer_list<std::string_view> tuple_entry);
  explicit PartitionSpec(Entry e0);
  PartitionSpec(Entry e0, Entry e1, Entry e2 = {}, Entry e3 = {}, Entry e4 = {}, Entry e5 = {},
                Entry e6 = {}, Entry e7 = {});
  explicit PartitionSpec(std::vector<Entry> entries);

  size_t size() const { return entries_.size(); }
  const Entry& operator[](size_t i) const { return entries_[i]; }
  const std::vector<Entry>& entries() const { return entries_; }
  // Entry for dimension d, None past the end.
  Entry entry(size_t d) const;
  // Every axis name mentioned, in order of appearance.
  std::vector<std::string> axis_names() const;

  // JAX's repr: "P()", "P('i',)", "P('i', 'j')", "P(None, 'y')", "P(('x', 'y'),)".
  std::string str() const;
  bool operator==(const PartitionSpec& o) const { return entries_ == o.entries_; }

 private:
  void add(Entry e);
  std::vector<Entry> entries_;
};

using P = PartitionSpec;

// Prints spec.str().
std::ostream& operator<<(std::ostream& os, const PartitionSpec& spec);

}  // namespace spmd

template <>
struct fmt::formatter<spmd::PartitionSpec> : spmd::internal::StrFormatter<spmd::PartitionSpec> {};
