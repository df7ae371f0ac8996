// SPDX-License-Identifier: Apache-2.0
// Differential conformance against real JAX: runs every case of tests/jax_oracle/corpus/*.json
// (produced by generate.py with jax 0.10.2 and 0.7.2) with spmd and compares the result.
//
// Values: integers and bools exactly; floats exactly when the case's inputs make every result
// exactly representable ("exact": true: bit for bit), else within kInexactUlps. Errors: the same
// exception class and JAX's key phrase in spmd's message. A case carrying an "spmd" object is a
// deliberate difference: its "reason" says why, and spmd's expected result there replaces JAX's.
//
// The body language (steps applied to the first argument's block) is described in README.md and
// implemented for JAX in oracle.py.
//
// Multi-process (started by spmd-run, e.g. 2 processes x 4 devices): the same cases over the same
// global device count, with the inputs placed by their in_specs and the outputs gathered with
// process_allgather. With SPMD_ORACLE_RESULTS=<file>, a single-process run records a digest of
// every result (its .npy bytes) or error class, and a multi-process run requires the same, bit for
// bit, besides JAX's expectation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "spmd/distributed.h"
#include "spmd/pmap.h"
#include "spmd/random.h"
#include "spmd/spmd.h"

namespace spmd {
namespace {

using Json = nlohmann::json;

// Results of inexact float cases may differ by this many ulps of the output's largest magnitude:
// XLA and spmd sum device values in different orders, and XLA:CPU divides by a constant as a
// multiplication by its rounded reciprocal.
constexpr double kInexactUlps = 4;

const Json& suite(const std::string& name) {
  static std::map<std::string, Json> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    std::ifstream in(std::string(SPMD_ORACLE_CORPUS_DIR) + "/" + name + ".json");
    if (!in) throw std::runtime_error("cannot read the oracle corpus file " + name + ".json");
    it = loaded.emplace(name, Json::parse(in)).first;
  }
  return it->second;
}

struct CaseRef {
  std::string suite;
  size_t index;
};

void PrintTo(const CaseRef& ref, std::ostream* os) { *os << ref.suite << "#" << ref.index; }

std::vector<CaseRef> cases_of(const std::string& name) {
  std::vector<CaseRef> refs;
  for (size_t i = 0; i < suite(name)["cases"].size(); ++i) refs.push_back({name, i});
  return refs;
}

const Json& case_json(const CaseRef& ref) { return suite(ref.suite)["cases"][ref.index]; }

std::string key_of(const CaseRef& ref) {
  return ref.suite + "#" + case_json(ref)["id"].get<std::string>();
}

std::string case_name(const testing::TestParamInfo<CaseRef>& info) {
  return "case" + case_json(info.param)["id"].get<std::string>();
}

// ---- one process or several ----

// Whether spmd-run started this run (several processes share the devices).
bool multi_process = false;

// The results recorded by a single-process run (SPMD_ORACLE_RESULTS), by "suite#id": a digest of
// the result's .npy bytes, or "error <class>". A multi-process run loads and compares them.
std::map<std::string, std::string> recorded;

const char* results_path() { return std::getenv("SPMD_ORACLE_RESULTS"); }

class RecordedResults : public testing::Environment {
 public:
  void SetUp() override {
    if (results_path() == nullptr || !multi_process) return;
    std::ifstream in(results_path());
    if (!in) throw std::runtime_error(std::string("cannot read ") + results_path());
    recorded = Json::parse(in).get<std::map<std::string, std::string>>();
  }
  void TearDown() override {
    if (results_path() == nullptr || multi_process) return;
    std::ofstream(results_path()) << Json(recorded).dump(1) << "\n";
  }
};
const testing::Environment* const kRecordedResults =
    testing::AddGlobalTestEnvironment(new RecordedResults);

// FNV-1a of `x`'s .npy bytes (dtype, shape and data).
std::string digest(const Array& x) {
  std::ostringstream npy;
  save(npy, x);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : npy.str()) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

// Records (one process) or checks (several) the result of case `key`.
void compare_across_runs(const std::string& key, const std::string& result) {
  if (results_path() == nullptr) return;
  if (!multi_process) {
    recorded[key] = result;
    return;
  }
  auto it = recorded.find(key);
  ASSERT_NE(it, recorded.end()) << key << " was not recorded by the single-process run";
  EXPECT_EQ(result, it->second) << key << ": differs from the single-process result";
}

// An input as a multi-process call takes it: placed on `mesh` by `spec` (each process keeps its
// devices' shards). An input the spec does not fit stays a host array, so that the mapped call
// raises its own error.
Array placed(const Array& x, const Mesh& mesh, const PartitionSpec& spec) {
  if (!multi_process) return x;
  try {
    return device_put(x, NamedSharding(mesh, spec));
  } catch (const Error&) {
    return x;
  }
}

// The first `per_process` devices of every process, in process order.
std::vector<Device> firsts_of_each_process(int64_t per_process) {
  const int64_t local = static_cast<int64_t>(local_devices().size());
  std::vector<Device> chosen;
  for (int p = 0; p < process_count(); ++p) {
    for (int64_t d = 0; d < per_process; ++d) chosen.push_back(devices()[p * local + d]);
  }
  return chosen;
}

// The mesh of case `c`: over the first devices in one process; over the first devices of every
// process alike in several (a mesh must hold devices of every process), which keeps each
// device's position in the mesh.
Mesh case_mesh(const Json& c) {
  Shape sizes = c["mesh"]["sizes"].get<Shape>();
  std::vector<std::string> names = c["mesh"]["names"];
  if (!multi_process) return make_mesh(sizes, names);
  const int64_t count =
      std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<int64_t>());
  return make_mesh(sizes, names, firsts_of_each_process(count / process_count()));
}

