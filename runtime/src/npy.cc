// SPDX-License-Identifier: Apache-2.0
// NumPy's .npy format (spmd/npy.h), written the way numpy.lib.format does so that the bytes
// match np.save's.
#include "spmd/npy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <optional>
#include <ostream>
#include <vector>

#include "spmd/errors.h"
#include "spmd/ops.h"

namespace spmd {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// NumPy pads the header so that the data starts on a multiple of 64 bytes.
constexpr size_t kAlign = 64;
// ... and leaves room for the first extent to grow to 21 digits (GROWTH_AXIS_MAX_DIGITS).
constexpr size_t kGrowthDigits = 21;

// The type code of each dtype, as np.dtype(...).str spells it on a little-endian machine.
struct NpyType {
  DType dtype;
  const char* descr;
};
constexpr NpyType kTypes[] = {
    {DType::kBool, "|b1"},    {DType::kInt32, "<i4"},     {DType::kInt64, "<i8"},
    {DType::kUInt32, "<u4"},  {DType::kFloat16, "<f2"},   {DType::kBFloat16, "<V2"},
    {DType::kFloat32, "<f4"}, {DType::kFloat64, "<f8"},   {DType::kInt8, "|i1"},
    {DType::kInt16, "<i2"},   {DType::kUInt8, "|u1"},     {DType::kUInt16, "<u2"},
    {DType::kUInt64, "<u8"},  {DType::kComplex64, "<c8"}, {DType::kComplex128, "<c16"},
};

std::string_view descr_of(DType dt) {
  for (const NpyType& t : kTypes) {
    if (t.dtype == dt) return t.descr;
  }
  throw ValueError(fmt::format("save: no .npy type for dtype {}", dt));
}

// Python's repr of a tuple of ints: "()", "(3,)", "(2, 3)".
std::string tuple_repr(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// Reverses the bytes of each of `count` elements of dtype dt (each part of a complex on its own).
void swap_bytes(char* data, size_t count, DType dt) {
  const size_t lanes = is_complex(dt) ? 2 : 1;
  const size_t size = static_cast<size_t>(itemsize(dt)) / lanes;
  if (size == 1) return;
  for (size_t i = 0; i < count * lanes; ++i) std::reverse(data + i * size, data + (i + 1) * size);
}

// The header dictionary: {'descr': ..., 'fortran_order': ..., 'shape': ...}.
struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// Reads the header's Python dict literal (only the forms numpy.lib.format writes: string keys;
// string, True/False and int-tuple values).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  Header parse() {
    Header h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!consume('}')) {
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() == '[') {
          fail("it holds a structured dtype ({}); spmd arrays have one element type",
               std::string(text_.substr(pos_)));
        }
        h.descr = string_literal();
        seen[0] = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        seen[1] = true;
      } else if (key == "shape") {
        h.shape = int_tuple();
        seen[2] = true;
      } else {
        fail("the header has an unknown key '{}'", key);
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    if (!(seen[0] && seen[1] && seen[2])) {
      fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return h;
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> what, Args&&... args) {
    throw ValueError(fmt::format("load('{}'): not a valid .npy file: {} (header: {})", name_,
                                 fmt::format(what, std::forward<Args>(args)...), text_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char peek() { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c)) fail("expected '{}' at offset {}", c, pos_);
  }
  std::string string_literal() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a string at offset {}", pos_);
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string at offset {}", pos_);
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (text_.substr(pos_).starts_with(word)) {
        pos_ += std::strlen(word);
        return value;
      }
    }
    fail("expected True or False at offset {}", pos_);
  }
  Shape int_tuple() {
    expect('(');
    Shape shape;
    while (!consume(')')) {
      skip_space();
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ == start || pos_ - start > 18) fail("bad extent in the shape at offset {}", start);
      shape.push_back(std::stoll(std::string(text_.substr(start, pos_ - start))));
      consume('L');  // Python 2 long literals, in files written by old NumPy
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

// The dtype of a descr, and whether its bytes must be swapped to native order.
std::pair<DType, bool> dtype_of_descr(const std::string& descr, const std::string& name) {
  auto unsupported = [&]() {
    return TypeError(fmt::format(
        "load('{}'): spmd has no dtype for the .npy type '{}'; spmd reads bool, int8 to int64, "
        "uint8 to uint64, float16, bfloat16 (2-byte void, as ml_dtypes writes it), float32, "
        "float64, complex64 and complex128. "
        "Convert the array in NumPy first, e.g. np.save(path, a.astype(np.int32)).",
        name, descr));
  };
  if (descr.size() < 2) throw unsupported();
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') throw unsupported();
  // '|' (no byte order) and '=' mean the writer's native order, little-endian in practice.
  constexpr bool kNativeBig = std::endian::native == std::endian::big;
  bool file_big = order == '>' || (order != '<' && kNativeBig);
  for (const NpyType& t : kTypes) {
    if (code == t.descr + 1) return {t.dtype, file_big != kNativeBig};
  }
  throw unsupported();
}

// Reads exactly `size` bytes, growing the buffer as data arrives, so that a corrupt shape cannot
// make us allocate more than the stream holds.
std::vector<char> read_bytes(std::istream& in, size_t size, const std::string& name,
                             const char* what) {
  constexpr size_t kChunk = size_t{64} << 20;
  std::vector<char> bytes;
  while (bytes.size() < size) {
    size_t old = bytes.size();
    size_t want = std::min(kChunk, size - old);
    bytes.resize(old + want);
    in.read(bytes.data() + old, static_cast<std::streamsize>(want));
    if (static_cast<size_t>(in.gcount()) != want) {
      if (in.bad()) throw OSError(fmt::format("load('{}'): read error", name));
      throw ValueError(
          fmt::format("load('{}'): not a valid .npy file: {} is truncated (expected "
                      "{} bytes, found {})",
                      name, what, size, old + static_cast<size_t>(in.gcount())));
    }
  }
  return bytes;
}

uint32_t little_endian(const std::vector<char>& bytes) {
  uint32_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

void save(std::ostream& out, const Array& x, const std::string& name) {
  DType dt = x.dtype();
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_of(dt), tuple_repr(x.shape()));
  if (!x.shape().empty()) {
    header.append(kGrowthDigits - fmt::formatted_size("{}", x.shape()[0]), ' ');
  }
  // Version 1.0 stores the header length in 2 bytes, 2.0 in 4.
  size_t length_size = 2;
  size_t length = header.size() + 1;
  size_t padding = kAlign - (kMagicSize + 2 + length_size + length) % kAlign;
  if (length + padding > 0xffff) {
    length_size = 4;
    padding = kAlign - (kMagicSize + 2 + length_size + length) % kAlign;
  }
  header.append(padding, ' ');
  header.push_back('\n');
  std::string prefix(kMagic, kMagicSize);
  prefix.push_back(static_cast<char>(length_size == 2 ? 1 : 2));
  prefix.push_back(0);
  for (size_t i = 0; i < length_size; ++i) {
    prefix.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  }

  size_t item = static_cast<size_t>(itemsize(dt));
  std::vector<char> data(static_cast<size_t>(x.size()) * item);
  internal::read_host(x, dt, data.data());
  if constexpr (std::endian::native == std::endian::big) {
    swap_bytes(data.data(), static_cast<size_t>(x.size()), dt);
  }
  out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw OSError(fmt::format("save('{}'): write error", name));
}

Array load(std::istream& in, const std::string& name) {
  std::vector<char> start = read_bytes(in, kMagicSize + 2, name, "the file");
  if (std::memcmp(start.data(), kMagic, kMagicSize) != 0) {
    throw ValueError(fmt::format(
        "load('{}'): not a .npy file: it does not start with \\x93NUMPY (np.save writes .npy; "
        ".npz archives and pickles are not supported)",
        name));
  }
  int major = static_cast<unsigned char>(start[kMagicSize]);
  int minor = static_cast<unsigned char>(start[kMagicSize + 1]);
  if (major < 1 || major > 3 || minor != 0) {
    throw ValueError(
        fmt::format("load('{}'): .npy format version {}.{} is not supported (1.0, 2.0 and 3.0 are)",
                    name, major, minor));
  }
  size_t length = little_endian(read_bytes(in, major == 1 ? 2 : 4, name, "the header"));
  std::vector<char> text = read_bytes(in, length, name, "the header");
  Header h = HeaderParser(std::string_view(text.data(), text.size()), name).parse();
  auto [dtype, swap] = dtype_of_descr(h.descr, name);

  size_t count = 1;
  for (int64_t extent : h.shape) {
    if (extent != 0 && count > (size_t{1} << 62) / static_cast<size_t>(extent)) {
      throw ValueError(fmt::format("load('{}'): not a valid .npy file: shape {} is too large", name,
                                   tuple_repr(h.shape)));
    }
    count *= static_cast<size_t>(extent);
  }
  size_t item = static_cast<size_t>(itemsize(dtype));
  std::vector<char> data = read_bytes(in, count * item, name, "the data");
  if (swap) swap_bytes(data.data(), count, dtype);
  if (dtype == DType::kBool) {
    for (char& b : data) b = b != 0 ? 1 : 0;
  }
  if (!h.fortran_order) return internal::make_host_array(dtype, data.data(), h.shape, count);
  // Column-major data is the row-major data of the reversed shape, transposed.
  Shape reversed(h.shape.rbegin(), h.shape.rend());
  return copy(internal::make_host_array(dtype, data.data(), reversed, count).transpose());
}

void save(const std::string& path, const Array& x) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    throw OSError(fmt::format("save: cannot open '{}' for writing: {}", path, errno_text()));
  }
  save(out, x, path);
  out.close();
  if (!out) throw OSError(fmt::format("save: cannot write '{}': {}", path, errno_text()));
}

Array load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw OSError(fmt::format("load: cannot open '{}': {}", path, errno_text()));
  return load(in, path);
}

}  // namespace spmd
