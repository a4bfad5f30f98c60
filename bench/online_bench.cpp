// online_bench: online tuning converging on an untuned shape while the calling thread keeps
// calling forward(). Rerun it on any GPU with a flashtune CLI and a database (a fresh one works):
//
//   flashtune_online_bench --cli build/flashtune --db /tmp/online.db [--dtype bf16] [--head-dim 128]
//       [--causal 0] [--batch 4] [--seqlen 4096] [--heads 16] [--heads-kv H] [--before-s 3]
//       [--after-s 3] [--budget 16] [--timeout-s 150]
//
// Phases, one forward() after another on one stream of the primary context:
//   before  a runtime with online tuning off: the guess, no worker (the baseline)
//   during  a runtime with online tuning on, from its first call (which spawns the worker)
//           until the runtime reports the winner published
//   after   the same runtime, for --after-s seconds after the swap
// Per call: the host time of forward() itself (what the hot path costs the caller) and, from
// CUDA events around it, the kernel's GPU time. Printed: per phase the calls and the median and
// p99 of both; the time from the first call to the swap; the guess's and the winner's variant,
// their GPU medians (before vs after: neither has a worker beside it), and the largest
// difference between the guess's output and the winner's on the same random inputs.
// Exit 0 when the swap happened and every call succeeded; 1 otherwise.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "flashtune/driver.h"
#include "flashtune/runtime.h"