// Whether case `c` can run here: in several processes its mesh must split evenly over them.
bool runs_here(const Json& c) {
  if (!multi_process || !c.contains("mesh")) return true;
  Shape sizes = c["mesh"]["sizes"].get<Shape>();
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<int64_t>()) %
             process_count() ==
         0;
}

// An output whole in every process.
Array fetched(const Array& x) { return multi_process ? process_allgather(x) : x; }

// ---- arrays ----

DType parse_dtype(const std::string& name) {
  for (DType dt : {DType::kBool, DType::kInt32, DType::kInt64, DType::kUInt32, DType::kFloat16,
                   DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    if (dtype_name(dt) == name) return dt;
  }
  throw std::runtime_error("unknown dtype in the corpus: " + name);
}

Array decode(const Json& j) {
  Shape shape = j["shape"].get<Shape>();
  DType dt = parse_dtype(j["dtype"]);
  if (dt == DType::kUInt32)
    return Array::from_vector(j["data"].get<std::vector<uint32_t>>(), shape);
  if (is_floating(dt)) {
    return Array::from_vector(j["data"].get<std::vector<float>>(), shape).astype(dt);
  }
  return Array::from_vector(j["data"].get<std::vector<int32_t>>(), shape).astype(dt);
}

// One unit in the last place at magnitude `x` (bfloat16: its own ulp).
double ulp_at(double x, DType dt) {
  float f = std::max(std::fabs(static_cast<float>(x)), std::numeric_limits<float>::min());
  double u = std::nextafter(f, std::numeric_limits<float>::infinity()) - f;
  return dt == DType::kBFloat16 ? u * 65536 : u;
}

// The largest ulp distance seen in inexact cases, printed at the end (the bound's headroom).
double max_ulps_seen = 0;

class ReportUlps : public testing::Environment {
 public:
  void TearDown() override {
    std::printf("oracle: largest difference in inexact cases: %.2f ulp (bound %.0f)\n",
                max_ulps_seen, kInexactUlps);
  }
};
const testing::Environment* const kReportUlps = testing::AddGlobalTestEnvironment(new ReportUlps);

void expect_equal(const Array& got, const Json& want, bool exact) {
  ASSERT_EQ(dtype_name(got.dtype()), want["dtype"].get<std::string>());
  ASSERT_EQ(got.shape(), want["shape"].get<Shape>());
  const Json& data = want["data"];
  if (!is_floating(got.dtype())) {
    std::vector<int64_t> v = got.to_vector<int64_t>();
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], data[i].get<int64_t>()) << "at " << i;
    return;
  }
  // Inexact results are compared in ulps of the largest expected magnitude: a later step may
  // cancel most of a value whose rounding differed.
  std::vector<float> v = got.to_vector<float>();
  double scale = 0;
  for (const Json& w : data) scale = std::max(scale, std::fabs(w.get<double>()));
  double unit = ulp_at(scale, got.dtype());
  for (size_t i = 0; i < v.size(); ++i) {
    float w = data[i].get<float>();
    if (std::isnan(v[i]) && std::isnan(w)) continue;
    if (exact) {
      ASSERT_EQ(std::bit_cast<uint32_t>(v[i]), std::bit_cast<uint32_t>(w))
          << "at " << i << ": " << v[i] << " vs " << w;
      continue;
    }
    double off = std::fabs(static_cast<double>(v[i]) - w) / unit;
    max_ulps_seen = std::max(max_ulps_seen, off);
    ASSERT_LE(off, kInexactUlps) << "at " << i << ": " << v[i] << " vs " << w;
  }
}

