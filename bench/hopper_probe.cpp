// hopper_probe: correctness and speed of templates/hopper_fwd.cuh on an sm_90a GPU. Over 600
// lines: one standalone binary (check, sanitizer shapes, interleaved A/B timing, compile-only)
// is what a GPU round carries, and its lists of configs are the record of what was A/B'd.
//
// Builds each variant's source (HopperPrologue + the template, embedded or read from
// --template FILE), compiles it with NVRTC for the device's arch, encodes the call's TMA
// tensor maps and launches. --check compares o and lse (outputs poisoned with NaN first) with
// the float64 CPU reference over ragged, GQA/MQA, Nq != Nk and head-major shapes, for bf16
// and fp16, d64/d128/d192/d256, causal and not, and 1-3 consumer warpgroups. --small runs one
// small shape per head dim (for compute-sanitizer). --time times big shapes for several tile
// variants next to the library's FA-2 default (CUDA events, interleaved rounds, median of 30);
// --sweep times hidden 2048, B * N = 16k for N = 512 ... 16k instead; --short only --time's
// short-sequence shapes (N 512 and 1k); --d64 the d64 tiles of session 13 (blocks per SM) over
// N 512 ... 16k; --ab14 session 14's A/B (persistent tiles with and without a __syncwarp());
// --ab15 session 15's d64 A/B (one consumer warpgroup without the overlap, four blocks per SM);
// --ab16 session 16's d64 tiles without the overlap (64x80 at four blocks per SM, 64x112 and
// 64x128 at three: S in two wgmma halves) against the shipped d64 tiles, and the d128 / d256
// winners at N 16k. (Session 16 ran it with the knobs FT_HOPPER_SPLIT_S and FT_HOPPER_DESC_ADD,
// at commit b74e67e; both are now the template's own.)
//
// --ab27 session 27's A/B: FT_HOPPER_RESCALE_THRESHOLD=8 against 0 on the grid's tuned winners
// (d256, d128, d64); --ab28 the same on the tiles it left out (session 28: d128 with three
// warpgroups gained, the two-warpgroup tiles lost); --ab31 FT_HOPPER_CAUSAL_ROTATE=1 against 0 on
// persistent causal tiles (session 31, prepared).
//
// --compile-only compiles every variant for sm_90a without a GPU and prints its registers.
//
// --dump DIR writes each compiled cubin to DIR (for cuobjdump). --define NAME=VALUE[,NAME=VALUE]
// compiles every variant with those template knobs (its name gets the knobs appended).
//
// usage: hopper_probe [--check] [--small] [--time] [--short] [--sweep] [--d64] [--ab14] [--ab15] [--ab16] [--ab27] [--ab28] [--ab31] [--compile-only] [--template FILE] [--only SUBSTRING]
//                     [--dump DIR] [--define NAME=VALUE]
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "flashtune/compiler.h"
#include "flashtune/driver.h"
#include "flashtune/kernel.h"
#include "flashtune/reference.h"
#include "flashtune/source.h"
#include "flashtune/space.h"
#include "generator/embedded_templates.h"
#include "generator/hopper_fwd_pack.h"
#include "tests/support/gpu_fixture.h"

using namespace flashtune;
using detail::HopperConfig;

namespace {

#define CHECK_OK(expr)                                                                      \
  do {                                                                                      \
    Status s_ = (expr);                                                                     \
    if (!s_.ok()) {                                                                         \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, s_.ToString().c_str());       \
      std::exit(2);                                                                         \
    }                                                                                       \
  } while (0)

template <typename T>
T Must(Result<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, r.status().ToString().c_str());
    std::exit(2);
  }
  return std::move(*r);
}

// The GPU fixture the GPU tests use (tests/support/gpu_fixture.h); --compile-only keeps an
// unopened one (no driver).
using Gpu = flashtune::testing::Gpu;

std::string g_template;  // the template text
std::string g_dump_dir;  // --dump DIR: write each compiled cubin there
std::string g_define;    // --define NAME=VALUE: a template knob for every variant without one

// A config plus an optional template knob (an NVRTC -D option) for A/B experiments.
struct Probe {
  HopperConfig config;
  std::string define;  // "" or e.g. "FT_HOPPER_LAZY_RESCALE=1" (comma-separated for several)
  bool operator==(const Probe&) const = default;
};

Probe Config(DType dt, int d, bool causal, int wgs, int bn, int stages, std::string define = "", bool persistent = false,
             bool pingpong = true, bool overlap = true) {
  if (define.empty()) define = g_define;
  return Probe{HopperConfig{dt, d, causal, 64 * wgs, bn, wgs, stages, persistent, pingpong && wgs > 1, overlap},
               std::move(define)};
}
// A persistent variant (causal: longest-first tile order).
Probe Persistent(DType dt, int d, bool causal, int wgs, int bn, int stages) {
  return Config(dt, d, causal, wgs, bn, stages, "", true);
}
// The A/B switches off: no ping-pong; no intra-warpgroup overlap.
Probe NoPingPong(DType dt, int d, bool causal, int wgs, int bn, int stages) {
  return Config(dt, d, causal, wgs, bn, stages, "", false, false);
}
Probe NoOverlap(DType dt, int d, bool causal, int wgs, int bn, int stages, bool persistent = false) {
  return Config(dt, d, causal, wgs, bn, stages, "", persistent, true, false);
}

// The kernel name: the URI, plus the knob when there is one ("..._FT_HOPPER_LAZY_RESCALE_1").
std::string Name(const Probe& p) {
  std::string name = detail::HopperUri(p.config);
  if (!p.define.empty()) {
    std::string tag = p.define;
    std::replace(tag.begin(), tag.end(), '=', '_');
    std::replace(tag.begin(), tag.end(), ',', '_');
    name += "_" + tag;
  }
  return name;
}

// A compiled, loaded variant.
struct Loaded {
  Probe probe;
  std::string uri;
  std::optional<Module> module;
  std::optional<Function> function;
  int registers = 0, spills = 0;
};

std::map<std::string, std::unique_ptr<Loaded>> g_loaded;

