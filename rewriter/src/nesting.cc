// SPDX-License-Identifier: Apache-2.0
// The run-wide pmap site decision (nesting.h): merge the units' facts, build the call graph with
// one node per function and per pmap site (its mapped function), find for every site the first
// indirect call or unseen body its function may reach (one backward search per kind, from the
// nodes that have one), and link every site to the sites whose pmaps its function may run (one
// forward search from every site: sites x graph).
#include "nesting.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <set>

namespace spmd::migrate {
namespace {

const char* kNestFix =
    "so none of the nest's pmaps is migrated; nest the calls directly, pmap(pmap(f, \"j\", ...), "
    "\"i\", ...), with any reshapes outside, or name the pmap callable where the body gets it, "
    "and run the tool again";

// The name a lambda's call operator has in the call graph.
const char* kLambda = "(lambda)";

struct Node {
  const BodyFacts* body = nullptr;  // null for a function no unit defines
  std::string name;                 // a function's name; empty for a site
  Location where;
  std::vector<int> out;  // functions it may call, sites whose pmap it runs
};

void merge_body(BodyFacts& into, const BodyFacts& from) {
  into.callees.insert(from.callees.begin(), from.callees.end());
  for (const PmapRun& run : from.runs) {
    bool known = false;
    for (const PmapRun& r : into.runs) known = known || (r.at == run.at && r.site == run.site);
    if (!known) into.runs.push_back(run);
  }
  for (const auto& entry : from.indirect) {
    if (std::find(into.indirect.begin(), into.indirect.end(), entry) == into.indirect.end()) {
      into.indirect.push_back(entry);
    }
  }
}

// "line 12" within `from`'s file, else "path:12".
std::string place(const Location& where, const Location& from) {
  std::string line = std::to_string(where.line);
  return where.path == from.path ? "line " + line : where.path + ":" + line;
}

class Graph {
 public:
  Graph(std::map<Location, SiteOutcome>& sites, std::map<std::string, FunctionFacts>& functions)
      : sites_(sites) {
    for (auto& [where, site] : sites) {
      site_ids_[where] = add(Node{&site.body, "", where, {}});
    }
    for (auto& [key, fn] : functions) {
      function_ids_[key] = add(Node{fn.defined ? &fn.body : nullptr, fn.name, fn.where, {}});
      for (const std::string& base : fn.overrides) overriders_[base].push_back(key);
    }
    for (Node& node : nodes_) {
      if (node.body != nullptr) node.out = successors(*node.body);
    }
    reverse_.resize(nodes_.size());
    for (size_t n = 0; n < nodes_.size(); ++n) {
      for (int m : nodes_[n].out) reverse_[m].push_back(static_cast<int>(n));
    }
  }

  // Refuses the sites that may reach code the tool cannot see, and links the levels of imperfect
  // nests (levels()).
  void decide() {
    std::vector<int> indirect =
        witnesses([](const Node& n) { return n.body != nullptr && !n.body->indirect.empty(); });
    std::vector<int> unseen =
        witnesses([](const Node& n) { return n.body == nullptr && !n.name.empty(); });
    for (auto& [where, site] : sites_) {
      int id = site_ids_.at(where);
      const std::string unsure =
          "the tool cannot tell whether the function this pmap maps runs another pmap (a nest "
          "whose levels must be migrated together): ";
      if (indirect[id] >= 0) {
        refuse(site, "pmap-unseen-callee",
               unsure + chain(id, indirect, Kind::kIndirect, where) +
                   "; call a named function there, or migrate this pmap by hand");
      } else if (unseen[id] >= 0) {
        refuse(site, "pmap-unseen-callee",
               unsure + chain(id, unseen, Kind::kUnseen, where) +
                   "; run the tool on the file that defines it too, or migrate this pmap by hand");
      }
    }
    for (const auto& [where, id] : site_ids_) link_inner_sites(id);
  }

  // The sites that are levels of an imperfect nest: they run through spmd::PmapNest.
  const std::set<Location>& levels() const { return levels_; }

 private:
  static bool has_runs(const Node& n) { return n.body != nullptr && !n.body->runs.empty(); }

  int add(Node node) {
    nodes_.push_back(std::move(node));
    return static_cast<int>(nodes_.size()) - 1;
  }

