// SPDX-License-Identifier: Apache-2.0
// PartitionSpec (spmd/partition_spec.h).
#include "spmd/partition_spec.h"

#include <fmt/format.h>

#include "spmd/errors.h"

namespace spmd {

PartitionSpec::Entry::Entry(const char* name) {
  if (name == nullptr) {
    throw TypeError(
        "PartitionSpec entries must be None, an axis name or a tuple of axis names, got a null "
        "const char*; write spmd::None for a dimension that is not split.");
  }
  names_.emplace_back(name);
}

PartitionSpec::Entry::Entry(std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) names_.emplace_back(n);
}

std::string PartitionSpec::Entry::str() const {
  if (names_.empty()) return "None";
  if (names_.size() == 1) return fmt::format("'{}'", names_[0]);
  std::string out = "(";
  for (size_t i = 0; i < names_.size(); ++i) out += fmt::format("{}'{}'", i ? ", " : "", names_[i]);
  return out + ")";
}

PartitionSpec::PartitionSpec(std::initializer_list<std::string_view> tuple_entry) {
  add(Entry(tuple_entry));
}

PartitionSpec::PartitionSpec(Entry e0) { add(std::move(e0)); }

PartitionSpec::PartitionSpec(Entry e0, Entry e1, Entry e2, Entry e3, Entry e4, Entry e5, Entry e6,
                             Entry e7) {
  for (Entry* e : {&e0, &e1, &e2, &e3, &e4, &e5, &e6, &e7}) add(std::move(*e));
}

PartitionSpec::PartitionSpec(std::vector<Entry> entries) {
  for (Entry& e : entries) add(std::move(e));
}

void PartitionSpec::add(Entry e) {
  if (!e.absent_) entries_.push_back(std::move(e));
}

PartitionSpec::Entry PartitionSpec::entry(size_t d) const {
  return d < entries_.size() ? entries_[d] : Entry(None);
}

std::vector<std::string> PartitionSpec::axis_names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.insert(out.end(), e.names().begin(), e.names().end());
  return out;
}

std::string PartitionSpec::str() const {
  if (entries_.empty()) return "P()";
  std::string out = "P(";
  for (size_t i = 0; i < entries_.size(); ++i) out += (i ? ", " : "") + entries_[i].str();
  return out + (entries_.size() == 1 ? ",)" : ")");
}

}  // namespace spmd
