// The GPU worker process: verifies and times one candidate per request, or re-times several
// against each other (see gpu_measurer.h);
// backward candidates' inputs and checks are in gpu_worker_backward.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "flashtune/kernel.h"
#include "flashtune/problem_set.h"
#include "flashtune/reference.h"
#include "flashtune/space.h"
#include "tuner/gpu_protocol.h"
#include "tuner/gpu_worker_backward.h"
#include "tuner/launch_timing.h"

namespace flashtune::detail {

Tolerances TolerancesOf(const Variant& v) {
  const Family* f = FindFamily(v.family);
  return f != nullptr ? f->ToleranceFor(v.dtype) : Tolerances{};
}

// A paged problem is timed and verified on pools of pages this long (vLLM's default; 16- and
// 256-key pages read within 2% of each other untuned on the H200, docs/performance.md).
constexpr int kPageSize = 16;

size_t QElems(const Problem& p) { return size_t(p.batch * p.seqlen_q * p.heads_q * p.head_dim); }
// K (or V) elements as laid out on the device: [B, Nk, Hkv, D], or the page pool.
size_t KElems(const Problem& p) {
  const int64_t keys = p.layout == Layout::kPaged ? ForwardArgs::Contiguous(p, kPageSize).paged.num_blocks * kPageSize
                                                  : p.batch * p.seqlen_k;
  return size_t(keys * p.heads_kv * p.head_dim);
}
size_t LseElems(const Problem& p) { return size_t(p.batch * p.heads_q * p.seqlen_q); }

std::string Format3g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

Result<ForwardKernel> LoadFromImage(const Context& context, const std::string& image, const Variant& variant) {
  Cubin cubin;
  cubin.name = variant.Uri();
  cubin.image.assign(image.begin(), image.end());
  return ForwardKernel::Load(context, cubin, variant);
}

namespace {

// Device copies of a [B, N, H, D] problem's tensors, contiguous; for a paged problem k and v
// are page pools and `table` and `lengths` its page table and key counts.
struct DeviceTensors {
  std::optional<DeviceBuffer> q, k, v, o, lse, table, lengths;  // empty until uploaded
};

Result<DeviceBuffer> Alloc(const Context& context, size_t bytes) { return DeviceBuffer::Allocate(context, bytes); }

ForwardArgs ArgsFor(const Problem& p, const DeviceTensors* t) {
  ForwardArgs a = ForwardArgs::Contiguous(p, kPageSize);
  if (t != nullptr) {
    a.q = reinterpret_cast<const void*>(t->q->get());
    a.k = reinterpret_cast<const void*>(t->k->get());
    a.v = reinterpret_cast<const void*>(t->v->get());
    a.o = reinterpret_cast<void*>(t->o->get());
    a.lse = reinterpret_cast<float*>(t->lse->get());
    if (p.layout == Layout::kPaged) {
      a.paged.block_table = reinterpret_cast<const int32_t*>(t->table->get());
      a.seqlens_k = reinterpret_cast<const int32_t*>(t->lengths->get());
    }
  }
  return a;
}

// A paged problem's page table: every sequence full (Nk keys) on pages in shuffled order, as a
// cache that has served a while holds them. Empty for a dense problem.
std::vector<int32_t> PageTable(const Problem& p, uint64_t seed) {
  if (p.layout != Layout::kPaged) return {};
  const ForwardArgs a = ForwardArgs::Contiguous(p, kPageSize);
  std::vector<int32_t> table(size_t(a.paged.num_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937_64(seed));
  return table;  // row b is entries [b * max_blocks_per_seq, (b + 1) * max_blocks_per_seq)
}

// Logical [B, Nk, Hkv, D] keys (or values) laid out in the pool `table` names; the pool's other
// rows (the last page's rows past Nk) hold `fill`.
std::vector<uint16_t> ToPages(const Problem& p, const std::vector<int32_t>& table, const std::vector<uint16_t>& logical,
                              uint16_t fill = 0) {
  const int64_t row = p.heads_kv * p.head_dim, per_seq = ForwardArgs::Contiguous(p, kPageSize).paged.max_blocks_per_seq;
  std::vector<uint16_t> pool(KElems(p), fill);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < p.seqlen_k; ++j) {
      const int64_t page = table[size_t(b * per_seq + j / kPageSize)];
      std::copy_n(logical.begin() + (b * p.seqlen_k + j) * row, row, pool.begin() + (page * kPageSize + j % kPageSize) * row);
    }
  return pool;
}

// A small ragged shape of a problem class, its host inputs and float64 reference answer.
struct VerifyCase {
  Problem problem;
  std::vector<uint16_t> q, k, v;
  ReferenceOutput expected;
  DeviceTensors device;
};

class GpuWorker {
 public:
  explicit GpuWorker(int ordinal) : ordinal_(ordinal) {}