// ---- the body language ----

AxisNames axes_of(const Json& step) {
  return AxisNames(step["axes"].get<std::vector<std::string>>());
}

AxisIndexGroups groups_of(const Json& step) {
  return step.contains("groups") ? step["groups"].get<AxisIndexGroups>() : AxisIndexGroups{};
}

Array apply_step(const Json& s, const Array& v, const std::vector<Array>& args) {
  const std::string op = s["op"];
  if (op == "psum") return psum(v, axes_of(s), {groups_of(s)});
  if (op == "pmean") return pmean(v, axes_of(s), {groups_of(s)});
  if (op == "pmax") return pmax(v, axes_of(s), {groups_of(s)});
  if (op == "pmin") return pmin(v, axes_of(s), {groups_of(s)});
  if (op == "all_gather") {
    To to = s.value("to", "varying") == "invarying" ? To::kInvariant : To::kVarying;
    return all_gather(
        v, axes_of(s),
        {.axis = s["axis"], .tiled = s["tiled"], .to = to, .axis_index_groups = groups_of(s)});
  }
  if (op == "pswapaxes")
    return pswapaxes(v, axes_of(s), s["axis"], {.axis_index_groups = groups_of(s)});
  if (op == "psum_scatter") {
    return psum_scatter(
        v, axes_of(s),
        {.scatter_dimension = s["dim"], .tiled = s["tiled"], .axis_index_groups = groups_of(s)});
  }
  if (op == "all_to_all") {
    return all_to_all(v, axes_of(s), s["split"], s["concat"],
                      {.tiled = s["tiled"], .axis_index_groups = groups_of(s)});
  }
  if (op == "ppermute")
    return ppermute(v, axes_of(s), s["perm"].get<std::vector<std::pair<int, int>>>());
  if (op == "pshuffle") return pshuffle(v, axes_of(s), s["perm"].get<std::vector<int>>());
  if (op == "pargmax") return pargmax(v, axes_of(s));
  if (op == "pargmin") return pargmin(v, axes_of(s));
  if (op == "add_axis_index") return v + axis_index(axes_of(s));
  if (op == "mul_axis_size") return v * axis_size(axes_of(s));
  if (op == "add_arg1") return v + args.at(1);
  if (op == "pvary") return pcast(v, axes_of(s), To::kVarying);
  throw std::runtime_error("unknown op in the corpus: " + op);
}

Array run_body(const Json& steps, const std::vector<Array>& args) {
  Array v = args[0];
  for (const Json& s : steps) v = apply_step(s, v, args);
  return v;
}

// Calls `mapped` with the case's one or two inputs.
template <class Mapped>
Array call(const Mapped& mapped, const std::vector<Array>& inputs) {
  return inputs.size() == 1 ? Array(mapped(inputs[0])) : Array(mapped(inputs[0], inputs[1]));
}