  // The callees of a body (each virtual method with every overrider the run defines) and the
  // sites it runs.
  std::vector<int> successors(const BodyFacts& body) {
    std::set<int> out;
    std::vector<std::string> keys(body.callees.begin(), body.callees.end());
    std::set<std::string> seen(keys.begin(), keys.end());
    for (size_t k = 0; k < keys.size(); ++k) {
      auto id = function_ids_.find(keys[k]);
      if (id != function_ids_.end()) out.insert(id->second);
      auto derived = overriders_.find(keys[k]);
      if (derived == overriders_.end()) continue;
      for (const std::string& key : derived->second) {
        if (seen.insert(key).second) keys.push_back(key);
      }
    }
    for (const PmapRun& run : body.runs) {
      if (run.site && site_ids_.count(*run.site) != 0) out.insert(site_ids_.at(*run.site));
    }
    return {out.begin(), out.end()};
  }

  // For every node, the next node on a shortest path to a node with `property` (itself for
  // such a node); -1 when none is reachable.
  std::vector<int> witnesses(const std::function<bool(const Node&)>& property) const {
    std::vector<int> next(nodes_.size(), -1);
    std::deque<int> queue;
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (property(nodes_[n])) {
        next[n] = static_cast<int>(n);
        queue.push_back(static_cast<int>(n));
      }
    }
    while (!queue.empty()) {
      int m = queue.front();
      queue.pop_front();
      for (int p : reverse_[m]) {
        if (next[p] >= 0) continue;
        next[p] = m;
        queue.push_back(p);
      }
    }
    return next;
  }

  std::string hop(int id, const Location& from) const {
    const Node& node = nodes_[id];
    if (node.name.empty()) return "the function of the pmap at " + place(node.where, from);
    if (node.name == kLambda) return "the lambda at " + place(node.where, from);
    if (node.body == nullptr) {
      return "'" + node.name + "' (declared at " + place(node.where, from) +
             ", defined in no file of this run)";
    }
    return "'" + node.name + "' (" + place(node.where, from) + ")";
  }

  enum class Kind { kIndirect, kUnseen };

  // How site `id` reaches its witness: "the lambda at line 9 calls 'a' (line 3), which calls
  // 'b' (b.cc:7), which calls through the function pointer 'fp' (b.cc:9)".
  std::string chain(int id, const std::vector<int>& next, Kind kind, const Location& from) const {
    std::vector<int> path;
    for (int n = id; n != next[n] && path.size() < 8; n = next[n]) path.push_back(next[n]);
    int last = path.empty() ? id : path.back();
    std::string event;
    if (kind != Kind::kUnseen && next[last] == last) {
      const auto& [at, what] = nodes_[last].body->indirect.front();
      event = what + " (" + place(at, from) + ")";
    }
    if (path.empty()) return "it " + event;
    std::string out = hop(path[0], from);
    for (size_t i = 1; i < path.size(); ++i) {
      out += (i == 1 ? " calls " : ", which calls ") + hop(path[i], from);
    }
    if (next[last] != last) return out + ", which ...";
    if (!event.empty()) out += (path.size() == 1 ? " " : ", which ") + event;
    return out;
  }

  // A site already left keeps its reason, unless the new one is a nest (every site of which is
  // reported as such).
  void refuse(SiteOutcome& site, const std::string& rule, const std::string& message) {
    if (site.refused && (rule != "pmap-nested" || site.report.rule == rule)) return;
    site.refused = true;
    site.report.rule = rule;
    site.report.message = message;
  }

  // Links site `outer` with every site whose pmap its function may run (directly or through
  // calls and inner sites' functions): both become levels of one imperfect nest, migrated
  // together. A run whose pmap(...) the tool cannot find leaves `outer`.
  void link_inner_sites(int outer) {
    SiteOutcome& site = sites_.at(nodes_[outer].where);
    std::vector<int> parent(nodes_.size(), -2);
    std::deque<int> queue{outer};
    parent[outer] = -1;
    while (!queue.empty()) {
      int n = queue.front();
      queue.pop_front();
      if (has_runs(nodes_[n])) {
        for (const PmapRun& run : nodes_[n].body->runs) {
          link(outer, n, parent, run, site);
        }
      }
      for (int m : nodes_[n].out) {
        if (parent[m] != -2) continue;
        parent[m] = n;
        queue.push_back(m);
      }
    }
  }

