// The GPU worker's backward side (see gpu_worker_backward.h).
#include "tuner/gpu_worker_backward.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "flashtune/backward_args.h"
#include "flashtune/reference.h"
#include "tuner/launch_timing.h"

namespace flashtune::detail {
namespace {

Result<DeviceBuffer> Alloc(const Context& context, size_t bytes) { return DeviceBuffer::Allocate(context, bytes); }

Status Fill(std::optional<DeviceBuffer>& slot, const Context& context, const void* host, size_t bytes) {
  auto b = Alloc(context, bytes);
  if (!b.ok()) return b.status();
  slot.emplace(std::move(*b));
  return host != nullptr ? slot->CopyFromHost(host, bytes) : Status::Ok();
}

std::vector<double> ToDouble(const std::vector<uint16_t>& bits, DType dtype) {
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = BitsToFloat(bits[i], dtype);
  return out;
}

}  // namespace

Status BackwardWorker::AllocGradients(Tensors& t, const Problem& p) {
  FT_RETURN_IF_ERROR(Fill(t.dq, context_, nullptr, QElems(p) * 2));
  FT_RETURN_IF_ERROR(Fill(t.dk, context_, nullptr, KElems(p) * 2));
  FT_RETURN_IF_ERROR(Fill(t.dv, context_, nullptr, KElems(p) * 2));
  return Fill(t.workspace, context_, nullptr, size_t(BackwardWorkspaceBytes(p)));
}

Status BackwardWorker::Upload(Tensors& t, const std::vector<uint16_t>& q,
                              const std::vector<uint16_t>& k, const std::vector<uint16_t>& v,
                              const std::vector<uint16_t>& o, const std::vector<uint16_t>& d_o,
                              const std::vector<float>& lse) {
  FT_RETURN_IF_ERROR(Fill(t.q, context_, q.data(), q.size() * 2));
  FT_RETURN_IF_ERROR(Fill(t.k, context_, k.data(), k.size() * 2));
  FT_RETURN_IF_ERROR(Fill(t.v, context_, v.data(), v.size() * 2));
  FT_RETURN_IF_ERROR(Fill(t.o, context_, o.data(), o.size() * 2));
  FT_RETURN_IF_ERROR(Fill(t.d_o, context_, d_o.data(), d_o.size() * 2));
  return Fill(t.lse, context_, lse.data(), lse.size() * 4);
}

BackwardArgs BackwardWorker::ArgsFor(const Problem& p, const Tensors& in, const Tensors& out) const {
  BackwardArgs a = BackwardArgs::Contiguous(p);
  auto ptr = [](const std::optional<DeviceBuffer>& b) { return reinterpret_cast<void*>(b->get()); };
  a.forward.q = ptr(in.q);
  a.forward.k = ptr(in.k);
  a.forward.v = ptr(in.v);
  a.forward.o = ptr(in.o);
  a.forward.lse = static_cast<float*>(ptr(in.lse));
  a.d_o = ptr(in.d_o);
  a.dq = ptr(out.dq);
  a.dk = ptr(out.dk);
  a.dv = ptr(out.dv);
  a.forward.workspace = ptr(out.workspace);
  a.forward.workspace_bytes = int64_t(out.workspace->size());
  return a;
}

Status BackwardWorker::RunPoisoned(const ForwardKernel& kernel, const Problem& p, const Tensors& inputs,
                                   Tensors& outputs, Gradients* out) {
  for (auto* b : {&outputs.dq, &outputs.dk, &outputs.dv, &outputs.workspace})
    FT_RETURN_IF_ERROR((*b)->MemsetAsync(0xFF, stream_.get()));
  FT_RETURN_IF_ERROR(kernel.LaunchBackward(ArgsFor(p, inputs, outputs), stream_.get()));
  FT_RETURN_IF_ERROR(stream_.Synchronize());
  out->dq.resize(QElems(p));
  out->dk.resize(KElems(p));
  out->dv.resize(KElems(p));
  FT_RETURN_IF_ERROR(outputs.dq->CopyToHost(out->dq.data(), out->dq.size() * 2));
  FT_RETURN_IF_ERROR(outputs.dk->CopyToHost(out->dk.data(), out->dk.size() * 2));
  return outputs.dv->CopyToHost(out->dv.data(), out->dv.size() * 2);
}

Result<std::vector<BackwardWorker::Case>*> BackwardWorker::CasesFor(const Problem& timed) {
  const std::string key = std::string(DTypeName(timed.dtype)) + std::to_string(timed.head_dim) + (timed.causal ? "c" : "f");
  auto it = cases_.find(key);
  if (it != cases_.end()) return &it->second;
  std::vector<Case> cases(2);
  cases[0].problem = Problem{timed.dtype, timed.head_dim, timed.causal, 1, 257, 385, 4, 2, Operation::kBackward};
  cases[1].problem = Problem{timed.dtype, timed.head_dim, timed.causal, 2, 385, 130, 2, 1, Operation::kBackward};
  uint64_t seed = 4321;
  for (Case& c : cases) {
    const Problem& p = c.problem;
    std::vector<uint16_t> q(QElems(p)), k(KElems(p)), v(KElems(p)), d_o(QElems(p)), o(QElems(p));
    FillRandom(q, p.dtype, seed++);
    FillRandom(k, p.dtype, seed++);
    FillRandom(v, p.dtype, seed++);
    FillRandom(d_o, p.dtype, seed++);
    ForwardArgs host = BackwardArgs::Contiguous(p).forward;
    host.q = q.data();
    host.k = k.data();
    host.v = v.data();
    auto forward = ReferenceForward(host);
    if (!forward.ok()) return forward.status();
    for (size_t i = 0; i < o.size(); ++i) o[i] = FloatToBits(float(forward->o[i]), p.dtype);
    std::vector<float> lse(forward->lse.begin(), forward->lse.end());
    auto grads = ReferenceBackward(host, d_o.data(), host.q_strides);
    if (!grads.ok()) return grads.status();
    c.dq = std::move(grads->dq);
    c.dk = std::move(grads->dk);
    c.dv = std::move(grads->dv);
    FT_RETURN_IF_ERROR(Upload(c.device, q, k, v, o, d_o, lse));
    FT_RETURN_IF_ERROR(AllocGradients(c.device, p));
  }
  return &(cases_[key] = std::move(cases));
}

Status BackwardWorker::CheckAgainstReference(const ForwardKernel& kernel, std::vector<Case>& cases,
                                             const std::string& who) {
  for (Case& c : cases) {
    Gradients got;
    FT_RETURN_IF_ERROR(RunPoisoned(kernel, c.problem, c.device, c.device, &got));
    const double tol = TolerancesOf(kernel.variant()).output_rel_l2;
    const std::pair<const char*, double> errors[] = {
        {"dq", RelativeL2Error(ToDouble(got.dq, c.problem.dtype), c.dq)},
        {"dk", RelativeL2Error(ToDouble(got.dk, c.problem.dtype), c.dk)},
        {"dv", RelativeL2Error(ToDouble(got.dv, c.problem.dtype), c.dv)}};
    for (const auto& [name, err] : errors)
      if (!(err <= tol))
        return Status(Code::kWrongResult, who + " disagrees with the float64 reference on " + c.problem.ToString() +
                                              ": |" + name + "-ref|/|ref| = " + Format3g(err) + " (tolerance " +
                                              Format3g(tol) + ")");
  }
  return Status::Ok();
}

Status BackwardWorker::Prepare(const Problem& p) {
  const std::string key = p.ToString();
  if (inputs_key_ == key) return Status::Ok();
  inputs_key_.clear();
  trusted_key_.clear();
  inputs_.clear();
  output_ = Tensors{};
  std::vector<uint16_t> q(QElems(p)), k(KElems(p)), v(KElems(p)), o(QElems(p)), d_o(QElems(p));
  FillRandom(q, p.dtype, 21);
  FillRandom(k, p.dtype, 22);
  FillRandom(v, p.dtype, 23);
  FillRandom(o, p.dtype, 24);
  FillRandom(d_o, p.dtype, 25);
  // Scores of such inputs are within about ±0.3, so a row's lse is close to log(keys it sees).
  std::vector<float> lse(LseElems(p));
  for (int64_t bh = 0; bh < p.batch * p.heads_q; ++bh)
    for (int64_t i = 0; i < p.seqlen_q; ++i) {
      const int64_t visible = p.causal ? std::clamp<int64_t>(i + p.seqlen_k - p.seqlen_q + 1, 0, p.seqlen_k) : p.seqlen_k;
      lse[size_t(bh * p.seqlen_q + i)] = visible > 0 ? float(std::log(double(visible))) : -INFINITY;
    }
  const double set_bytes = 2.0 * (4 * q.size() + 2 * k.size());
  const int sets = TimedInputSets(set_bytes, l2_bytes_);
  inputs_.resize(size_t(sets));
  for (Tensors& t : inputs_) FT_RETURN_IF_ERROR(Upload(t, q, k, v, o, d_o, lse));
  FT_RETURN_IF_ERROR(AllocGradients(output_, p));
  timed_ = p;
  inputs_key_ = key;
  return Status::Ok();
}

Status BackwardWorker::Verify(const ForwardKernel& candidate, const MeasureRequest& request) {
  auto cases = CasesFor(request.problem);
  if (!cases.ok()) return cases.status();
  FT_RETURN_IF_ERROR(CheckAgainstReference(candidate, **cases, "the candidate"));
  const std::string problem_key = request.problem.ToString();
  if (trusted_key_ != problem_key) {
    auto trusted = LoadFromImage(context_, request.trusted_cubin, request.trusted);
    if (!trusted.ok()) return Status(Code::kInternal, "trusted variant failed to load: " + trusted.status().ToString());
    FT_RETURN_IF_ERROR(CheckAgainstReference(*trusted, **cases, "the trusted variant " + request.trusted.Uri()));
    FT_RETURN_IF_ERROR(RunPoisoned(*trusted, request.problem, inputs_[0], output_, &trusted_));
    trusted_key_ = problem_key;
  }
  Gradients got;
  FT_RETURN_IF_ERROR(RunPoisoned(candidate, request.problem, inputs_[0], output_, &got));
  const DType dt = request.problem.dtype;
  const std::pair<const char*, double> errors[] = {{"dq", RelativeError16(got.dq, trusted_.dq, dt)},
                                                   {"dk", RelativeError16(got.dk, trusted_.dk, dt)},
                                                   {"dv", RelativeError16(got.dv, trusted_.dv, dt)}};
  for (const auto& [name, err] : errors)
    if (!(err <= TolerancesOf(candidate.variant()).output_rel_l2))
      return Status(Code::kWrongResult, std::string(name) + " on the timed shape differs from the trusted variant " +
                                            request.trusted.Uri() + ": relative error " + Format3g(err));
  return Status::Ok();
}

Status BackwardWorker::Launch(const ForwardKernel& kernel, size_t i) {
  return kernel.LaunchBackward(ArgsFor(timed_, inputs_[i % inputs_.size()], output_), stream_.get());
}

}  // namespace flashtune::detail