// A body for one or two arguments.
auto body_of(const Json& steps) {
  return [&steps](const auto&... blocks) { return run_body(steps, {blocks...}); };
}

// ---- shard_map ----

PartitionSpec spec_of(const Json& j) {
  std::vector<PartitionSpec::Entry> entries;
  for (const Json& e : j) {
    if (e.is_null()) {
      entries.emplace_back(None);
    } else if (e.is_string()) {
      entries.emplace_back(e.get<std::string>());
    } else {
      entries.emplace_back(e.get<std::vector<std::string>>());
    }
  }
  return PartitionSpec(std::move(entries));
}

// The inputs of a call over `mesh`, each placed by its spec (one spec for all, or one each).
std::vector<Array> placed_inputs(const std::vector<Array>& inputs, const Mesh& mesh,
                                 const std::vector<PartitionSpec>& specs) {
  std::vector<Array> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    out.push_back(specs.empty() ? inputs[i]
                                : placed(inputs[i], mesh, specs[std::min(i, specs.size() - 1)]));
  }
  return out;
}

Array run_shard_map(const Json& c, const std::vector<Array>& inputs) {
  Mesh mesh = case_mesh(c);
  std::vector<PartitionSpec> in_specs;
  for (const Json& s : c["in_specs"]) in_specs.push_back(spec_of(s));
  auto f = shard_map(body_of(c["body"]), mesh, Specs(in_specs), spec_of(c["out_spec"]),
                     {.check_vma = c["check_vma"], .name = "body"});
  return fetched(call(f, placed_inputs(inputs, mesh, in_specs)));
}

// ---- vmap, at top level or in a shard_map body over "i" ----

Array run_vmap(const Json& c, const std::vector<Array>& inputs) {
  const Json& v = c["vmap"];
  auto mapped = vmap(body_of(c["body"]), {v["in_axes"].get<int>()}, {v["out_axes"].get<int>()},
                     {.axis_name = v["axis_name"], .name = "body"});
  if (!c.contains("mesh")) return call(mapped, inputs);
  Mesh mesh = case_mesh(c);
  auto f = shard_map([&mapped](const auto&... blocks) { return Array(mapped(blocks...)); }, mesh,
                     P("i"), P("i"), {.check_vma = c["check_vma"], .name = "body"});
  return fetched(call(f, placed_inputs(inputs, mesh, {P("i")})));
}

// ---- a shard_map over the context mesh in a shard_map body ----

std::vector<PartitionSpec> specs_of(const Json& j) {
  std::vector<PartitionSpec> specs;
  for (const Json& s : j) specs.push_back(spec_of(s));
  return specs;
}

Array run_nested(const Json& c, const std::vector<Array>& inputs) {
  Mesh mesh = case_mesh(c);
  const bool check = c["check_vma"];
  auto outer_body = [&](const auto&... blocks) {
    auto inner = shard_map(body_of(c["body"]), Specs(specs_of(c["inner_in_specs"])),
                           spec_of(c["inner_out_spec"]), {.check_vma = check, .name = "body"});
    return Array(inner(blocks...));
  };
  auto outer_axes = c["outer_axes"].get<std::set<std::string>>();
  auto f = shard_map(outer_body, mesh, Specs(specs_of(c["in_specs"])), spec_of(c["out_spec"]),
                     {.check_vma = check, .axis_names = outer_axes, .name = "outer_body"});
  return fetched(call(f, placed_inputs(inputs, mesh, specs_of(c["in_specs"]))));
}

// ---- pmap ----

std::vector<MapAxis> map_axes(const Json& j) {
  std::vector<MapAxis> axes;
  for (const Json& a : (j.is_array() ? j : Json::array({j}))) {
    axes.push_back(a.is_null() ? MapAxis(std::nullopt) : MapAxis(a.get<int>()));
  }
  return axes;
}