// Compiles every config not loaded yet (in parallel), then loads them.
void LoadAll(Gpu& gpu, const std::vector<Probe>& probes) {
  Compiler compiler(Compiler::Options{});
  std::vector<CompileRequest> requests;
  std::vector<Probe> todo;
  for (const Probe& p : probes) {
    const std::string name = Name(p);
    if (g_loaded.count(name) || std::find(todo.begin(), todo.end(), p) != todo.end()) continue;
    CHECK_OK(detail::CheckHopperConfig(p.config));
    // As the library compiles generated sources, plus the A/B knob.
    CompileRequest request =
        GeneratedSourceRequest(name, detail::HopperPrologue(p.config, name) + g_template, gpu.driver ? gpu.info.Arch() : "sm_90a");
    for (size_t from = 0; from < p.define.size();) {  // "A=1,B=3": one -D each
      const size_t comma = std::min(p.define.find(',', from), p.define.size());
      request.options.push_back("-D" + p.define.substr(from, comma - from));
      from = comma + 1;
    }
    requests.push_back(std::move(request));
    todo.push_back(p);
  }
  auto cubins = compiler.CompileMany(requests);
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!cubins[i].ok()) {
      std::fprintf(stderr, "compile %s failed: %s\n", requests[i].name.c_str(), cubins[i].status().ToString().c_str());
      std::exit(2);
    }
    auto l = std::make_unique<Loaded>();
    l->probe = todo[i];
    l->uri = requests[i].name;
    l->registers = cubins[i]->resources.registers;
    l->spills = cubins[i]->resources.spill_store_bytes;
    if (cubins[i]->log.find("C7508") != std::string::npos || cubins[i]->log.find("C7515") != std::string::npos ||
        cubins[i]->log.find("C7520") != std::string::npos || cubins[i]->log.find("serializ") != std::string::npos ||
        cubins[i]->log.find("arning") != std::string::npos)
      std::printf("ptxas note for %s:\n%s\n", l->uri.c_str(), cubins[i]->log.c_str());
    if (!g_dump_dir.empty()) {
      std::ofstream out(g_dump_dir + "/" + l->uri + ".cubin", std::ios::binary);
      out.write(cubins[i]->image.data(), std::streamsize(cubins[i]->image.size()));
    }
    if (gpu.driver == nullptr) {  // --compile-only: report and keep nothing
      std::printf("  %-50s %3d regs, %d spill bytes, %lld smem bytes\n", l->uri.c_str(), l->registers, l->spills,
                  (long long)detail::HopperSmemBytes(todo[i].config));
      continue;
    }
    l->module.emplace(Must(Module::Load(*gpu.context, *cubins[i]), "module load"));
    l->function.emplace(Must(l->module->GetFunction(l->uri), "get function"));
    CHECK_OK(l->function->SetMaxDynamicSharedMemory(int(detail::HopperSmemBytes(todo[i].config))));
    g_loaded[l->uri] = std::move(l);
  }
}

Loaded& Get(const Probe& p) { return *g_loaded.at(Name(p)); }

Status LaunchHopper(Gpu& gpu, const Probe& p, const ForwardArgs& args) {
  Loaded& l = Get(p);
  LaunchPacket packet;
  FT_RETURN_IF_ERROR(detail::PackHopper(p.config, args, gpu.info.sm_count, &packet));
  FT_RETURN_IF_ERROR(EncodeTensorMaps(*gpu.driver, &packet));
  void* params[] = {packet.args};
  return Launch(*l.function, {packet.grid[0], packet.grid[1], packet.grid[2]},
                {packet.block[0], packet.block[1], packet.block[2]}, packet.smem_bytes, gpu.stream->get(), params);
}

// The GPU tests' shapes and cases (tests/support/gpu_fixture.h); here o takes q's strides, so a
// head-major shape writes a head-major o.
using flashtune::testing::Shape;
using Case = flashtune::testing::ForwardCase;

std::unique_ptr<Case> MakeCase(Gpu& gpu, DType dt, int d, bool causal, const Shape& s, uint64_t seed, bool reference,
                               double key_ramp = 0) {
  return Must(flashtune::testing::MakeForwardCase(gpu, ProblemClass{dt, d, causal}, s, seed,
                                                  {.reference = reference, .o_like_q = true, .key_ramp = key_ramp}),
              "test case");
}

std::string ShapeText(const Shape& s) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "B%lld Nq%lld Nk%lld Hq%lld Hkv%lld%s", (long long)s.batch, (long long)s.seqlen_q,
                (long long)s.seqlen_k, (long long)s.heads_q, (long long)s.heads_kv, s.head_major ? " head-major" : "");
  return buf;
}

