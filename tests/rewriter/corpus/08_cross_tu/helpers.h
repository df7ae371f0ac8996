// SPDX-License-Identifier: Apache-2.0
// Corpus 08_cross_tu: helpers defined in other files of the program (helpers.cc, deeper.cc).
#pragma once

#include <spmd/spmd.h>

// Runs a pmap over "j" on r's rows (helpers.cc).
spmd::Array rows_helper(const spmd::Array& r);
// Calls deeper() (helpers.cc), which runs a pmap over "j" (deeper.cc).
spmd::Array two_files_away(const spmd::Array& r);
spmd::Array deeper(const spmd::Array& r);