  // One pmap run at node `n`, which site `outer`'s function reaches (`parent` holds the path).
  void link(int outer, int n, const std::vector<int>& parent, const PmapRun& run,
            SiteOutcome& site) {
    const Location& where = nodes_[outer].where;
    std::string through;
    for (int p = n; p != outer; p = parent[p]) {
      through = hop(p, where) + (through.empty() ? "" : ", ") + through;
    }
    if (!run.site || sites_.count(*run.site) == 0) {
      refuse(site, "pmap-nested",
             "this pmap runs a pmap callable inside the function it maps (" +
                 (through.empty() ? std::string("it ") : through + " ") + run.what + " (" +
                 place(run.at, where) + ")), and the tool cannot tell which pmap(...) made it, " +
                 kNestFix);
      return;
    }
    SiteOutcome& inner = sites_.at(*run.site);
    levels_.insert(where);
    levels_.insert(*run.site);
    site.nest.insert(*run.site);
    inner.nest.insert(where);
    for (SiteOutcome* level : {&site, &inner}) {
      if (level->nest_unfit.empty()) continue;
      const Location& at = level->report.where;
      refuse(*level, "pmap-nested",
             "this pmap is one level of a nest (the pmap at " + place(*run.site, at) +
                 " runs inside the function the pmap at " + place(where, at) + " maps), and " +
                 level->nest_unfit +
                 ", so none of the nest's pmaps is migrated; drop donate_argnums here and run the "
                 "tool again");
    }
  }

  std::map<Location, SiteOutcome>& sites_;
  std::vector<Node> nodes_;
  std::vector<std::vector<int>> reverse_;
  std::map<Location, int> site_ids_;
  std::map<std::string, int> function_ids_;
  std::map<std::string, std::vector<std::string>> overriders_;
  std::set<Location> levels_;
};

// A site migrates only with every site of its nest (written through variables, or `levels` of an
// imperfect nest): a left one leaves them all.
void refuse_nests(std::map<Location, SiteOutcome>& sites, const std::set<Location>& levels) {
  std::map<Location, Location> root;
  std::function<Location(const Location&)> find = [&](const Location& l) {
    auto it = root.find(l);
    if (it == root.end() || it->second == l) return l;
    return it->second = find(it->second);
  };
  for (const auto& [where, site] : sites) {
    for (const Location& other : site.nest) {
      if (sites.count(other) != 0) root[find(where)] = find(other);
    }
  }
  std::map<Location, const SiteOutcome*> left;  // nest root -> its first refused site
  for (const auto& [where, site] : sites) {
    if (site.refused) left.emplace(find(where), &site);
  }
  for (auto& [where, site] : sites) {
    auto reason = left.find(find(where));
    if (site.refused || reason == left.end()) continue;
    const Warning& first = reason->second->report;
    site.refused = true;
    site.report.rule = "pmap-nested";
    site.report.message =
        "this pmap is one level of a nest" +
        std::string(levels.count(where) != 0 ? "" : " written through variables") +
        ", migrated whole or not at all, and the pmap at " + place(first.where, where) +
        " is left as is: " + first.message;
  }
}

}  // namespace

std::map<Location, SiteOutcome> decide_sites(const std::vector<TuResult>& results) {
  std::map<Location, SiteOutcome> sites;
  std::map<std::string, FunctionFacts> functions;
  for (const TuResult& r : results) {
    if (r.failed) continue;
    for (const auto& [where, site] : r.sites) {
      auto [it, inserted] = sites.emplace(where, site);
      if (inserted) continue;
      SiteOutcome& merged = it->second;
      if (site.refused && !merged.refused) {
        merged = site;
        continue;
      }
      merged.edits.insert(site.edits.begin(), site.edits.end());
      merged.nest_edits.insert(site.nest_edits.begin(), site.nest_edits.end());
      if (merged.nest_unfit.empty()) merged.nest_unfit = site.nest_unfit;
      merged.includes.insert(site.includes.begin(), site.includes.end());
      merged.nest.insert(site.nest.begin(), site.nest.end());
      merge_body(merged.body, site.body);
    }
    for (const auto& [key, fn] : r.functions) {
      auto [it, inserted] = functions.emplace(key, fn);
      if (inserted) continue;
      FunctionFacts& merged = it->second;
      if (fn.defined && !merged.defined) {
        merged = fn;
      } else if (fn.defined) {
        merge_body(merged.body, fn.body);
      }
    }
  }
  Graph graph(sites, functions);
  graph.decide();
  refuse_nests(sites, graph.levels());
  for (const Location& where : graph.levels()) {
    SiteOutcome& site = sites.at(where);
    if (!site.refused) site.edits = site.nest_edits;
  }
  return sites;
}

}  // namespace spmd::migrate