// Runs `c` with poisoned outputs; "" when o and lse match the reference, else why not.
std::string RunAndCompare(Gpu& gpu, const Probe& config, Case& c, bool with_lse) {
  CHECK_OK(c.dout->Memset(0xFF));
  CHECK_OK(c.dlse->Memset(0xFF));
  ForwardArgs args = c.device;
  if (!with_lse) args.lse = nullptr;
  Status launched = LaunchHopper(gpu, config, args);
  if (!launched.ok()) return "launch: " + launched.ToString();
  Status done = gpu.stream->Synchronize();
  if (!done.ok()) return "sync: " + done.ToString();
  std::vector<uint16_t> o(c.q.size());
  std::vector<float> lse(c.expected.lse.size());
  CHECK_OK(c.dout->CopyToHost(o.data(), o.size() * 2));
  CHECK_OK(c.dlse->CopyToHost(lse.data(), lse.size() * 4));
  const std::vector<double> actual = GatherOutput(c.host, o.data());
  const double err = RelativeL2Error(actual, c.expected.o);
  const LseComparison lse_cmp = CompareLse(lse, c.expected.lse);
  const double tol = c.host.problem.dtype == DType::kBF16 ? 1e-2 : 2e-3;
  bool lse_ok = lse_cmp.Within(1e-3);
  if (!with_lse) {  // lse must be untouched (still NaN everywhere)
    lse_ok = std::all_of(lse.begin(), lse.end(), [](float x) { return std::isnan(x); });
  }
  if (err <= tol && lse_ok) return "";
  // Where it goes wrong: rows (b, i, h) whose own error exceeds the tolerance.
  const int64_t d = c.host.problem.head_dim, H = c.host.problem.heads_q, N = c.host.problem.seqlen_q;
  int64_t bad_rows = 0, first_bad = -1;
  for (int64_t row = 0; row < int64_t(actual.size()) / d; ++row) {
    double num = 0, den = 0;
    for (int64_t x = 0; x < d; ++x) {
      const double e = c.expected.o[row * d + x], a = actual[row * d + x];
      num += (a - e) * (a - e);
      den += e * e;
    }
    if (!(num <= tol * tol * std::max(den, 1e-30)) && !(den == 0 && num == 0)) {
      ++bad_rows;
      if (first_bad < 0) first_bad = row;
    }
  }
  char buf[512];
  std::string detail;
  if (first_bad >= 0) {
    const int64_t h = first_bad % H, i = (first_bad / H) % N, b = first_bad / H / N;
    std::snprintf(buf, sizeof buf, "; %lld bad rows, first b%lld i%lld h%lld: o[0..3] = %.4g %.4g %.4g %.4g vs %.4g %.4g %.4g %.4g",
                  (long long)bad_rows, (long long)b, (long long)i, (long long)h, actual[first_bad * d],
                  actual[first_bad * d + 1], actual[first_bad * d + 2], actual[first_bad * d + 3],
                  c.expected.o[first_bad * d], c.expected.o[first_bad * d + 1], c.expected.o[first_bad * d + 2],
                  c.expected.o[first_bad * d + 3]);
    detail = buf;
  }
  std::snprintf(buf, sizeof buf, "o error %.3g (tol %.0e), lse error %.3g (worst %lld), -inf mismatches %lld%s", err,
                tol, lse_cmp.max_error, (long long)lse_cmp.worst_index, (long long)lse_cmp.infinity_mismatches,
                with_lse ? "" : " [lse=null run]");
  return buf + detail;
}

// --only A,B,...: any of the comma-separated substrings.
bool Wanted(const std::string& only, const std::string& uri) {
  if (only.empty()) return true;
  size_t from = 0;
  while (from <= only.size()) {
    const size_t comma = std::min(only.find(',', from), only.size());
    if (comma > from && uri.find(only.substr(from, comma - from)) != std::string::npos) return true;
    from = comma + 1;
  }
  return false;
}