  HelloReply Hello() {
    HelloReply reply;
    reply.status = Init();
    if (reply.status.ok()) {
      reply.device_count = driver_->device_count();
      reply.device = info_;
      reply.driver_version = driver_->VersionString();
    }
    return reply;
  }

  MeasureReply Measure(const MeasureRequest& request) {
    MeasureReply reply;
    reply.status = Init();
    if (!reply.status.ok()) return reply;
    PhaseClock clock;
    auto kernel = Load(request.candidate_cubin, request.candidate, reply);
    if (!kernel.ok()) {
      reply.status = kernel.status();
      return reply;
    }
    const double load_ms = clock.Lap();
    const bool backward = request.problem.operation == Operation::kBackward;
    reply.status = PrepareInputs(request.problem);
    const double inputs_ms = clock.Lap();
    if (reply.status.ok() && request.verify)
      reply.status = backward ? backward_->Verify(*kernel, request) : Verify(*kernel, request);
    const double verify_ms = clock.Lap();
    if (reply.status.ok()) {
      std::vector<LaunchTiming> timing;
      reply.status = Time({Launcher(request.problem, *kernel)}, request.options, &timing);
      if (reply.status.ok()) Fill(timing.front(), reply);
    }
    const double time_ms = clock.Lap();
    if (!reply.status.ok()) reply.status.WithVariant(request.candidate.Uri());
    if (trace_)
      std::fprintf(stderr, "trace worker %s load %.1f ms, inputs %.1f ms, verify %.1f ms, time %.1f ms (%d reps)\n",
                   request.candidate.Uri().c_str(), load_ms, inputs_ms, verify_ms, time_ms, reply.reps);
    return reply;
  }

  // Times verified finalists against each other: their groups interleaved (launch_timing.h
  // says why), after a warm-up of all of them in turn for options.warmup_ms in all. A cubin
  // that fails to load is that finalist's status; a failed launch or a fault is the reply's.
  RetimeReply Retime(const RetimeRequest& request) {
    RetimeReply reply;
    reply.status = Init();
    if (!reply.status.ok()) return reply;
    PhaseClock clock;
    reply.results.resize(request.candidates.size());
    std::vector<ForwardKernel> kernels;
    std::vector<size_t> slot;  // kernels[j] answers reply.results[slot[j]]
    for (size_t i = 0; i < request.candidates.size(); ++i) {
      auto kernel = Load(request.cubins[i], request.candidates[i], reply.results[i]);
      if (!kernel.ok()) {
        reply.results[i].status = Status(kernel.status()).WithVariant(request.candidates[i].Uri());
        continue;
      }
      kernels.push_back(std::move(*kernel));
      slot.push_back(i);
    }
    const double load_ms = clock.Lap();
    if (kernels.empty()) return reply;
    const Problem& p = request.problem;
    reply.status = PrepareInputs(p);
    if (!reply.status.ok()) return reply;
    const double inputs_ms = clock.Lap();
    std::vector<std::function<Status(size_t)>> launches;
    for (const ForwardKernel& kernel : kernels) launches.push_back(Launcher(p, kernel));
    std::vector<LaunchTiming> timing;
    reply.status = Time(launches, request.options, &timing);
    if (!reply.status.ok()) return reply;
    for (size_t j = 0; j < kernels.size(); ++j) Fill(timing[j], reply.results[slot[j]]);
    if (trace_)
      std::fprintf(stderr, "trace worker retime of %zu: load %.1f ms, inputs %.1f ms, time %.1f ms\n", kernels.size(),
                   load_ms, inputs_ms, clock.Lap());
    return reply;
  }

