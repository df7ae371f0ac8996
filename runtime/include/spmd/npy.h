// SPDX-License-Identifier: Apache-2.0
// File: spmd/npy.h
//
// Arrays in NumPy's .npy format (jnp.save / jnp.load), so results can be checked in NumPy or JAX
// and test data can come from them.
//
// save writes the global value of an array (a sharded array is assembled first) in format
// version 1.0 (2.0 when the header needs it), C order, little-endian, byte for byte what np.save
// writes for the same array. load reads versions 1.0, 2.0 and 3.0, either byte order and
// Fortran order, and returns a host array on the default device.
//
// dtypes: bool '|b1', int8 '|i1', int16 '<i2', int32 '<i4', int64 '<i8', uint8 '|u1', uint16
// '<u2', uint32 '<u4', uint64 '<u8', float16 '<f2', float32 '<f4', float64 '<f8', and bfloat16
// '<V2'. NumPy has no bfloat16: ml_dtypes' bfloat16 (what JAX uses) is a 2-byte type that np.save
// writes as '<V2', so spmd writes the same, and load reads any 2-byte void ('<V2', '|V2') as
// bfloat16. In NumPy, `np.load(path).view(ml_dtypes.bfloat16)` gives the values back. Other
// dtypes (complex64, structured, object, ...) are a TypeError naming the dtype and the
// conversion to do in NumPy.
//
// Example:
//   spmd::save("x.npy", spmd::arange(6).reshape({2, 3}));   // np.load("x.npy"): int32 (2, 3)
//   spmd::Array y = spmd::load("x.npy");
//
// Errors: OSError when the file cannot be opened, read or written; ValueError for a file that is
// not a valid .npy (bad magic, header or size), naming the file and what is wrong.
#pragma once

#include <iosfwd>
#include <string>

#include "spmd/array.h"

namespace spmd {

// Writes x to `path` (jnp.save; the name is used as given, no ".npy" is appended).
void save(const std::string& path, const Array& x);
// Reads the array stored in the .npy file `path` (jnp.load).
Array load(const std::string& path);

// The same on streams: `out` receives one .npy file; `in` is read up to the end of one array.
// `name` stands for the stream in error messages.
void save(std::ostream& out, const Array& x, const std::string& name = "<stream>");
Array load(std::istream& in, const std::string& name = "<stream>");

}  // namespace spmd