// --check / --small: every config of a class against every shape of that class.
int Check(Gpu& gpu, bool small, const std::string& only) {
  const std::vector<Shape> full_shapes = {
      {1, 1, 1, 1, 1, false},      {2, 17, 17, 2, 2, false},    {1, 127, 127, 8, 1, false},  // GQA 8:1
      {1, 128, 128, 4, 1, true},   {1, 1000, 1000, 2, 2, true}, {1, 4097, 4097, 1, 1, false},
      {1, 127, 1000, 2, 1, false}, {2, 1000, 127, 2, 2, false},  // Nq < Nk; Nq > Nk (masked rows when causal)
      {1, 300, 300, 4, 1, false},  // MQA
      {2, 1000, 1000, 16, 4, false},  // more tiles than SMs: persistent blocks walk several
      {4, 700, 300, 16, 16, true},    // ... with tiles that see no key when causal
      // Last tiles of one live warpgroup (the split tail): 1024 = 5 x 192 + 64; 40 queries of
      // 1500 keys, causal (every row sees most of the keys).
      {1, 1024, 1024, 2, 1, false}, {2, 40, 1500, 4, 2, true},
  };
  const std::vector<Shape> small_shapes = {
      {1, 200, 300, 2, 1, false}, {1, 300, 130, 2, 2, true}, {8, 300, 100, 16, 4, false},
      {2, 500, 300, 32, 8, false}};  // more tiles than SMs: persistent blocks walk several (odd rounds too)
  const std::vector<Shape>& shapes = small ? small_shapes : full_shapes;
  struct Class {
    DType dt;
    int d;
    bool causal;
    std::vector<Probe> configs;
  };
  std::vector<Class> classes;
  for (DType dt : {DType::kBF16, DType::kF16})
    for (bool causal : {false, true}) {
      if (small && dt == DType::kF16) continue;
      // Persistent with an odd number of K/V blocks per tile: the ring's phases run on across
      // tiles (a consumer that restarted them hung: bn112, N 512).
      classes.push_back({dt, 64, causal,
                         {Config(dt, 64, causal, 2, 128, 2), Persistent(dt, 64, causal, 3, 128, 2),
                          NoOverlap(dt, 64, causal, 2, 128, 2), NoOverlap(dt, 64, causal, 3, 112, 2, true),
                          Persistent(dt, 64, causal, 1, 128, 2), Persistent(dt, 64, causal, 1, 64, 2),
                          NoOverlap(dt, 64, causal, 1, 64, 2),  // four blocks per SM (session 15)
                          // S in two wgmma halves: 64x128 and 64x112 at three blocks, 64x80 at four
                          NoOverlap(dt, 64, causal, 1, 128, 2), NoOverlap(dt, 64, causal, 1, 112, 2),
                          NoOverlap(dt, 64, causal, 1, 80, 2)}});
      classes.push_back({dt, 128, causal, {Config(dt, 128, causal, 2, 128, 2), Persistent(dt, 128, causal, 2, 176, 2)}});
      classes.push_back({dt, 256, causal, {Config(dt, 256, causal, 2, 80, 2), Persistent(dt, 256, causal, 2, 80, 2)}});
      if (!small) {
        classes[classes.size() - 3].configs.push_back(Config(dt, 64, causal, 3, 128, 2));
        classes[classes.size() - 3].configs.push_back(Config(dt, 64, causal, 1, 64, 3));
        classes[classes.size() - 3].configs.push_back(NoOverlap(dt, 64, causal, 3, 192, 2));
        classes[classes.size() - 3].configs.push_back(NoPingPong(dt, 64, causal, 3, 128, 2));
        classes[classes.size() - 3].configs.push_back(Persistent(dt, 64, causal, 2, 64, 2));
        // Three and four blocks per SM (one consumer warpgroup, 136 and 104 registers).
        classes[classes.size() - 3].configs.push_back(Config(dt, 64, causal, 1, 80, 2));
        classes[classes.size() - 3].configs.push_back(Config(dt, 64, causal, 1, 48, 2));
        classes[classes.size() - 3].configs.push_back(Persistent(dt, 64, causal, 1, 48, 2));
        classes[classes.size() - 3].configs.push_back(NoOverlap(dt, 64, causal, 1, 96, 2));  // three, S whole
        classes[classes.size() - 2].configs.push_back(Config(dt, 128, causal, 2, 176, 2));
        classes[classes.size() - 2].configs.push_back(Config(dt, 128, causal, 1, 96, 4));
        classes[classes.size() - 2].configs.push_back(Persistent(dt, 128, causal, 1, 96, 4));
        classes[classes.size() - 2].configs.push_back(NoOverlap(dt, 128, causal, 3, 128, 2));
        classes[classes.size() - 2].configs.push_back(NoOverlap(dt, 128, causal, 2, 128, 2, true));
        classes[classes.size() - 1].configs.push_back(NoOverlap(dt, 256, causal, 2, 80, 2));
        classes.push_back({dt, 192, causal, {Config(dt, 192, causal, 2, 112, 2)}});
      }
    }
  std::vector<Probe> all;
  for (auto& cls : classes) {
    std::vector<Probe> keep;
    for (auto& c : cls.configs)
      if (Wanted(only, Name(c))) keep.push_back(c);
    cls.configs = keep;
    all.insert(all.end(), keep.begin(), keep.end());
  }
  LoadAll(gpu, all);
  int pass = 0, fail = 0;
  uint64_t seed = 1000;
  for (auto& cls : classes) {
    if (cls.configs.empty()) continue;
    // Then shapes whose scores grow towards the first keys (key_ramp: a row's max rises block
    // after block as the kernel walks the keys backwards), for the rescale's every path.
    std::vector<std::pair<Shape, double>> cases;
    for (const Shape& s : shapes) cases.push_back({s, 0.0});
    for (const Shape& s : small ? std::vector<Shape>{{1, 300, 700, 2, 1, false}}
                                : std::vector<Shape>{{1, 4097, 4097, 1, 1, false}, {2, 1000, 1000, 2, 2, true}, {1, 127, 1000, 2, 1, false}})
      for (double ramp : {8.0, 60.0}) cases.push_back({s, ramp});
    for (const auto& [s, ramp] : cases) {
      auto c = MakeCase(gpu, cls.dt, cls.d, cls.causal, s, seed += 10, true, ramp);
      for (const Probe& config : cls.configs) {
        for (bool with_lse : {true, false}) {
          if (!with_lse && s.seqlen_q != 127) continue;  // one lse=null run per class
          const std::string why = RunAndCompare(gpu, config, *c, with_lse);
          const std::string uri = Get(config).uri;
          if (why.empty()) {
            ++pass;
          } else {
            ++fail;
            std::printf("FAIL %s %s%s: %s\n", uri.c_str(), ShapeText(s).c_str(),
                        flashtune::testing::KeyRampText(ramp).c_str(), why.c_str());
            std::fflush(stdout);
            if (why.rfind("sync", 0) == 0) {  // a fault poisons the context: stop here
              std::printf("check: %d passed, %d failed (stopped at a fault)\n", pass, fail);
              return 1;
            }
          }
        }
      }
    }
    std::printf("checked %s d%d %s: %zu configs x %zu shapes\n", std::string(DTypeName(cls.dt)).c_str(), cls.d,
                cls.causal ? "causal" : "full", cls.configs.size(), cases.size());
    std::fflush(stdout);
  }
  for (auto& [uri, l] : g_loaded)
    std::printf("  %-50s %3d regs, %d spill bytes, %lld smem bytes\n", uri.c_str(), l->registers, l->spills,
                (long long)detail::HopperSmemBytes(l->probe.config));
  std::printf("check: %d passed, %d failed\n", pass, fail);
  return fail == 0 ? 0 : 1;
}