 private:
  Status Init() {
    if (context_) return Status::Ok();
    Status s = InitOnce();
    if (!s.ok() && s.message().find("CUDA_ERROR_NOT_INITIALIZED") != std::string::npos) {
      // Only a forked worker gets here (an exec'd one starts with fresh CUDA state).
      return Status(s.code(), s.message() +
                                  " (the GPU worker was forked from the tuning process, which had already initialised "
                                  "CUDA — NVRTC does so whenever it compiles — and CUDA does not work in a child forked "
                                  "after that: point FLASHTUNE_WORKER or GpuMeasurerOptions::worker_executable at a "
                                  "flashtune CLI, which the tuner then runs as a fresh worker process)");
    }
    return s;
  }

  Status InitOnce() {
    auto driver = Driver::Load();
    if (!driver.ok()) return driver.status();
    driver_ = *driver;
    if (driver_->device_count() == 0) return Status(Code::kNoDevice, "no CUDA device");
    if (ordinal_ < 0 || ordinal_ >= driver_->device_count())
      return Status(Code::kInvalidArgument, "devices: GPU " + std::to_string(ordinal_) + " does not exist (this machine has " +
                                                std::to_string(driver_->device_count()) + ")");
    auto info = driver_->Device(ordinal_);
    if (!info.ok()) return info.status();
    info_ = *info;
    auto context = Context::Primary(*driver_, ordinal_);
    if (!context.ok()) return context.status();
    context_ = std::make_unique<Context>(std::move(*context));
    FT_RETURN_IF_ERROR(context_->MakeCurrent());
    auto stream = Stream::Create(*context_);
    if (!stream.ok()) return stream.status();
    stream_ = std::make_unique<Stream>(std::move(*stream));
    for (int i = 0; i < kEvents; ++i) {
      auto event = Event::Create(*context_);
      if (!event.ok()) return event.status();
      events_.push_back(std::move(*event));
    }
    backward_ = std::make_unique<BackwardWorker>(*context_, *stream_, info_.l2_bytes);
    return Status::Ok();
  }

  // o and lse of `p`.
  Status AllocOutputs(DeviceTensors& t, const Problem& p) {
    auto dout = Alloc(*context_, QElems(p) * 2), dlse = Alloc(*context_, LseElems(p) * 4);
    for (const Status& s : {dout.status(), dlse.status()}) FT_RETURN_IF_ERROR(s);
    t.o.emplace(std::move(*dout));
    t.lse.emplace(std::move(*dlse));
    return Status::Ok();
  }

  // Device copies of q, k, v (as laid out on the device), a paged problem's `table` and full
  // key counts, and room for o and lse.
  Status Upload(DeviceTensors& t, const Problem& p, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                const std::vector<uint16_t>& v, const std::vector<int32_t>& table) {
    auto dq = Alloc(*context_, q.size() * 2), dk = Alloc(*context_, k.size() * 2), dv = Alloc(*context_, v.size() * 2);
    for (const Status& s : {dq.status(), dk.status(), dv.status()}) FT_RETURN_IF_ERROR(s);
    t.q.emplace(std::move(*dq));
    t.k.emplace(std::move(*dk));
    t.v.emplace(std::move(*dv));
    if (p.layout == Layout::kPaged) {
      const std::vector<int32_t> lengths(size_t(p.batch), int32_t(p.seqlen_k));
      auto dt = Alloc(*context_, table.size() * 4), dl = Alloc(*context_, lengths.size() * 4);
      for (const Status& s : {dt.status(), dl.status()}) FT_RETURN_IF_ERROR(s);
      t.table.emplace(std::move(*dt));
      t.lengths.emplace(std::move(*dl));
      FT_RETURN_IF_ERROR(t.table->CopyFromHost(table.data(), table.size() * 4));
      FT_RETURN_IF_ERROR(t.lengths->CopyFromHost(lengths.data(), lengths.size() * 4));
    }
    FT_RETURN_IF_ERROR(AllocOutputs(t, p));
    FT_RETURN_IF_ERROR(t.q->CopyFromHost(q.data(), q.size() * 2));
    FT_RETURN_IF_ERROR(t.k->CopyFromHost(k.data(), k.size() * 2));
    return t.v->CopyFromHost(v.data(), v.size() * 2);
  }

