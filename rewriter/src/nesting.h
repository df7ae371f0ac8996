// SPDX-License-Identifier: Apache-2.0
// The run-wide decision on pmap sites. A pmap that runs inside another pmap's function through a
// helper or a captured callable (an imperfect nest, which one shard_map cannot express) is
// migrated with every other level of its nest, each through spmd::PmapNest (the site's nest
// edits), or none of them is: migrating one level alone breaks the program at run time. The call
// graph joins the facts of every translation unit of the run (pmap_call_graph.h), so a nest
// through helpers in other files is found; a function whose body no file of the run holds, or a
// call through a function pointer, leaves the pmap whose function may reach it unmigrated (the
// tool cannot rule a nest out), and with it the rest of its nest.
//
// A site is also left when any site it must be migrated with (one nest written through
// variables, or the levels of an imperfect nest) is left.
#pragma once

#include <map>
#include <vector>

#include "migration.h"

namespace spmd::migrate {

// Every pmap site of the successful translation units, merged (a site any unit refuses is
// refused) and decided: `refused` and `report` say why a site is left.
std::map<Location, SiteOutcome> decide_sites(const std::vector<TuResult>& results);

}  // namespace spmd::migrate
