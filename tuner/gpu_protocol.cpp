#include "tuner/gpu_protocol.h"

namespace flashtune::detail {

static void PutStatus(FrameWriter& w, const Status& s) {
  w.I64(static_cast<int64_t>(s.code())).Str(s.message()).Str(s.variant_uri()).Str(s.log());
}
static Status GetStatus(FrameReader& r) {
  const auto code = static_cast<Code>(r.I64());
  std::string message = r.Str(), uri = r.Str(), log = r.Str();
  if (code == Code::kOk) return Status::Ok();
  Status s(code, std::move(message));
  if (!uri.empty()) s.WithVariant(std::move(uri));
  if (!log.empty()) s.WithLog(std::move(log));
  return s;
}
static void PutProblem(FrameWriter& w, const Problem& p) {
  w.I64(static_cast<int64_t>(p.dtype)).I64(p.head_dim).I64(p.causal).I64(p.batch).I64(p.seqlen_q).I64(p.seqlen_k)
      .I64(p.heads_q).I64(p.heads_kv).I64(static_cast<int64_t>(p.operation)).I64(static_cast<int64_t>(p.layout));
}
static Problem GetProblem(FrameReader& r) {
  Problem p;
  p.dtype = static_cast<DType>(r.I64());
  p.head_dim = static_cast<int>(r.I64());
  p.causal = r.I64() != 0;
  p.batch = r.I64();
  p.seqlen_q = r.I64();
  p.seqlen_k = r.I64();
  p.heads_q = r.I64();
  p.heads_kv = r.I64();
  p.operation = static_cast<Operation>(r.I64());
  p.layout = static_cast<Layout>(r.I64());
  return p;
}
// A variant travels as its URI: every family's parameters, and the worker re-validates it.
static void PutVariant(FrameWriter& w, const Variant& v) { w.Str(v.Uri()); }
static Variant GetVariant(FrameReader& r) {
  const std::string uri = r.Str();
  auto v = Variant::FromUri(uri);
  if (v.ok()) return *v;
  Variant unknown;  // fails the worker's checks with the URI in its message
  unknown.family = uri;
  unknown.params.clear();
  return unknown;
}
static Status Broken(const char* what) { return Status(Code::kInternal, std::string("malformed ") + what + " frame"); }

std::string EncodeHelloRequest() { return FrameWriter().I64(kHelloMessage).I64(kProtocolVersion).data(); }

int64_t DecodeHelloRequestVersion(FrameReader& reader) {
  const int64_t version = reader.I64();
  return reader.ok() ? version : 0;
}

std::string EncodeHelloReply(const HelloReply& h) {
  FrameWriter w;
  w.I64(h.protocol_version);  // first: an older worker's reply starts with a status code (0)
  PutStatus(w, h.status);
  const DeviceInfo& d = h.device;
  w.I64(h.device_count).Str(h.driver_version).I64(d.ordinal).Str(d.name).Str(d.uuid).I64(d.cc_major).I64(d.cc_minor)
      .I64(d.sm_count).I64(d.max_smem_per_block_optin).I64(d.l2_bytes).I64(d.clock_khz);
  return w.data();
}

Result<HelloReply> DecodeHelloReply(const std::string& frame) {
  FrameReader r(frame);
  HelloReply h;
  h.protocol_version = r.I64();
  if (h.protocol_version != kProtocolVersion)
    return Status(Code::kUnsupported, "the GPU worker speaks protocol " + std::to_string(h.protocol_version) +
                                          " and this tuner " + std::to_string(kProtocolVersion) +
                                          ": they come from different flashtune builds");
  h.status = GetStatus(r);
  h.device_count = static_cast<int>(r.I64());
  h.driver_version = r.Str();
  DeviceInfo& d = h.device;
  d.ordinal = static_cast<int>(r.I64());
  d.name = r.Str();
  d.uuid = r.Str();
  d.cc_major = static_cast<int>(r.I64());
  d.cc_minor = static_cast<int>(r.I64());
  d.sm_count = static_cast<int>(r.I64());
  d.max_smem_per_block_optin = static_cast<int>(r.I64());
  d.l2_bytes = static_cast<int>(r.I64());
  d.clock_khz = static_cast<int>(r.I64());
  if (!r.ok()) return Broken("hello reply");
  return h;
}

// The timing options a request carries.
static void PutTiming(FrameWriter& w, const GpuMeasurerOptions& o) {
  w.I64(o.min_reps).I64(o.max_reps).F64(o.warmup_ms).F64(o.timing_ms);
}
static void GetTiming(FrameReader& r, GpuMeasurerOptions& o) {
  o.min_reps = static_cast<int>(r.I64());
  o.max_reps = static_cast<int>(r.I64());
  o.warmup_ms = r.F64();
  o.timing_ms = r.F64();
}

std::string EncodeMeasureRequest(const MeasureRequest& m) {
  FrameWriter w;
  w.I64(kMeasureMessage);
  PutProblem(w, m.problem);
  PutVariant(w, m.candidate);
  w.Str(m.candidate_cubin);
  PutVariant(w, m.trusted);
  w.Str(m.trusted_cubin).I64(m.verify);
  PutTiming(w, m.options);
  return w.data();
}

Result<MeasureRequest> DecodeMeasureRequest(FrameReader& r) {
  MeasureRequest m;
  m.problem = GetProblem(r);
  m.candidate = GetVariant(r);
  m.candidate_cubin = r.Str();
  m.trusted = GetVariant(r);
  m.trusted_cubin = r.Str();
  m.verify = r.I64() != 0;
  GetTiming(r, m.options);
  if (!r.ok()) return Broken("measure request");
  return m;
}

static void PutReply(FrameWriter& w, const MeasureReply& m) {
  PutStatus(w, m.status);
  w.F64(m.median_us).F64(m.iqr_us).I64(m.reps).I64(m.registers).I64(m.local_bytes);
}
static MeasureReply GetReply(FrameReader& r) {
  MeasureReply m;
  m.status = GetStatus(r);
  m.median_us = r.F64();
  m.iqr_us = r.F64();
  m.reps = static_cast<int>(r.I64());
  m.registers = static_cast<int>(r.I64());
  m.local_bytes = static_cast<int>(r.I64());
  return m;
}

std::string EncodeMeasureReply(const MeasureReply& m) {
  FrameWriter w;
  PutReply(w, m);
  return w.data();
}

Result<MeasureReply> DecodeMeasureReply(const std::string& frame) {
  FrameReader r(frame);
  MeasureReply m = GetReply(r);
  if (!r.ok()) return Broken("measure reply");
  return m;
}

// Counts are bounded so that a damaged frame cannot ask for a huge allocation.
constexpr int64_t kMaxRetimed = 1000;

std::string EncodeRetimeRequest(const RetimeRequest& m) {
  FrameWriter w;
  w.I64(kRetimeMessage);
  PutProblem(w, m.problem);
  w.I64(int64_t(m.candidates.size()));
  for (size_t i = 0; i < m.candidates.size(); ++i) {
    PutVariant(w, m.candidates[i]);
    w.Str(i < m.cubins.size() ? m.cubins[i] : std::string());
  }
  PutTiming(w, m.options);
  return w.data();
}

Result<RetimeRequest> DecodeRetimeRequest(FrameReader& r) {
  RetimeRequest m;
  m.problem = GetProblem(r);
  const int64_t n = r.I64();
  if (!r.ok() || n < 0 || n > kMaxRetimed) return Broken("retime request");
  for (int64_t i = 0; i < n; ++i) {
    m.candidates.push_back(GetVariant(r));
    m.cubins.push_back(r.Str());
  }
  GetTiming(r, m.options);
  if (!r.ok()) return Broken("retime request");
  return m;
}

std::string EncodeRetimeReply(const RetimeReply& m) {
  FrameWriter w;
  PutStatus(w, m.status);
  w.I64(int64_t(m.results.size()));
  for (const MeasureReply& result : m.results) PutReply(w, result);
  return w.data();
}

Result<RetimeReply> DecodeRetimeReply(const std::string& frame) {
  FrameReader r(frame);
  RetimeReply m;
  m.status = GetStatus(r);
  const int64_t n = r.I64();
  if (!r.ok() || n < 0 || n > kMaxRetimed) return Broken("retime reply");
  for (int64_t i = 0; i < n; ++i) m.results.push_back(GetReply(r));
  if (!r.ok()) return Broken("retime reply");
  return m;
}

}  // namespace flashtune::detail