  // Poisons o and lse with NaN, launches, and waits.
  Status RunPoisoned(const ForwardKernel& kernel, const Problem& p, DeviceTensors& t, const DeviceTensors* inputs) {
    FT_RETURN_IF_ERROR(t.o->MemsetAsync(0xFF, stream_->get()));
    FT_RETURN_IF_ERROR(t.lse->MemsetAsync(0xFF, stream_->get()));
    ForwardArgs args = ArgsFor(p, inputs ? inputs : &t);
    args.o = reinterpret_cast<void*>(t.o->get());
    args.lse = reinterpret_cast<float*>(t.lse->get());
    FT_RETURN_IF_ERROR(AttachWorkspace(&args));
    FT_RETURN_IF_ERROR(kernel.Launch(args, stream_->get()));
    return stream_->Synchronize();
  }

  // Points `args` at a workspace of the size its problem needs (split-key decode kernels),
  // grown when a problem needs more; allocated before any timing starts.
  Status AttachWorkspace(ForwardArgs* args) {
    const int64_t bytes = WorkspaceBytes(args->problem, info_.sm_count);
    if (bytes > workspace_bytes_) {
      workspace_.reset();
      auto buffer = Alloc(*context_, size_t(bytes));
      if (!buffer.ok()) return buffer.status();
      workspace_.emplace(std::move(*buffer));
      workspace_bytes_ = bytes;
    }
    if (bytes > 0) {
      args->workspace = reinterpret_cast<void*>(workspace_->get());
      args->workspace_bytes = workspace_bytes_;
    }
    return Status::Ok();
  }

  // Two ragged shapes per class: GQA with Nq < Nk, and MQA with Nq > Nk (rows that see no key
  // when causal). Sizes avoid multiples of every tile. Decode problems (few query rows, which
  // decode kernels alone may serve) get decode shapes: GQA 4:1 with one and with 13 query rows
  // over keys that split, and MQA with more query rows than keys. A paged problem's cases are
  // paged the same way as its timed inputs (shuffled pages; the last page of each sequence
  // partly filled, its other rows NaN: a kernel that lets a row past the keys into o is wrong).
  Result<std::vector<VerifyCase>*> CasesFor(const Problem& timed) {
    const bool decode = Log2Ceil(timed.seqlen_q) <= kDecodeQueryBucket;
    const std::string key = std::string(DTypeName(timed.dtype)) + std::to_string(timed.head_dim) +
                            (timed.causal ? "c" : "f") + (decode ? "d" : "p") + std::string(LayoutName(timed.layout));
    auto it = cases_.find(key);
    if (it != cases_.end()) return &it->second;
    std::vector<VerifyCase> cases(decode ? 3 : 2);
    if (decode) {
      cases[0].problem = Problem{timed.dtype, timed.head_dim, timed.causal, 2, 1, 3001, 8, 2};
      cases[1].problem = Problem{timed.dtype, timed.head_dim, timed.causal, 3, 13, 1031, 8, 2};
      cases[2].problem = Problem{timed.dtype, timed.head_dim, timed.causal, 2, 5, 3, 4, 1};
    } else {
      cases[0].problem = Problem{timed.dtype, timed.head_dim, timed.causal, 1, 257, 385, 4, 2};
      cases[1].problem = Problem{timed.dtype, timed.head_dim, timed.causal, 2, 385, 130, 2, 1};
    }
    uint64_t seed = 1234;
    for (VerifyCase& c : cases) {
      c.problem.layout = timed.layout;
      Problem logical = c.problem;  // the reference reads dense K/V
      logical.layout = Layout::kDense;
      c.q.resize(QElems(c.problem));
      c.k.resize(KElems(logical));
      c.v.resize(KElems(logical));
      FillRandom(c.q, c.problem.dtype, seed++);
      FillRandom(c.k, c.problem.dtype, seed++);
      FillRandom(c.v, c.problem.dtype, seed++);
      ForwardArgs host = ArgsFor(logical, nullptr);
      host.q = c.q.data();
      host.k = c.k.data();
      host.v = c.v.data();
      auto expected = ReferenceForward(host);
      if (!expected.ok()) return expected.status();
      c.expected = std::move(*expected);
      const std::vector<int32_t> table = PageTable(c.problem, seed++);
      if (table.empty()) {
        FT_RETURN_IF_ERROR(Upload(c.device, c.problem, c.q, c.k, c.v, table));
      } else {
        const uint16_t nan = FloatToBits(NAN, c.problem.dtype);
        FT_RETURN_IF_ERROR(Upload(c.device, c.problem, c.q, ToPages(c.problem, table, c.k, nan),
                                  ToPages(c.problem, table, c.v, nan), table));
      }
    }
    return &(cases_[key] = std::move(cases));
  }

