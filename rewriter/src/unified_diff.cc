// SPDX-License-Identifier: Apache-2.0
// In-process unified diffs (unified_diff.h).
#include "unified_diff.h"

#include <algorithm>

namespace spmd::migrate {
namespace {

constexpr size_t kContext = 3;

// The lines of `text`, each with its '\n' (the last one without, when the text lacks it).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t stop = text.find('\n', start);
    stop = stop == std::string::npos ? text.size() : stop + 1;
    lines.push_back(text.substr(start, stop - start));
    start = stop;
  }
  return lines;
}

// Old lines [first, first + removed) become `added`.
struct Change {
  size_t first = 0;
  size_t removed = 0;
  std::vector<std::string> added;
};

void put_line(std::string& out, char mark, const std::string& line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

std::string range(size_t start, size_t count) {
  // diff numbers lines from 1, and gives the line before an empty range.
  return std::to_string(count == 0 ? start : start + 1) + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(const std::string& path, const std::string& before,
                         const std::vector<Edit>& edits) {
  std::vector<std::string> lines = split_lines(before);
  std::vector<size_t> starts;  // offset of each line, and the end
  for (size_t offset = 0; const std::string& line : lines) {
    starts.push_back(offset);
    offset += line.size();
  }
  starts.push_back(before.size());
  auto line_of = [&](size_t offset) {
    return static_cast<size_t>(std::upper_bound(starts.begin(), starts.end() - 1, offset) -
                               starts.begin()) -
           1;
  };
  // The lines an edit touches, first to last; lines.size() for an insertion at the end of a file
  // whose last line is complete.
  auto first_line = [&](const Edit& e) {
    bool at_end = e.offset >= before.size() && (lines.empty() || before.back() == '\n');
    return at_end ? lines.size() : line_of(e.offset);
  };
  auto last_line = [&](const Edit& e) {
    size_t first = first_line(e);
    return first == lines.size() || e.length == 0 ? first : line_of(e.offset + e.length - 1);
  };
  // Edits on the same lines make one change.
  std::vector<Change> changes;
  for (size_t e = 0; e < edits.size();) {
    size_t first = first_line(edits[e]), last = last_line(edits[e]);
    size_t k = e + 1;
    for (; k < edits.size() && first_line(edits[k]) <= last; ++k) {
      last = std::max(last, last_line(edits[k]));
    }
    size_t cursor = first < lines.size() ? starts[first] : before.size();
    size_t stop = last < lines.size() ? starts[last + 1] : before.size();
    std::string text;
    for (; e < k; ++e) {
      text += before.substr(cursor, edits[e].offset - cursor) + edits[e].text;
      cursor = edits[e].offset + edits[e].length;
    }
    text += before.substr(cursor, stop - cursor);
    Change change{first, last < lines.size() ? last + 1 - first : 0, split_lines(text)};
    // Lines the change leaves equal are context, not change.
    while (change.removed > 0 && !change.added.empty() && lines[change.first] == change.added[0]) {
      change.added.erase(change.added.begin());
      ++change.first;
      --change.removed;
    }
    while (change.removed > 0 && !change.added.empty() &&
           lines[change.first + change.removed - 1] == change.added.back()) {
      change.added.pop_back();
      --change.removed;
    }
    if (change.removed == 0 && change.added.empty()) continue;
    // Changes that touch show their removed lines first, as diff does.
    if (!changes.empty() && changes.back().first + changes.back().removed == change.first) {
      changes.back().removed += change.removed;
      changes.back().added.insert(changes.back().added.end(), change.added.begin(),
                                  change.added.end());
    } else {
      changes.push_back(std::move(change));
    }
  }
  if (changes.empty()) return "";
  std::string out = "--- a" + path + "\n+++ b" + path + "\n";
  long delta = 0;  // new minus old lines before the current hunk
  for (size_t i = 0; i < changes.size();) {
    size_t j = i;
    while (j + 1 < changes.size() &&
           changes[j + 1].first <= changes[j].first + changes[j].removed + 2 * kContext) {
      ++j;
    }
    size_t from = changes[i].first > kContext ? changes[i].first - kContext : 0;
    size_t to = std::min(lines.size(), changes[j].first + changes[j].removed + kContext);
    long growth = 0;
    for (size_t k = i; k <= j; ++k) {
      growth += static_cast<long>(changes[k].added.size()) - static_cast<long>(changes[k].removed);
    }
    out += "@@ -" + range(from, to - from) + " +" +
           range(from + delta, static_cast<size_t>(static_cast<long>(to - from) + growth)) +
           " @@\n";
    size_t cursor = from;
    for (size_t k = i; k <= j; ++k) {
      for (; cursor < changes[k].first; ++cursor) put_line(out, ' ', lines[cursor]);
      for (size_t r = 0; r < changes[k].removed; ++r) put_line(out, '-', lines[cursor + r]);
      for (const std::string& line : changes[k].added) put_line(out, '+', line);
      cursor += changes[k].removed;
    }
    for (; cursor < to; ++cursor) put_line(out, ' ', lines[cursor]);
    delta += growth;
    i = j + 1;
  }
  return out;
}

}  // namespace spmd::migrate