PmapOptions pmap_options(const Json& level) {
  PmapOptions o{.in_axes = map_axes(level["in_axes"]), .out_axes = map_axes(level["out_axes"])};
  if (level.contains("devices")) {
    std::vector<Device> devs;
    for (int d : level["devices"]) devs.push_back(devices().at(d));
    o.devices = devs;
  }
  if (level.contains("axis_size")) o.axis_size = level["axis_size"].get<int64_t>();
  return o;
}

template <class F>
auto make_pmap(bool legacy_impl, F f, const Json& level) {
  return legacy_impl ? legacy::pmap(std::move(f), level["axis_name"], pmap_options(level))
                     : compat::pmap(std::move(f), level["axis_name"], pmap_options(level));
}

// The size a one-level pmap case maps (every mapped input agrees in the cases that run in
// several processes).
int64_t mapped_size_of(const Json& c) {
  const std::vector<MapAxis> axes = map_axes(c["levels"][0]["in_axes"]);
  for (size_t i = 0; i < c["inputs"].size(); ++i) {
    const std::optional<int> a = axes[std::min(i, axes.size() - 1)];
    if (!a) continue;
    const Shape shape = c["inputs"][i]["shape"].get<Shape>();
    const int rank = static_cast<int>(shape.size());
    if (*a >= -rank && *a < rank) return shape[(*a + rank) % rank];
  }
  return -1;
}

// Why a pmap case does not run in several processes ("" when it does): legacy JAX's multi-process
// pmap maps one level over every process's devices, each process passing its devices' slices, so
// nests, explicit device lists, axis_size and the argument errors of one process do not carry
// over.
std::string not_across_processes(const Json& c) {
  const Json& level = c["levels"][0];
  if (c["levels"].size() > 1) return "nested pmap across processes is NotImplementedError";
  if (level.contains("devices") || level.contains("axis_size")) {
    return "its devices or axis_size name one process's layout";
  }
  if (c.contains("error") || (c.contains("spmd") && c["spmd"].contains("error"))) {
    return "it is an argument error of a one-process call";
  }
  const int64_t n = mapped_size_of(c);
  if (n <= 0 || n % process_count() != 0) return "its mapped size does not split over processes";
  return "";
}

// A one-level pmap case in several processes: each process passes the slices of the first
// n / process_count() devices it owns (given as pmap's devices when that is not all of them) and
// gets its part of the result, made global and gathered so that it reads the whole result.
Array run_pmap_processes(const Json& c, const std::vector<Array>& inputs, bool legacy_impl) {
  const Json& level = c["levels"][0];
  const int64_t per_process = mapped_size_of(c) / process_count();
  const std::vector<Device> chosen = firsts_of_each_process(per_process);
  PmapOptions options = pmap_options(level);
  if (per_process != static_cast<int64_t>(local_devices().size())) options.devices = chosen;
  const std::vector<MapAxis> in_axes = options.in_axes;
  std::vector<Array> mine;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::optional<int> a = in_axes[std::min(i, in_axes.size() - 1)];
    if (!a) {
      mine.push_back(inputs[i]);
      continue;
    }
    const int rank = inputs[i].ndim();
    std::vector<int64_t> start(rank, 0), stop(inputs[i].shape());
    const int axis = (*a + rank) % rank;
    start[axis] = process_index() * per_process;
    stop[axis] = start[axis] + per_process;
    mine.push_back(slice(inputs[i], start, stop));
  }
  const std::string name = level["axis_name"];
  auto body = body_of(c["body"]);
  Array local_result = legacy_impl ? call(legacy::pmap(body, name, options), mine)
                                   : call(compat::pmap(body, name, options), mine);
  const std::optional<int> out = options.out_axes[0];
  if (!out) {
    // Unstacked: each process has its first device's value, as in legacy JAX; the single-process
    // result is process 0's.
    std::vector<Device> firsts;
    for (int p = 0; p < process_count(); ++p) firsts.push_back(chosen[p * per_process]);
    Mesh processes(firsts, {process_count()}, {"p"});
    Array all = process_allgather(
        host_local_array_to_global_array(expand_dims(local_result, 0), processes, P("p")));
    return take(all, 0, 0);
  }
  const int axis = *out < 0 ? *out + local_result.ndim() : *out;
  Mesh flat(chosen, {static_cast<int64_t>(chosen.size())}, {"i"});
  return process_allgather(
      host_local_array_to_global_array(local_result, flat, internal::axis_spec(axis, "i")));
}