  Status CheckAgainstReference(const ForwardKernel& kernel, std::vector<VerifyCase>& cases, const std::string& who) {
    for (VerifyCase& c : cases) {
      FT_RETURN_IF_ERROR(RunPoisoned(kernel, c.problem, c.device, nullptr));
      std::vector<uint16_t> o(QElems(c.problem));
      std::vector<float> lse(LseElems(c.problem));
      FT_RETURN_IF_ERROR(c.device.o->CopyToHost(o.data(), o.size() * 2));
      FT_RETURN_IF_ERROR(c.device.lse->CopyToHost(lse.data(), lse.size() * 4));
      const ForwardArgs layout = ArgsFor(c.problem, nullptr);
      const double err = RelativeL2Error(GatherOutput(layout, o.data()), c.expected.o);
      const LseComparison lse_cmp = CompareLse(lse, c.expected.lse);
      const Tolerances tol = TolerancesOf(kernel.variant());
      if (!(err <= tol.output_rel_l2) || !lse_cmp.Within(tol.lse_abs)) {
        return Status(Code::kWrongResult, who + " disagrees with the float64 reference on " + c.problem.ToString() +
                                              ": |o-ref|/|ref| = " + Format3g(err) + " (tolerance " +
                                              Format3g(tol.output_rel_l2) + "), lse max error " +
                                              Format3g(lse_cmp.max_error) + ", lse -inf mismatches " +
                                              std::to_string(lse_cmp.infinity_mismatches));
      }
    }
    return Status::Ok();
  }

  Status Verify(const ForwardKernel& kernel, const MeasureRequest& request) {
    auto cases = CasesFor(request.problem);
    if (!cases.ok()) return cases.status();
    FT_RETURN_IF_ERROR(CheckAgainstReference(kernel, **cases, "the candidate"));
    // The trusted output of the timed shape: the class's default variant, itself checked first.
    const std::string problem_key = request.problem.ToString();
    if (trusted_key_ != problem_key) {
      auto trusted = LoadFromImage(*context_, request.trusted_cubin, request.trusted);
      if (!trusted.ok()) return Status(Code::kInternal, "trusted variant failed to load: " + trusted.status().ToString());
      Status checked = CheckAgainstReference(*trusted, **cases, "the trusted variant " + request.trusted.Uri());
      if (!checked.ok()) return checked;
      FT_RETURN_IF_ERROR(RunPoisoned(*trusted, request.problem, output_, &inputs_[0]));
      trusted_output_.resize(QElems(request.problem));
      FT_RETURN_IF_ERROR(output_.o->CopyToHost(trusted_output_.data(), trusted_output_.size() * 2));
      trusted_key_ = problem_key;
    }
    FT_RETURN_IF_ERROR(RunPoisoned(kernel, request.problem, output_, &inputs_[0]));
    candidate_output_.resize(QElems(request.problem));  // reused: tens of MB per candidate
    FT_RETURN_IF_ERROR(output_.o->CopyToHost(candidate_output_.data(), candidate_output_.size() * 2));
    const double err = RelativeError16(candidate_output_, trusted_output_, request.problem.dtype);
    if (!(err <= TolerancesOf(kernel.variant()).output_rel_l2))
      return Status(Code::kWrongResult, "output on the timed shape differs from the trusted variant " +
                                            request.trusted.Uri() + ": relative error " + Format3g(err));
    return Status::Ok();
  }