// mode: "time", "short", "sweep" or "d64" (the command-line flag without dashes).
int Time(Gpu& gpu, const std::string& only, const std::string& mode) {
  const bool sweep = mode == "sweep", short_only = mode == "short";
  struct Row {
    std::string shape;
    std::string kernel;
    double ms, tflops;
  };
  std::vector<Row> rows;
  struct Bench {
    Shape shape;
    int d;
    bool causal;
    std::vector<Probe> configs;
  };
  const DType dt = DType::kBF16;
  std::vector<Bench> benches;
  if (mode == "ab14") {
    // Session 14: persistent tiles with and without the __syncwarp() that closes a tile
    // (FT_HOPPER_SYNCWARP_TILE=0 is the template before it: ptxas serialised the wgmmas of every
    // persistent variant, C7520), next to the non-persistent tile, on the grid's weak shapes and
    // at N 16k. (Measured and dropped in the same session, docs/perf-notes.md: a share of the
    // exponentials on the FMA pipe, the overlapped loop without its peeled block 0, one consumer
    // warpgroup at d128.)
    const std::string nosync = "FT_HOPPER_SYNCWARP_TILE=0";
    auto trio = [&](int d, bool causal, int wgs, int bn) {
      return std::vector<Probe>{Config(dt, d, causal, wgs, bn, 2), Persistent(dt, d, causal, wgs, bn, 2),
                                Config(dt, d, causal, wgs, bn, 2, nosync, true)};
    };
    auto join = [](std::vector<Probe> a, const std::vector<Probe>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    for (bool causal : {true, false}) {
      for (int64_t n : {512, 1024, 4096})
        benches.push_back({{16384 / n, n, n, 32, 32, false}, 64, causal, join(trio(64, causal, 1, 64), trio(64, causal, 3, 128))});
      benches.push_back({{1, 16384, 16384, 32, 32, false}, 64, causal, trio(64, causal, 3, 128)});
      for (int64_t n : {512, 1024, 16384})
        benches.push_back({{16384 / n, n, n, 16, 16, false}, 128, causal, join(trio(128, causal, 2, 128), trio(128, causal, 2, 176))});
      benches.push_back({{1, 8192, 8192, 32, 32, false}, 128, causal, trio(128, causal, 2, 128)});
      for (int64_t n : {512, 16384})
        benches.push_back({{16384 / n, n, n, 8, 8, false}, 256, causal, join(trio(256, causal, 2, 64), trio(256, causal, 2, 80))});
    }
  } else if (mode == "ab15") {
    // Session 15, d64 (hidden 2048, B * N = 16k): one consumer warpgroup without the
    // intra-warpgroup overlap (never in the tuned space): S and P of two blocks no longer
    // coexist, so 64x64 and 64x48 fit four blocks per SM (ptxas allocates the launch bound's 64
    // registers, not setmaxnreg's 104) and 64x96 three; the other resident blocks' GEMMs fill the
    // tensor cores during a block's softmax instead. Next to the tiles the tuner picks at d64
    // (64x64/64x80 at three blocks, 64x128 at two, 128x128, 192x128).
    const std::string lazy = "FT_HOPPER_LAZY_RESCALE=1";
    for (bool causal : {true, false})
      for (int64_t n : causal ? std::vector<int64_t>{512, 1024, 2048, 4096, 8192} : std::vector<int64_t>{512, 1024, 4096}) {
        std::vector<Probe> configs = {Config(dt, 64, causal, 1, 64, 2), Config(dt, 64, causal, 1, 80, 2),
                                      Config(dt, 64, causal, 1, 128, 2), Config(dt, 64, causal, 2, 128, 2),
                                      Config(dt, 64, causal, 3, 128, 2)};
        for (int bn : {48, 64, 96}) configs.push_back(NoOverlap(dt, 64, causal, 1, bn, 2));
        configs.push_back(NoOverlap(dt, 64, causal, 1, 64, 2, true));
        configs.push_back(Config(dt, 64, causal, 1, 64, 2, lazy, false, true, false));
        benches.push_back({{16384 / n, n, n, 32, 32, false}, 64, causal, configs});
      }
  } else if (mode == "ab16") {
    // d64 (hidden 2048, B * N = 16k) where the grid is under 1.5x flash: one consumer warpgroup
    // without the overlap at the generator's blocks per SM (64x128 and 64x112 at three and 64x80
    // at four, S in two wgmma halves; 64x96 at three, whole) against the tiles the tuner picks
    // there (64x64 / 64x80 at three, 64x64 without overlap at four, 64x128 at two, 192x128).
    for (bool causal : {true, false})
      for (int64_t n : causal ? std::vector<int64_t>{1024, 2048, 4096} : std::vector<int64_t>{1024}) {
        std::vector<Probe> configs = {Config(dt, 64, causal, 1, 64, 2),    Config(dt, 64, causal, 1, 80, 2),
                                      NoOverlap(dt, 64, causal, 1, 64, 2), Config(dt, 64, causal, 1, 128, 2),
                                      Config(dt, 64, causal, 3, 128, 2)};
        for (int bn : {80, 96, 112, 128}) configs.push_back(NoOverlap(dt, 64, causal, 1, bn, 2));
        benches.push_back({{16384 / n, n, n, 32, 32, false}, 64, causal, configs});
      }
    // The grid's d128 and d256 winners at N 16k.
    for (bool causal : {true, false}) {
      benches.push_back({{1, 16384, 16384, 16, 16, false}, 128, causal,
                         {Config(dt, 128, causal, 2, 128, 2), Persistent(dt, 128, causal, 2, 176, 2)}});
      benches.push_back({{1, 16384, 16384, 8, 8, false}, 256, causal, {Config(dt, 256, causal, 2, 80, 2)}});
    }
  } else if (mode == "ab27" || mode == "ab28") {
    // Session 27: a row's running max kept until a block's scores pass it by more than 8 (log2
    // units; FT_HOPPER_RESCALE_THRESHOLD=8), so the O rescale is skipped for a whole warp on
    // almost every block (kHeadDim / 2 multiplies a thread per block), against the template,
    // on the grid's tuned winners (session 20, call 4) where d256 and d64 trail cuDNN.
    // Off and on explicitly: the generator turns it on at d256 and for three consumer warpgroups
    // at d64 / d128 (HopperRescaleThreshold), which this A/B and --ab28 decided.
    const std::string t0 = "FT_HOPPER_RESCALE_THRESHOLD=0", t8 = "FT_HOPPER_RESCALE_THRESHOLD=8";
    // p: 0 non-persistent, 1 persistent, 2 persistent with two Q buffers.
    auto pair = [&](int d, bool causal, int wgs, int bn, int p, bool overlap) {
      std::vector<Probe> out;
      for (const std::string& def : {t0, t8}) {
        Probe probe = Config(dt, d, causal, wgs, bn, 2, def, p > 0, true, overlap);
        if (p == 2) probe.config.q_buffers = 2;
        out.push_back(probe);
      }
      return out;
    };
    auto join = [](std::vector<Probe> a, const std::vector<Probe>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    auto grid = [](int64_t n, int d) { return Shape{16384 / n, n, n, 2048 / d, 2048 / d, false}; };
    if (mode == "ab28") {
      // Session 28 (H100; docs/perf-notes.md): the tiles --ab27 left out. d128 with three consumer
      // warpgroups (192x80 p2: the tuned winner at full N 2k-4k), where d64's three-warpgroup
      // tiles gained; d128 causal at short N (128x128 p2); d64 with two warpgroups (128x128,
      // exact tiles at N 512-1k, where 192-row tiles waste a third of their last tile).
      for (int64_t n : {2048, 4096}) benches.push_back({grid(n, 128), 128, false, pair(128, false, 3, 80, 2, true)});
      for (int64_t n : {1024, 2048}) benches.push_back({grid(n, 128), 128, true, pair(128, true, 2, 128, 2, true)});
      for (int64_t n : {512, 1024}) benches.push_back({grid(n, 64), 64, false, pair(64, false, 2, 128, 2, true)});
      benches.push_back({grid(1024, 64), 64, true, pair(64, true, 2, 128, 2, true)});
    } else {
      benches.push_back({grid(512, 256), 256, false, join(pair(256, false, 2, 80, 1, true), pair(256, false, 2, 64, 1, true))});
      benches.push_back({grid(1024, 256), 256, false, pair(256, false, 2, 80, 0, true)});
      benches.push_back({grid(2048, 256), 256, false, pair(256, false, 2, 80, 1, true)});
      benches.push_back({grid(16384, 256), 256, false, pair(256, false, 2, 80, 0, true)});
      benches.push_back({grid(512, 256), 256, true, pair(256, true, 2, 64, 1, true)});
      benches.push_back({grid(16384, 256), 256, true, pair(256, true, 2, 80, 0, true)});
      benches.push_back({grid(512, 128), 128, false, pair(128, false, 2, 128, 2, true)});
      benches.push_back({grid(16384, 128), 128, false, pair(128, false, 2, 192, 0, true)});
      benches.push_back({grid(16384, 128), 128, true, pair(128, true, 2, 176, 0, true)});
      benches.push_back({grid(512, 64), 64, false, join(pair(64, false, 1, 128, 0, false), pair(64, false, 3, 128, 2, true))});
      benches.push_back({grid(1024, 64), 64, false, pair(64, false, 1, 128, 0, false)});
      benches.push_back({grid(2048, 64), 64, true, pair(64, true, 1, 64, 0, false)});
      benches.push_back({grid(16384, 64), 64, false, pair(64, false, 3, 128, 0, true)});
    }
  } else if (mode == "ab31") {
    // Session 31 (prepared, not run): persistent causal rounds rotated by a block
    // (FT_HOPPER_CAUSAL_ROTATE=1) against the template, where the split tail makes each row's
    // first pair cheaper (d64 192x128 p2 at N 1k and 4k: 6 and 22 query blocks a row, which
    // divide 132 blocks) and where nothing splits (controls: d64 N 2k, whose short tile has two
    // live warpgroups; d128 128x128 p2 at N 1k-2k, no short tiles).
    const std::string r0 = "FT_HOPPER_CAUSAL_ROTATE=0", r1 = "FT_HOPPER_CAUSAL_ROTATE=1";
    auto pair = [&](int d, int wgs, int bn) {
      std::vector<Probe> out;
      for (const std::string& def : {r0, r1}) {
        Probe probe = Config(dt, d, true, wgs, bn, 2, def, true);
        probe.config.q_buffers = 2;
        out.push_back(probe);
      }
      return out;
    };
    auto grid = [](int64_t n, int d) { return Shape{16384 / n, n, n, 2048 / d, 2048 / d, false}; };
    for (int64_t n : {1024, 2048, 4096}) benches.push_back({grid(n, 64), 64, true, pair(64, 3, 128)});
    for (int64_t n : {1024, 2048}) benches.push_back({grid(n, 128), 128, true, pair(128, 2, 128)});
  } else if (mode == "d64") {
    // Session 13, d64 (hidden 2048, B * N = 16k): blocks per SM for one consumer warpgroup
    // (FT_HOPPER_MAX_BLOCKS=N builds the same tile for fewer), smaller key tiles and more
    // stages, next to the grid's winners (64x128 one warpgroup; 192x128 three).
    const std::string two = "FT_HOPPER_MAX_BLOCKS=2", three = "FT_HOPPER_MAX_BLOCKS=3";
    for (bool causal : {true, false})
      for (int64_t n : {512, 1024, 4096, 16384})
        benches.push_back({{16384 / n, n, n, 32, 32, false}, 64, causal,
                           {Config(dt, 64, causal, 1, 128, 2), Config(dt, 64, causal, 1, 64, 2),
                            Config(dt, 64, causal, 1, 64, 2, two), Config(dt, 64, causal, 1, 80, 2),
                            Config(dt, 64, causal, 1, 80, 2, two), Config(dt, 64, causal, 1, 48, 2),
                            Config(dt, 64, causal, 1, 48, 2, three), Config(dt, 64, causal, 1, 64, 3),
                            Config(dt, 64, causal, 1, 128, 3), Persistent(dt, 64, causal, 1, 64, 2),
                            Config(dt, 64, causal, 3, 128, 2), Config(dt, 64, causal, 3, 128, 3)}});
  } else if (!sweep) {
    // Each shape: the family's default tile, then the switches off one at a time, then other
    // tiles; persistent causal variants use the longest-first order.
    for (bool causal : {false, true}) {
      if (short_only) break;
      benches.push_back({{1, 16384, 16384, 16, 16, false}, 128, causal,
                         {Config(dt, 128, causal, 2, 128, 2), NoPingPong(dt, 128, causal, 2, 128, 2),
                          NoOverlap(dt, 128, causal, 2, 128, 2), Persistent(dt, 128, causal, 2, 128, 2),
                          Config(dt, 128, causal, 2, 176, 2), Persistent(dt, 128, causal, 2, 176, 2),
                          NoOverlap(dt, 128, causal, 3, 128, 2)}});
      benches.push_back({{1, 8192, 8192, 32, 32, false}, 128, causal,
                         {Config(dt, 128, causal, 2, 128, 2), Config(dt, 128, causal, 2, 176, 2),
                          Persistent(dt, 128, causal, 2, 128, 2)}});
      benches.push_back({{1, 16384, 16384, 32, 32, false}, 64, causal,
                         {Config(dt, 64, causal, 3, 128, 2), NoPingPong(dt, 64, causal, 3, 128, 2),
                          NoOverlap(dt, 64, causal, 3, 128, 2), Persistent(dt, 64, causal, 3, 128, 2),
                          NoOverlap(dt, 64, causal, 3, 192, 2)}});
      benches.push_back({{1, 16384, 16384, 8, 8, false}, 256, causal,
                         {Config(dt, 256, causal, 2, 80, 2), NoPingPong(dt, 256, causal, 2, 80, 2),
                          NoOverlap(dt, 256, causal, 2, 80, 2), Persistent(dt, 256, causal, 2, 80, 2)}});
    }
    // Short sequences (hidden 2048, B * N = 16k), where cuDNN is closest: tiles and the
    // persistent scheduler.
    for (bool causal : {true, false})
      for (int64_t n : {512, 1024}) {
        benches.push_back({{16384 / n, n, n, 32, 32, false}, 64, causal,
                           {Config(dt, 64, causal, 3, 128, 2), Config(dt, 64, causal, 2, 128, 2),
                            Config(dt, 64, causal, 2, 64, 2), Config(dt, 64, causal, 3, 64, 2),
                            Persistent(dt, 64, causal, 3, 128, 2), Persistent(dt, 64, causal, 2, 128, 2),
                            Persistent(dt, 64, causal, 2, 64, 2), NoOverlap(dt, 64, causal, 2, 128, 2),
                            NoOverlap(dt, 64, causal, 3, 192, 2), Config(dt, 64, causal, 1, 128, 2),
                            Persistent(dt, 64, causal, 1, 128, 2), Persistent(dt, 64, causal, 1, 64, 2),
                            Persistent(dt, 64, causal, 2, 96, 2)}});
        benches.push_back({{16384 / n, n, n, 16, 16, false}, 128, causal,
                           {Config(dt, 128, causal, 2, 128, 2), Persistent(dt, 128, causal, 2, 128, 2),
                            Config(dt, 128, causal, 2, 64, 2), Persistent(dt, 128, causal, 2, 64, 2)}});
      }
  } else {
    // Hidden 2048, B * N = 16k, N from 512 to 16k: the best tiles seen so far per head dim.
    for (bool causal : {false, true})
      for (int64_t n : {512, 1024, 2048, 4096, 8192, 16384}) {
        const int64_t b = 16384 / n;
        benches.push_back({{b, n, n, 32, 32, false}, 64, causal,
                           {Config(dt, 64, causal, 3, 128, 2), Persistent(dt, 64, causal, 3, 128, 2)}});
        benches.push_back({{b, n, n, 16, 16, false}, 128, causal,
                           {Config(dt, 128, causal, 2, 128, 2), Config(dt, 128, causal, 2, 176, 2),
                            Persistent(dt, 128, causal, 2, 128, 2), Persistent(dt, 128, causal, 2, 176, 2)}});
        benches.push_back({{b, n, n, 8, 8, false}, 256, causal,
                           {Config(dt, 256, causal, 2, 80, 2), Persistent(dt, 256, causal, 2, 80, 2)}});
      }
  }
  std::vector<Probe> all;
  for (auto& b : benches) {
    std::vector<Probe> keep;
    for (auto& c : b.configs)
      if (Wanted(only, Name(c))) keep.push_back(c);
    b.configs = keep;
    all.insert(all.end(), keep.begin(), keep.end());
  }
  LoadAll(gpu, all);
  Compiler compiler(Compiler::Options{});
  uint64_t seed = 7;
  bool warmed = false;
  for (auto& b : benches) {
    if (b.configs.empty()) continue;
    auto c = MakeCase(gpu, dt, b.d, b.causal, b.shape, seed += 10, false);
    const Problem problem = c->device.problem;
    const double flops = problem.Flops();
    char shape[160];
    std::snprintf(shape, sizeof shape, "d%d %s B%lld H%lld N%lld", b.d, b.causal ? "causal" : "full",
                  (long long)b.shape.batch, (long long)b.shape.heads_q, (long long)b.shape.seqlen_q);
    if (!warmed) {  // about a second of work first, so the first row does not pay for clock ramp-up
      for (int i = 0; i < 200; ++i) CHECK_OK(LaunchHopper(gpu, b.configs[0], c->device));
      CHECK_OK(gpu.stream->Synchronize());
      warmed = true;
    }
    // Every kernel of the shape (the Hopper variants and the library's FA-2 default), timed
    // interleaved: 6 rounds, each launching every kernel 5 times in a rotated order, so that
    // the GPU's power and clock state is shared by all of them; the median of the 30 samples.
    // (Timing one kernel after another biased the first of a pair by up to 12%.)
    const Variant fa2 = DefaultVariant(ProblemClass{dt, b.d, b.causal}, kDefaultMaxSmemBytes, "sm_80");  // fa2_fwd's
    auto source = Must(GenerateSource(fa2), "fa2 source");
    auto cubin = Must(compiler.Compile(GeneratedSourceRequest(source.uri, source.text, gpu.info.Arch())), "fa2 compile");
    auto kernel = Must(ForwardKernel::Load(*gpu.context, cubin, fa2), "fa2 load");
    std::vector<std::string> names;
    std::vector<std::function<Status()>> launches;
    for (const Probe& config : b.configs) {
      names.push_back(Name(config));
      // The call as a runtime would issue it: pack + encode + launch.
      launches.push_back([&gpu, config, &c] { return LaunchHopper(gpu, config, c->device); });
    }
    names.push_back(fa2.Uri());
    launches.push_back([&] { return kernel.Launch(c->device, gpu.stream->get()); });
    const size_t n = launches.size();
    std::vector<std::vector<double>> samples(n);
    Event start = Must(Event::Create(*gpu.context), "event"), end = Must(Event::Create(*gpu.context), "event");
    for (size_t k = 0; k < n; ++k)
      for (int i = 0; i < 3; ++i) CHECK_OK(launches[k]());
    for (int round = 0; round < 6; ++round) {
      for (size_t j = 0; j < n; ++j) {
        const size_t k = (j + round) % n;
        for (int i = 0; i < 5; ++i) {
          CHECK_OK(start.Record(*gpu.stream));
          CHECK_OK(launches[k]());
          CHECK_OK(end.Record(*gpu.stream));
          CHECK_OK(end.Synchronize());
          samples[k].push_back(Must(Event::ElapsedMs(start, end), "elapsed"));
        }
      }
    }
    for (size_t k = 0; k < n; ++k) {
      std::sort(samples[k].begin(), samples[k].end());
      const double ms = samples[k][samples[k].size() / 2];
      rows.push_back({shape, names[k], ms, flops / (ms * 1e-3) / 1e12});
      std::printf("%-28s %-50s %8.3f ms %7.1f TFLOP/s (min %.3f, max %.3f)\n", shape, names[k].c_str(), ms,
                  rows.back().tflops, samples[k].front(), samples[k].back());
    }
    std::fflush(stdout);
  }
  // Host cost of one call's packing: PackHopper + encoding four tensor maps (a runtime pays this
  // per call unless it caches the maps by pointer and shape).
  if (!benches.empty() && !benches.front().configs.empty()) {
    auto c = MakeCase(gpu, dt, 64, false, Shape{1, 64, 64, 1, 1, false}, 1, false);
    const HopperConfig& config = benches.front().configs.front().config;
    const auto t0 = std::chrono::steady_clock::now();
    constexpr int kCalls = 2000;
    for (int i = 0; i < kCalls; ++i) {
      ForwardArgs a = c->device;
      a.problem.head_dim = config.head_dim;
      a.problem.causal = config.causal;
      LaunchPacket packet;
      if (detail::PackHopper(config, a, gpu.info.sm_count, &packet).ok()) CHECK_OK(EncodeTensorMaps(*gpu.driver, &packet));
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kCalls;
    std::printf("host: PackHopper + 4 x cuTensorMapEncodeTiled = %.2f us per call\n", us);
  }
  std::printf("\n%-28s | %-50s | %8s | %s\n", "shape (bf16)", "kernel", "ms", "TFLOP/s");
  for (const Row& r : rows) std::printf("%-28s | %-50s | %8.3f | %6.1f\n", r.shape.c_str(), r.kernel.c_str(), r.ms, r.tflops);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line even into a file: a run stopped by a timeout (a hung kernel) keeps what it
  // printed (session 31's call 2 lost every line of a hung --check to a full buffer).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool check = false, small = false, time = false, compile_only = false;
  std::string mode = "time";
  std::string template_path, only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check") check = true;
    else if (a == "--small") small = true;
    else if (a == "--time") time = true;
    else if (a == "--sweep" || a == "--short" || a == "--d64" || a == "--ab14" || a == "--ab15" || a == "--ab16" ||
             a == "--ab27" || a == "--ab28" || a == "--ab31") {
      mode = a.substr(2);
      time = true;
    }    else if (a == "--compile-only") compile_only = true;
    else if (a == "--template" && i + 1 < argc) template_path = argv[++i];
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--dump" && i + 1 < argc) g_dump_dir = argv[++i];
    else if (a == "--define" && i + 1 < argc) g_define = argv[++i];
    else {
      std::fprintf(stderr, "usage: hopper_probe [--check] [--small] [--time] [--short] [--sweep] [--d64] [--ab14] [--ab15] [--ab16] [--ab27] [--ab28] [--ab31] [--compile-only]"
                           " [--template FILE] [--only SUBSTRING] [--dump DIR] [--define NAME=VALUE[,NAME=VALUE]]\n");
      return 2;
    }
  }
  if (!check && !small && !time) check = true;
  if (template_path.empty()) {
    auto text = ExpandedTemplate("hopper_fwd.cuh");
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
      return 2;
    }
    g_template = *text;
  } else {
    std::ifstream in(template_path);
    std::stringstream ss;
    ss << in.rdbuf();
    g_template = ss.str();
    if (g_template.empty()) {
      std::fprintf(stderr, "cannot read %s\n", template_path.c_str());
      return 2;
    }
  }
  if (compile_only) {
    Gpu gpu;  // every config of --check and --time, for sm_90a, without a GPU
    std::vector<Probe> all;
    for (DType dt : {DType::kBF16, DType::kF16})
      for (bool causal : {false, true})
        for (auto [d, wgs, bn, st] : std::vector<std::array<int, 4>>{
                 {64, 2, 128, 2}, {64, 3, 128, 2}, {64, 1, 64, 3}, {64, 1, 48, 2}, {64, 1, 64, 2}, {64, 1, 96, 2}, {64, 2, 192, 2}, {64, 3, 96, 3}, {128, 2, 128, 2},
                 {128, 2, 176, 2}, {128, 1, 96, 4}, {128, 2, 128, 3}, {128, 2, 112, 3}, {128, 3, 128, 2}, {192, 2, 112, 2},
                 {256, 2, 80, 2}, {256, 2, 64, 2}})
          for (bool pers : {false, true})
            for (bool ov : {true, false}) {
              const Probe probe = Config(dt, d, causal, wgs, bn, st, "", pers, true, ov);
              if (Wanted(only, Name(probe)) && detail::CheckHopperConfig(probe.config).ok()) all.push_back(probe);
            }
    // d64 without the overlap at three and four blocks per SM (S in two wgmma halves).
    for (DType dt : {DType::kBF16, DType::kF16})
      for (bool causal : {false, true})
        for (int bn : {80, 96, 112, 128})
          if (const Probe probe = NoOverlap(dt, 64, causal, 1, bn, 2); Wanted(only, Name(probe))) all.push_back(probe);
    LoadAll(gpu, all);
    return 0;
  }
  Gpu& gpu = *Must(flashtune::testing::GetGpu(), "gpu");
  std::printf("device: %s (%s), driver %s, NVRTC %s\n", gpu.info.name.c_str(), gpu.info.Arch().c_str(),
              gpu.driver->VersionString().c_str(), Compiler::NvrtcVersion().c_str());
  if (gpu.info.cc_major != 9) {
    std::fprintf(stderr, "hopper_fwd needs an sm_90 GPU\n");
    return 2;
  }
  int rc = 0;
  if (check || small) rc |= Check(gpu, small, only);
  if (time) rc |= Time(gpu, only, mode);
  return rc;
}