Array run_pmap(const Json& c, const std::vector<Array>& inputs, bool legacy_impl) {
  if (multi_process) return run_pmap_processes(c, inputs, legacy_impl);
  const Json& levels = c["levels"];
  if (levels.size() == 1)
    return call(make_pmap(legacy_impl, body_of(c["body"]), levels[0]), inputs);
  auto inner = make_pmap(legacy_impl, body_of(c["body"]), levels[1]);
  auto outer_body = [&inner](const auto&... blocks) { return Array(inner(blocks...)); };
  return call(make_pmap(legacy_impl, outer_body, levels[0]), inputs);
}

// ---- jax.random ----

Array run_prng(const Json& c) {
  using namespace random;  // NOLINT: mirrors jax.random
  Array key = PRNGKey(c["seed"].get<int64_t>());
  const std::string op = c["op"];
  if (op == "key") return key;
  if (op == "split") return split(key, c["num"].get<int64_t>());
  if (op == "fold_in") return fold_in(key, c["data"].get<uint32_t>());
  Shape shape = c["shape"].get<Shape>();
  if (op == "bits") return bits(key, shape);
  Array x = op == "uniform" ? uniform(key, shape, DType::kFloat32, c["minval"].get<double>(),
                                      c["maxval"].get<double>())
                            : normal(key, shape);
  std::vector<float> v = x.to_vector<float>();
  std::vector<uint32_t> words(v.size());
  for (size_t i = 0; i < v.size(); ++i) words[i] = std::bit_cast<uint32_t>(v[i]);
  return Array::from_vector(words, shape);
}

// ---- checking ----

std::string error_class(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ValueError&) {
    return "ValueError";
  } catch (const TypeError&) {
    return "TypeError";
  } catch (const NameError&) {
    return "NameError";
  } catch (const IndexError&) {
    return "IndexError";
  } catch (const NotImplementedError&) {
    return "NotImplementedError";
  } catch (const RuntimeError&) {
    return "RuntimeError";
  } catch (const std::exception& other) {
    return std::string("other: ") + other.what();
  }
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
}

// Runs `run` and compares its result with the case's (or spmd's deliberate) expectation.
template <class Run>
void check(const std::string& key, const Json& c, Run run, const std::vector<Array>& inputs) {
  const Json& want = c.contains("spmd") ? c["spmd"] : c;
  if (c.contains("spmd"))
    testing::Test::RecordProperty("deliberate_difference", c["spmd"]["reason"].get<std::string>());
  std::exception_ptr error;
  Array got;
  try {
    got = run(inputs);
  } catch (...) {
    error = std::current_exception();
  }
  compare_across_runs(key, error ? "error " + error_class(error) : digest(got));
  if (want.contains("error")) {
    const Json& e = want["error"];
    // A deliberate difference states the class and key phrase only (no JAX message).
    const std::string jax_message = e.value("message", std::string("(none: spmd's own error)"));
    ASSERT_TRUE(error) << "JAX raised " << e["class"] << ": " << jax_message << "\nspmd returned "
                       << got.str();
    EXPECT_EQ(error_class(error), e["class"].get<std::string>()) << message_of(error);
    EXPECT_NE(message_of(error).find(e["key"].get<std::string>()), std::string::npos)
        << "key phrase: " << e["key"] << "\nspmd: " << message_of(error)
        << "\nJAX: " << jax_message;
    return;
  }
  ASSERT_FALSE(error) << error_class(error) << ": " << message_of(error);
  expect_equal(got, want["output"], c.value("exact", true));
}

std::vector<Array> inputs_of(const Json& c) {
  std::vector<Array> inputs;
  for (const Json& j : c["inputs"]) inputs.push_back(decode(j));
  return inputs;
}