  // Random inputs for the timed shape, replicated so one pass over the copies exceeds 3x L2
  // (TimedInputSets).
  // q, k and v depend only on the dtype and the sizes, so problems of equal sizes (the default
  // set's all hold B*N*H*D = 16k*2048 elements) share them; only o and lse are reallocated.
  // Preparing a new set (fill, allocation, upload) took ~1.3 s per problem on an H200, more than
  // half of a budgeted run.
  Status PrepareTimedInputs(const Problem& p) {
    const std::string key = p.ToString();
    if (inputs_key_ == key) return Status::Ok();
    inputs_key_.clear();
    trusted_key_.clear();
    // A page table is laid out for one batch and key count: paged inputs are shared by those only.
    const std::string data_key =
        std::string(DTypeName(p.dtype)) + " q" + std::to_string(QElems(p)) + " kv" + std::to_string(KElems(p)) +
        (p.layout == Layout::kPaged ? " paged B" + std::to_string(p.batch) + " Nk" + std::to_string(p.seqlen_k) : "");
    if (data_key_ == data_key) {
      for (DeviceTensors& t : inputs_) {
        t.o.reset();
        t.lse.reset();
        FT_RETURN_IF_ERROR(AllocOutputs(t, p));
      }
    } else {
      PhaseClock clock;
      inputs_.clear();
      data_key_.clear();
      const double free_ms = clock.Lap();
      std::vector<uint16_t> q(QElems(p)), k(KElems(p)), v(KElems(p));
      FillRandom(q, p.dtype, 11);
      FillRandom(k, p.dtype, 12);
      FillRandom(v, p.dtype, 13);
      const double fill_ms = clock.Lap();
      // Paged: the random pool read through a shuffled table (its contents need no order).
      const std::vector<int32_t> table = PageTable(p, 14);
      const double set_bytes = 2.0 * (2 * q.size() + 2 * k.size());
      const int sets = TimedInputSets(set_bytes, info_.l2_bytes);
      inputs_.resize(sets);
      for (DeviceTensors& t : inputs_) FT_RETURN_IF_ERROR(Upload(t, p, q, k, v, table));
      data_key_ = data_key;
      if (trace_)  // where a new input set's time goes (it was ~1.4 s per problem on an H200)
        std::fprintf(stderr, "trace worker inputs for %s: free %.1f ms, fill %.1f ms, %d set(s) of %.0f MB "
                     "allocated and uploaded %.1f ms\n", data_key.c_str(), free_ms, fill_ms, sets, set_bytes / 1e6,
                     clock.Lap());
    }
    output_ = DeviceTensors{};
    FT_RETURN_IF_ERROR(AllocOutputs(output_, p));
    inputs_key_ = key;
    return Status::Ok();
  }

  // The variant's kernel from its cubin, with its registers and local memory in `reply`.
  Result<ForwardKernel> Load(const std::string& image, const Variant& variant, MeasureReply& reply) {
    auto kernel = LoadFromImage(*context_, image, variant);
    if (!kernel.ok()) return kernel.status();
    if (auto regs = kernel->function().NumRegisters(); regs.ok()) reply.registers = *regs;
    if (auto local = kernel->function().LocalBytes(); local.ok()) reply.local_bytes = *local;
    return kernel;
  }

  // The timed inputs of `p`: the backward worker's, or the forward ones.
  Status PrepareInputs(const Problem& p) {
    return p.operation == Operation::kBackward ? backward_->Prepare(p) : PrepareTimedInputs(p);
  }