using namespace flashtune;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void Die(const char* what, const Status& status) {
  std::fprintf(stderr, "online_bench: %s: %s\n", what, status.ToString().c_str());
  std::exit(2);
}
void Check(const Status& status, const char* what) {
  if (!status.ok()) Die(what, status);
}
template <typename T>
T Take(Result<T> r, const char* what) {
  if (!r.ok()) Die(what, r.status());
  return std::move(*r);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

struct Phase {
  std::string name;
  std::vector<double> host_us, gpu_us;
};

// bf16/fp16 bits of a float (round to nearest even) and back.
uint16_t ToHalfBits(float f, DType dtype) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (dtype == DType::kBF16) return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  // fp16: inputs are in [-1, 1], normal range or zero, so no inf/nan handling is needed.
  const uint32_t sign = (u >> 16) & 0x8000;
  const int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return static_cast<uint16_t>(sign);
  const uint32_t mant = u & 0x7fffff;
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  if ((mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(h);
}
float FromHalfBits(uint16_t h, DType dtype) {
  if (dtype == DType::kBF16) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  const int exp = (h >> 10) & 0x1f;
  const float mant = static_cast<float>(h & 0x3ff);
  const float v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1.0f + mant / 1024.0f, exp - 15);
  return (h & 0x8000) ? -v : v;
}

struct Options {
  std::string cli, db;
  Problem problem;
  double before_s = 3, after_s = 3;
  int budget = 16, timeout_s = 150;
};

Options Parse(int argc, char** argv) {
  Options o;
  o.problem.dtype = DType::kBF16;
  o.problem.head_dim = 128;
  o.problem.batch = 4;
  o.problem.seqlen_q = o.problem.seqlen_k = 4096;
  o.problem.heads_q = 16;
  int64_t heads_kv = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--cli") o.cli = v;
    else if (k == "--db") o.db = v;
    else if (k == "--dtype") o.problem.dtype = v == "f16" ? DType::kF16 : DType::kBF16;
    else if (k == "--head-dim") o.problem.head_dim = std::stoi(v);
    else if (k == "--causal") o.problem.causal = v == "1";
    else if (k == "--batch") o.problem.batch = std::stoll(v);
    else if (k == "--seqlen") o.problem.seqlen_q = o.problem.seqlen_k = std::stoll(v);
    else if (k == "--heads") o.problem.heads_q = std::stoll(v);
    else if (k == "--heads-kv") heads_kv = std::stoll(v);
    else if (k == "--before-s") o.before_s = std::stod(v);
    else if (k == "--after-s") o.after_s = std::stod(v);
    else if (k == "--budget") o.budget = std::stoi(v);
    else if (k == "--timeout-s") o.timeout_s = std::stoi(v);
    else {
      std::fprintf(stderr, "online_bench: unknown option %s (see the comment at the top of bench/online_bench.cpp)\n",
                   k.c_str());
      std::exit(2);
    }
  }
  o.problem.heads_kv = heads_kv > 0 ? heads_kv : o.problem.heads_q;
  if (o.db.empty()) {
    std::fprintf(stderr, "online_bench: --db FILE is required (and --cli, or $FLASHTUNE_CLI)\n");
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = Parse(argc, argv);
  Driver* driver = Take(Driver::Load(), "loading the CUDA driver");
  Context context = Take(Context::Primary(*driver, 0), "the primary context");
  Stream stream = Take(Stream::Create(context), "a stream");
  const Problem& p = opt.problem;
  const size_t elem = 2;
  const size_t q_bytes = static_cast<size_t>(p.batch * p.seqlen_q * p.heads_q * p.head_dim) * elem;
  const size_t kv_bytes = static_cast<size_t>(p.batch * p.seqlen_k * p.heads_kv * p.head_dim) * elem;
  const size_t lse_bytes = static_cast<size_t>(p.batch * p.heads_q * p.seqlen_q) * 4;
  DeviceBuffer q = Take(DeviceBuffer::Allocate(context, q_bytes), "q");
  DeviceBuffer k = Take(DeviceBuffer::Allocate(context, kv_bytes), "k");
  DeviceBuffer v = Take(DeviceBuffer::Allocate(context, kv_bytes), "v");
  DeviceBuffer o = Take(DeviceBuffer::Allocate(context, q_bytes), "o");
  DeviceBuffer lse = Take(DeviceBuffer::Allocate(context, lse_bytes), "lse");
  {
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<uint16_t> host(std::max(q_bytes, kv_bytes) / elem);
    for (DeviceBuffer* b : {&q, &k, &v}) {
      const size_t n = b->size() / elem;
      for (size_t i = 0; i < n; ++i) host[i] = ToHalfBits(dist(rng), p.dtype);
      Check(b->CopyFromHost(host.data(), b->size()), "copying the inputs");
    }
  }
  ForwardArgs args = ForwardArgs::Contiguous(p);
  args.q = reinterpret_cast<const void*>(q.get());
  args.k = reinterpret_cast<const void*>(k.get());
  args.v = reinterpret_cast<const void*>(v.get());
  args.o = reinterpret_cast<void*>(o.get());
  args.lse = reinterpret_cast<float*>(lse.get());

  std::mutex log_mutex;
  std::vector<std::string> log_lines;
  Clock::time_point swapped{};
  const Clock::time_point t0 = Clock::now();
  auto open = [&](bool online) {
    RuntimeOptions ro;
    ro.db_path = opt.db;
    ro.online_tuning = online;
    ro.online_tuning_cli = opt.cli;
    ro.online_tuning_budget = opt.budget;
    ro.online_tuning_timeout_s = opt.timeout_s;
    ro.log = [&, online](LogLevel level, const std::string& m) {
      std::lock_guard lock(log_mutex);
      const double at = std::chrono::duration<double>(Clock::now() - t0).count();
      char head[64];
      std::snprintf(head, sizeof head, "[%7.3f s] %s%s: ", at, online ? "online " : "", LogLevelName(level).data());
      log_lines.push_back(head + m);
      std::fprintf(stderr, "%s%s\n", head, m.c_str());
      if (m.find("is tuned; its winner now serves it") != std::string::npos) swapped = Clock::now();
    };
    return Take(Runtime::Open(ro), "opening the runtime");
  };
  auto swap_seen = [&] {
    std::lock_guard lock(log_mutex);
    return swapped != Clock::time_point{};
  };

  Event start = Take(Event::Create(context), "event");
  Event end = Take(Event::Create(context), "event");
  int failures = 0;
  // One timed call: host time of forward(), then its GPU time (events around it, synchronised:
  // the bench's own choice, so that every call's kernel time is known).
  auto call = [&](Runtime& rt, Phase& phase) {
    Check(start.Record(stream), "recording an event");
    const Clock::time_point h0 = Clock::now();
    Status s = rt.forward(args, stream.get());
    const Clock::time_point h1 = Clock::now();
    Check(end.Record(stream), "recording an event");
    if (!s.ok()) {
      if (++failures < 5) std::fprintf(stderr, "forward: %s\n", s.ToString().c_str());
      return;
    }
    Check(end.Synchronize(), "waiting for a call");
    phase.host_us.push_back(std::chrono::duration<double, std::micro>(h1 - h0).count());
    phase.gpu_us.push_back(1000.0 * Take(Event::ElapsedMs(start, end), "elapsed"));
  };
  auto output = [&] {
    Check(stream.Synchronize(), "waiting for the stream");
    std::vector<uint16_t> host(q_bytes / elem);
    Check(o.CopyToHost(host.data(), q_bytes), "copying the output");
    return host;
  };

  Phase before{"before", {}, {}}, during{"during", {}, {}}, after{"after", {}, {}};
  std::string guess_uri, winner_uri;
  std::vector<uint16_t> guess_out, winner_out;
  {
    auto rt = open(false);
    guess_uri = Take(rt->plan(p), "plan").variant.Uri();
    Phase warm{"warm", {}, {}};
    for (int i = 0; i < 3; ++i) call(*rt, warm);  // load the kernel
    const Clock::time_point stop = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.before_s));
    while (Clock::now() < stop) call(*rt, before);
    guess_out = output();
  }
  auto rt = open(true);
  const Plan first = Take(rt->plan(p), "plan");
  std::printf("problem %s: plan %s (%s): %s\n", p.ToString().c_str(), first.variant.Uri().c_str(),
              std::string(PlanSourceName(first.source)).c_str(), first.why.c_str());
  const Clock::time_point online_start = Clock::now();
  const Clock::time_point give_up = online_start + std::chrono::seconds(opt.timeout_s + 10);
  while (!swap_seen() && Clock::now() < give_up) call(*rt, during);
  const bool did_swap = swap_seen();
  const double to_swap_s = did_swap ? std::chrono::duration<double>(swapped - online_start).count() : NAN;
  if (did_swap) {
    const Clock::time_point stop = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.after_s));
    while (Clock::now() < stop) call(*rt, after);
    winner_out = output();
    winner_uri = Take(rt->plan(p), "plan").variant.Uri();
  }

  std::printf("\n%-8s %8s %14s %14s %14s %14s\n", "phase", "calls", "host_med_us", "host_p99_us", "gpu_med_us",
              "gpu_p99_us");
  for (const Phase* ph : {&before, &during, &after})
    std::printf("%-8s %8zu %14.2f %14.2f %14.1f %14.1f\n", ph->name.c_str(), ph->host_us.size(),
                Percentile(ph->host_us, 0.5), Percentile(ph->host_us, 0.99), Percentile(ph->gpu_us, 0.5),
                Percentile(ph->gpu_us, 0.99));
  std::printf("\ntime from the first online call to the swap: %.2f s\n", to_swap_s);
  std::printf("guess  %-60s gpu median %.1f us\n", guess_uri.c_str(), Percentile(before.gpu_us, 0.5));
  std::printf("winner %-60s gpu median %.1f us\n", winner_uri.c_str(), Percentile(after.gpu_us, 0.5));
  if (did_swap) {
    std::printf("winner speed vs guess: %.3fx\n", Percentile(before.gpu_us, 0.5) / Percentile(after.gpu_us, 0.5));
    double max_diff = 0;
    bool finite = true;
    for (size_t i = 0; i < guess_out.size(); ++i) {
      const float a = FromHalfBits(guess_out[i], p.dtype), b = FromHalfBits(winner_out[i], p.dtype);
      if (!std::isfinite(a) || !std::isfinite(b)) finite = false;
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(a - b)));
    }
    std::printf("guess vs winner output: max |diff| %.3g%s\n", max_diff, finite ? "" : " (NON-FINITE values)");
    if (!finite || max_diff > 0.05) ++failures;
  }
  std::printf("failed calls or checks: %d\n", failures);
  return did_swap && failures == 0 ? 0 : 1;
}