class ShardMapOracle : public testing::TestWithParam<CaseRef> {};
TEST_P(ShardMapOracle, MatchesJax) {
  const Json& c = case_json(GetParam());
  if (!runs_here(c))
    GTEST_SKIP() << "its mesh does not split over " << process_count() << " processes";
  SCOPED_TRACE(c.dump().substr(0, 2000));
  check(
      key_of(GetParam()), c, [&](const std::vector<Array>& in) { return run_shard_map(c, in); },
      inputs_of(c));
}
INSTANTIATE_TEST_SUITE_P(Jax0102, ShardMapOracle, testing::ValuesIn(cases_of("shard_map")),
                         case_name);

class PmapOracle : public testing::TestWithParam<CaseRef> {};
TEST_P(PmapOracle, MatchesJax) {
  const Json& c = case_json(GetParam());
  if (multi_process) {
    const std::string why = not_across_processes(c);
    if (!why.empty()) GTEST_SKIP() << why;
  }
  SCOPED_TRACE(c.dump().substr(0, 2000));
  bool legacy_impl = GetParam().suite == "legacy_pmap";
  check(
      key_of(GetParam()), c,
      [&](const std::vector<Array>& in) { return run_pmap(c, in, legacy_impl); }, inputs_of(c));
}
// jax 0.10.2's pmap runs on shard_map: spmd's compat shim. jax 0.7.2's is the legacy one.
INSTANTIATE_TEST_SUITE_P(CompatVsJax0102, PmapOracle, testing::ValuesIn(cases_of("pmap")),
                         case_name);
INSTANTIATE_TEST_SUITE_P(LegacyVsJax072, PmapOracle, testing::ValuesIn(cases_of("legacy_pmap")),
                         case_name);

class VmapOracle : public testing::TestWithParam<CaseRef> {};
TEST_P(VmapOracle, MatchesJax) {
  const Json& c = case_json(GetParam());
  if (!runs_here(c))
    GTEST_SKIP() << "its mesh does not split over " << process_count() << " processes";
  SCOPED_TRACE(c.dump().substr(0, 2000));
  check(
      key_of(GetParam()), c, [&](const std::vector<Array>& in) { return run_vmap(c, in); },
      inputs_of(c));
}
INSTANTIATE_TEST_SUITE_P(Jax0102, VmapOracle, testing::ValuesIn(cases_of("vmap")), case_name);

class NestedOracle : public testing::TestWithParam<CaseRef> {};
TEST_P(NestedOracle, MatchesJax) {
  const Json& c = case_json(GetParam());
  if (!runs_here(c))
    GTEST_SKIP() << "its mesh does not split over " << process_count() << " processes";
  SCOPED_TRACE(c.dump().substr(0, 2000));
  check(
      key_of(GetParam()), c, [&](const std::vector<Array>& in) { return run_nested(c, in); },
      inputs_of(c));
}
INSTANTIATE_TEST_SUITE_P(Jax0102, NestedOracle, testing::ValuesIn(cases_of("nested_shard_map")),
                         case_name);

class PrngOracle : public testing::TestWithParam<CaseRef> {};
TEST_P(PrngOracle, MatchesJax) {
  const Json& c = case_json(GetParam());
  SCOPED_TRACE(c.dump());
  Array got = run_prng(c);
  expect_equal(got, c["output"], true);
}
INSTANTIATE_TEST_SUITE_P(Jax0102, PrngOracle, testing::ValuesIn(cases_of("prng")), case_name);

}  // namespace
}  // namespace spmd

// 8 CPU devices in one process, or the devices of a run spmd-run started (SPMD_NUM_PROCESSES).
int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  spmd::multi_process = std::getenv("SPMD_NUM_PROCESSES") != nullptr;
  if (spmd::multi_process) {
    spmd::distributed::initialize();
  } else {
    spmd::initialize({.cpu_devices = 8});
  }
  const int status = RUN_ALL_TESTS();
  if (spmd::multi_process) spmd::distributed::shutdown();
  return status;
}