  // Launches `kernel` on input set i of the prepared problem (no synchronisation).
  std::function<Status(size_t)> Launcher(const Problem& p, const ForwardKernel& kernel) {
    if (p.operation == Operation::kBackward) return [this, &kernel](size_t i) { return backward_->Launch(kernel, i); };
    return [this, p, &kernel](size_t i) {
      ForwardArgs args = ArgsFor(p, &inputs_[i % inputs_.size()]);
      FT_RETURN_IF_ERROR(AttachWorkspace(&args));
      return kernel.Launch(args, stream_->get());
    };
  }

  static void Fill(const LaunchTiming& t, MeasureReply& reply) {
    reply.median_us = t.median_us;
    reply.iqr_us = t.iqr_us;
    reply.reps = t.reps;
  }

  // Times `launches[k](i)` (kernel k on input set i): warm-up by time (the kernels in turn, each
  // at least 3 times), then groups of back-to-back launches between single events, interleaved
  // when there are several (launch_timing.h says why: PDL overlap and tails as users get them).
  Status Time(const std::vector<std::function<Status(size_t)>>& launches, const GpuMeasurerOptions& o,
              std::vector<LaunchTiming>* out) {
    // Warm up by time: clocks ramp, caches and TLBs settle.
    const auto start = std::chrono::steady_clock::now();
    size_t n = 0;
    while (n < 3 * launches.size() ||
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() < o.warmup_ms) {
      FT_RETURN_IF_ERROR(launches[n % launches.size()](n));
      ++n;
      FT_RETURN_IF_ERROR(stream_->Synchronize());
    }
    struct WorkerClock final : LaunchClock {
      GpuWorker& w;
      const std::vector<std::function<Status(size_t)>>& launches;
      WorkerClock(GpuWorker& worker, const std::vector<std::function<Status(size_t)>>& l) : w(worker), launches(l) {}
      int EventCount() const override { return int(w.events_.size()); }
      Status Record(int event) override { return w.events_[event].Record(w.stream_->get()); }
      Status Launch(size_t kernel, size_t input) override { return launches[kernel](input); }
      Status Synchronize() override { return w.stream_->Synchronize(); }
      Result<double> ElapsedMs(int from, int to) override {
        auto ms = Event::ElapsedMs(w.events_[from], w.events_[to]);
        if (!ms.ok()) return ms.status();
        return double(*ms);
      }
    } clock(*this, launches);
    auto timing =
        TimeInterleavedGroups(clock, launches.size(), n, o.min_reps, std::min(o.max_reps, kMaxLaunches), o.timing_ms);
    if (!timing.ok()) return timing.status();
    *out = std::move(*timing);
    return Status::Ok();
  }

  // Wall time between calls to Lap(), for the FLASHTUNE_TRACE lines.
  struct PhaseClock {
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
    double Lap() {
      const auto now = std::chrono::steady_clock::now();
      const double ms = std::chrono::duration<double, std::milli>(now - last).count();
      last = now;
      return ms;
    }
  };

  static constexpr int kMaxLaunches = 128;  // timed launches per candidate, at most (as before groups)
  static constexpr int kEvents = kMaxLaunches + 1;  // one per group boundary: up to 128 groups of one per batch
  const bool trace_ = std::getenv("FLASHTUNE_TRACE") != nullptr;  // phase times on stderr
  int ordinal_;
  Driver* driver_ = nullptr;
  DeviceInfo info_;
  std::unique_ptr<Context> context_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<BackwardWorker> backward_;  // backward problems' inputs, checks and launches
  std::vector<Event> events_;
  std::map<std::string, std::vector<VerifyCase>> cases_;
  std::string inputs_key_;  // the problem inputs_ and output_ are laid out for
  std::string data_key_;    // dtype and sizes of the random q, k, v in inputs_
  std::optional<DeviceBuffer> workspace_;  // split-key partials (AttachWorkspace)
  int64_t workspace_bytes_ = 0;
  std::vector<DeviceTensors> inputs_;
  DeviceTensors output_;
  std::string trusted_key_;
  std::vector<uint16_t> trusted_output_;
  std::vector<uint16_t> candidate_output_;
};

}  // namespace

// An unwritten, poisoned element (NaN/inf) in `a` gives +inf.
// A table of all 65536 values keeps the conversion out of this loop over tens of millions of
// elements per candidate, and the slices run on all cores: this runs once per candidate.
double RelativeError16(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, DType dtype) {
  static const auto tables = [] {
    std::vector<float> t(2 * 65536);
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      t[bits] = BitsToFloat(uint16_t(bits), DType::kF16);
      t[65536 + bits] = BitsToFloat(uint16_t(bits), DType::kBF16);
    }
    return t;
  }();
  const float* table = tables.data() + (dtype == DType::kBF16 ? 65536 : 0);
  struct Partial {
    double diff = 0, norm = 0;
    bool finite = true;
  };
  auto slice = [&](size_t begin, size_t end, Partial& out) {
    for (size_t i = begin; i < end; ++i) {
      const double x = table[a[i]], y = table[b[i]];
      if (!std::isfinite(x)) {
        out.finite = false;
        return;
      }
      out.diff += (x - y) * (x - y);
      out.norm += y * y;
    }
  };
  constexpr size_t kMinPerThread = size_t(1) << 20;
  const size_t threads = std::clamp<size_t>(a.size() / kMinPerThread, 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Partial> partials(threads);
  std::vector<std::thread> pool;
  const size_t per = (a.size() + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(slice, std::min(a.size(), t * per), std::min(a.size(), (t + 1) * per), std::ref(partials[t]));
  slice(0, std::min(a.size(), per), partials[0]);
  for (std::thread& th : pool) th.join();
  double diff = 0, norm = 0;
  for (const Partial& p : partials) {  // fixed order: the same inputs give the same answer
    if (!p.finite) return INFINITY;
    diff += p.diff;
    norm += p.norm;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

int GpuWorkerMain(int request_fd, int reply_fd, int ordinal) {
  GpuWorker worker(ordinal);
  for (;;) {
    auto frame = ReadFrame(request_fd, std::chrono::milliseconds(-1));
    if (!frame.ok()) return 0;  // the parent closed the pipe: done
    FrameReader reader(*frame);
    const int64_t kind = reader.I64();
    if (kind == kHelloMessage) {
      const int64_t theirs = DecodeHelloRequestVersion(reader);
      HelloReply hello;
      if (theirs == kProtocolVersion) {
        hello = worker.Hello();
      } else {  // a tuner of another build: say so rather than touch the GPU for it
        hello.status = Status(Code::kUnsupported, "this GPU worker speaks protocol " + std::to_string(kProtocolVersion) +
                                                      " and the tuner " + std::to_string(theirs));
      }
      hello.protocol_version = kProtocolVersion;
      if (!WriteFrame(reply_fd, EncodeHelloReply(hello)).ok()) return 0;
      continue;
    }
    if (kind == kRetimeMessage) {
      auto request = DecodeRetimeRequest(reader);
      RetimeReply reply;
      if (request.ok()) {
        reply = worker.Retime(*request);
      } else {
        reply.status = request.status();
      }
      if (!WriteFrame(reply_fd, EncodeRetimeReply(reply)).ok()) return 0;
      if (reply.status.code() == Code::kFault) return 3;  // the context is poisoned: restart fresh
      continue;
    }
    MeasureReply reply;
    auto request = kind == kMeasureMessage ? DecodeMeasureRequest(reader)
                                           : Result<MeasureRequest>(Status(Code::kInternal, "unknown request kind"));
    if (request.ok()) {
      reply = worker.Measure(*request);
    } else {
      reply.status = request.status();
    }
    if (!WriteFrame(reply_fd, EncodeMeasureReply(reply)).ok()) return 0;
    if (reply.status.code() == Code::kFault) return 3;  // the context is poisoned: restart fresh
  }
}

}  // namespace flashtune::detail
