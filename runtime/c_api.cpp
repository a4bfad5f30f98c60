// The C ABI (include/flashtune/flashtune.h) over flashtune::Runtime.
#include "flashtune/flashtune.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "flashtune/runtime.h"
#include "generator/family.h"

struct ft_runtime {
  std::unique_ptr<flashtune::Runtime> runtime;
};

namespace {

using flashtune::Code;
using flashtune::Status;

static_assert(FT_INTERNAL == static_cast<int>(Code::kInternal) && FT_CORRUPT == static_cast<int>(Code::kCorrupt),
              "FT_* status codes must follow flashtune::Code");

thread_local std::string t_last_error;

int Fail(const Status& status) {
  t_last_error = status.ToString();
  return static_cast<int>(status.code());
}

int Fail(Code code, const std::string& message) { return Fail(Status(code, message)); }

int Succeed() {
  t_last_error.clear();
  return FT_OK;
}

void Copy(char* out, size_t size, const std::string& text) {
  std::snprintf(out, size, "%s", text.c_str());
}

// Converts a C problem; kInvalidArgument naming the field for a bad dtype or flag.
flashtune::Result<flashtune::Problem> ToProblem(const ft_problem& p, const char* what) {
  flashtune::Problem out;
  if (p.dtype == FT_DTYPE_F16) {
    out.dtype = flashtune::DType::kF16;
  } else if (p.dtype == FT_DTYPE_BF16) {
    out.dtype = flashtune::DType::kBF16;
  } else {
    return Status(Code::kInvalidArgument, std::string(what) + ".dtype: " + std::to_string(p.dtype) +
                                              " is not a dtype; allowed: FT_DTYPE_F16 (1), FT_DTYPE_BF16 (2)");
  }
  if (p.causal != 0 && p.causal != 1)
    return Status(Code::kInvalidArgument,
                  std::string(what) + ".causal: " + std::to_string(p.causal) + "; allowed: 0, 1");
  out.head_dim = p.head_dim;
  out.causal = p.causal == 1;
  out.batch = p.batch;
  out.seqlen_q = p.seqlen_q;
  out.seqlen_k = p.seqlen_k;
  out.heads_q = p.heads_q;
  out.heads_kv = p.heads_kv;
  return out;
}

flashtune::Strides ToStrides(const int64_t s[3]) { return flashtune::Strides{s[0], s[1], s[2]}; }

// The fields ft_forward_args and ft_attention_args share; kInvalidArgument naming the field of
// `what`.
template <typename CArgs>
flashtune::Result<flashtune::ForwardArgs> ToForwardArgs(const CArgs& args, const std::string& what) {
  auto problem = ToProblem(args.problem, (what + ".problem").c_str());
  if (!problem.ok()) return problem.status();
  flashtune::ForwardArgs a;
  a.problem = *problem;
  a.softmax_scale = args.softmax_scale;
  a.q = args.q;
  a.k = args.k;
  a.v = args.v;
  a.o = args.o;
  a.lse = args.lse;
  a.q_strides = ToStrides(args.q_strides);
  a.k_strides = ToStrides(args.k_strides);
  a.v_strides = ToStrides(args.v_strides);
  a.o_strides = ToStrides(args.o_strides);
  return a;
}

// Version 1 ends before decode_seqs; version 2 (sizeof) appends the mixed-batch fields. A
// version-1 caller's struct is copied into a zeroed version-2 one (never read past its size).
constexpr uint32_t kAttentionArgsV1Size = offsetof(ft_attention_args, decode_seqs);
constexpr uint32_t kAttentionArgsV2Size = sizeof(ft_attention_args);

flashtune::Result<flashtune::ForwardArgs> FromAttentionArgs(const ft_attention_args& given) {
  if (given.struct_size != kAttentionArgsV1Size && given.struct_size != kAttentionArgsV2Size)
    return Status(Code::kInvalidArgument, "args.struct_size (" + std::to_string(given.struct_size) +
                                              ") is not a known ft_attention_args size; allowed: " +
                                              std::to_string(kAttentionArgsV2Size) + " (sizeof, version 2) or " +
                                              std::to_string(kAttentionArgsV1Size) + " (version 1)");
  ft_attention_args args;
  std::memset(&args, 0, sizeof args);
  std::memcpy(&args, &given, given.struct_size);
  auto a = ToForwardArgs(args, "args");
  if (!a.ok()) return a.status();
  switch (args.layout) {
    case FT_LAYOUT_DENSE: a->problem.layout = flashtune::Layout::kDense; break;
    case FT_LAYOUT_PAGED: a->problem.layout = flashtune::Layout::kPaged; break;
    case FT_LAYOUT_VARLEN: a->problem.layout = flashtune::Layout::kVarlen; break;
    default:
      return Status(Code::kInvalidArgument, "args.layout (" + std::to_string(args.layout) +
                                                "); allowed: FT_LAYOUT_DENSE (0), FT_LAYOUT_PAGED (1), FT_LAYOUT_VARLEN (2)");
  }
  a->seqlens_k = args.seqlens_k;
  a->paged = {args.block_table, args.block_table_stride, args.max_blocks_per_seq, args.num_blocks, args.block_size};
  a->varlen = {args.cu_seqlens_q, args.cu_seqlens_k, args.total_q, args.total_k, args.decode_seqs,
               args.decode_max_seqlen_q};
  a->workspace = args.workspace;
  a->workspace_bytes = args.workspace_bytes;
  return a;
}

// Fills *out from a plan.
void FillPlanInfo(const flashtune::Plan& plan, ft_plan_info* out) {
  std::memset(out, 0, sizeof *out);
  Copy(out->variant_uri, sizeof out->variant_uri, plan.variant.Uri());
  out->source = plan.source == flashtune::PlanSource::kExact       ? FT_PLAN_EXACT
                : plan.source == flashtune::PlanSource::kNearest   ? FT_PLAN_NEAREST
                : plan.source == flashtune::PlanSource::kNeighbour ? FT_PLAN_NEIGHBOUR
                                                                   : FT_PLAN_HEURISTIC;
  Copy(out->source_name, sizeof out->source_name, std::string(flashtune::PlanSourceName(plan.source)));
  Copy(out->bucket, sizeof out->bucket, plan.bucket_name);
  Copy(out->tuned_bucket, sizeof out->tuned_bucket, plan.tuned_bucket);
  out->tuned_median_us = plan.tuned_median_us;
  const auto& params = plan.variant.params;
  out->block_m = params.size() > 0 ? params[0].value : 0;
  out->block_n = params.size() > 1 ? params[1].value : 0;
  out->warps = flashtune::ThreadsPerBlock(plan.variant) / 32;
  out->stages = plan.variant.Param("s");
  Copy(out->family, sizeof out->family, plan.variant.family);
  Copy(out->why, sizeof out->why, plan.why);
}

// The runtime's plan of `problem` into *out (the arguments checked).
int PlanInto(ft_runtime* runtime, const flashtune::Problem& problem, ft_plan_info* out) {
  auto plan = runtime->runtime->plan(problem);
  if (!plan.ok()) return Fail(plan.status());
  FillPlanInfo(*plan, out);
  return Succeed();
}

int PlanFor(ft_runtime* runtime, const ft_problem* problem, ft_plan_info* out, flashtune::Operation operation,
            const char* fn) {
  if (runtime == nullptr) return Fail(Code::kInvalidArgument, std::string(fn) + ": runtime is NULL");
  if (problem == nullptr) return Fail(Code::kInvalidArgument, std::string(fn) + ": problem is NULL");
  if (out == nullptr) return Fail(Code::kInvalidArgument, std::string(fn) + ": out is NULL");
  auto p = ToProblem(*problem, "problem");
  if (!p.ok()) return Fail(p.status());
  p->operation = operation;
  return PlanInto(runtime, *p, out);
}

}  // namespace

extern "C" {

int ft_runtime_open(const char* db_path, ft_runtime** out) {
  if (out == nullptr) return Fail(Code::kInvalidArgument, "ft_runtime_open: out is NULL");
  *out = nullptr;
  flashtune::RuntimeOptions options;
  if (db_path != nullptr) options.db_path = db_path;
  auto runtime = flashtune::Runtime::Open(options);
  if (!runtime.ok()) return Fail(runtime.status());
  *out = new ft_runtime{std::move(*runtime)};
  return Succeed();
}

int ft_runtime_open_ex(const ft_runtime_options* options, ft_runtime** out) {
  if (out == nullptr) return Fail(Code::kInvalidArgument, "ft_runtime_open_ex: out is NULL");
  *out = nullptr;
  if (options == nullptr) return Fail(Code::kInvalidArgument, "ft_runtime_open_ex: options is NULL");
  if (options->struct_size != sizeof(ft_runtime_options))
    return Fail(Code::kInvalidArgument, "options.struct_size (" + std::to_string(options->struct_size) +
                                            "): set it to sizeof(ft_runtime_options) (" +
                                            std::to_string(sizeof(ft_runtime_options)) + ")");
  flashtune::RuntimeOptions o;
  if (options->db_path != nullptr) o.db_path = options->db_path;
  switch (options->online_tuning) {
    case FT_ONLINE_TUNING_FROM_ENV: break;
    case FT_ONLINE_TUNING_ON: o.online_tuning = true; break;
    case FT_ONLINE_TUNING_OFF: o.online_tuning = false; break;
    default:
      return Fail(Code::kInvalidArgument, "options.online_tuning (" + std::to_string(options->online_tuning) +
                                              "); allowed: FT_ONLINE_TUNING_FROM_ENV (0), FT_ONLINE_TUNING_ON (1), "
                                              "FT_ONLINE_TUNING_OFF (2)");
  }
  if (options->online_tuning_cli != nullptr) o.online_tuning_cli = options->online_tuning_cli;
  o.online_tuning_budget = options->online_tuning_budget;
  o.online_tuning_timeout_s = options->online_tuning_timeout_s;
  auto runtime = flashtune::Runtime::Open(o);
  if (!runtime.ok()) return Fail(runtime.status());
  *out = new ft_runtime{std::move(*runtime)};
  return Succeed();
}

void ft_runtime_close(ft_runtime* runtime) { delete runtime; }

int ft_forward(ft_runtime* runtime, const ft_forward_args* args, void* stream) {
  if (runtime == nullptr) return Fail(Code::kInvalidArgument, "ft_forward: runtime is NULL");
  if (args == nullptr) return Fail(Code::kInvalidArgument, "ft_forward: args is NULL");
  auto a = ToForwardArgs(*args, "args");
  if (!a.ok()) return Fail(a.status());
  Status status = runtime->runtime->forward(*a, static_cast<CUstream>(stream));
  return status.ok() ? Succeed() : Fail(status);
}

int ft_forward_ex(ft_runtime* runtime, const ft_attention_args* args, void* stream) {
  if (runtime == nullptr) return Fail(Code::kInvalidArgument, "ft_forward_ex: runtime is NULL");
  if (args == nullptr) return Fail(Code::kInvalidArgument, "ft_forward_ex: args is NULL");
  auto a = FromAttentionArgs(*args);
  if (!a.ok()) return Fail(a.status());
  Status status = runtime->runtime->forward(*a, static_cast<CUstream>(stream));
  return status.ok() ? Succeed() : Fail(status);
}

int ft_workspace_size(ft_runtime* runtime, const ft_attention_args* args, int64_t* bytes) {
  if (runtime == nullptr) return Fail(Code::kInvalidArgument, "ft_workspace_size: runtime is NULL");
  if (args == nullptr) return Fail(Code::kInvalidArgument, "ft_workspace_size: args is NULL");
  if (bytes == nullptr) return Fail(Code::kInvalidArgument, "ft_workspace_size: bytes is NULL");
  *bytes = 0;
  auto a = FromAttentionArgs(*args);
  if (!a.ok()) return Fail(a.status());
  auto size = runtime->runtime->workspace_size(a->problem);
  if (!size.ok()) return Fail(size.status());
  *bytes = *size;
  return Succeed();
}

int ft_plan(ft_runtime* runtime, const ft_problem* problem, ft_plan_info* out) {
  return PlanFor(runtime, problem, out, flashtune::Operation::kForward, "ft_plan");
}

int ft_check_tables(const ft_attention_args* args, const int32_t* block_table, const int32_t* seqlens_k,
                    const int32_t* cu_seqlens_q, const int32_t* cu_seqlens_k) {
  if (args == nullptr) return Fail(Code::kInvalidArgument, "ft_check_tables: args is NULL");
  auto a = FromAttentionArgs(*args);
  if (!a.ok()) return Fail(a.status());
  flashtune::HostTables tables;
  tables.block_table = block_table;
  tables.seqlens_k = seqlens_k;
  tables.cu_seqlens_q = cu_seqlens_q;
  tables.cu_seqlens_k = cu_seqlens_k;
  Status s = flashtune::CheckHostTables(*a, tables);
  return s.ok() ? Succeed() : Fail(s);
}

int ft_plan_ex(ft_runtime* runtime, const ft_attention_args* args, ft_plan_info* out) {
  if (runtime == nullptr) return Fail(Code::kInvalidArgument, "ft_plan_ex: runtime is NULL");
  if (args == nullptr) return Fail(Code::kInvalidArgument, "ft_plan_ex: args is NULL");
  if (out == nullptr) return Fail(Code::kInvalidArgument, "ft_plan_ex: out is NULL");
  auto a = FromAttentionArgs(*args);
  if (!a.ok()) return Fail(a.status());
  if (flashtune::IsMixedVarlen(*a))
    return Fail(Code::kInvalidArgument,
                "ft_plan_ex: args.decode_seqs (" + std::to_string(a->varlen.decode_seqs) +
                    ") makes a mixed call, which launches two plans; ask for each part: the decode part as a call "
                    "of decode_seqs sequences of decode_max_seqlen_q queries, the rest with decode_seqs 0");
  auto plan = runtime->runtime->plan(*a);
  if (!plan.ok()) return Fail(plan.status());
  FillPlanInfo(*plan, out);
  return Succeed();
}

int ft_plan_backward(ft_runtime* runtime, const ft_problem* problem, ft_plan_info* out) {
  return PlanFor(runtime, problem, out, flashtune::Operation::kBackward, "ft_plan_backward");
}

int ft_backward_workspace_bytes(const ft_problem* problem, int64_t* out) {
  if (problem == nullptr) return Fail(Code::kInvalidArgument, "ft_backward_workspace_bytes: problem is NULL");
  if (out == nullptr) return Fail(Code::kInvalidArgument, "ft_backward_workspace_bytes: out is NULL");
  auto p = ToProblem(*problem, "problem");
  if (!p.ok()) return Fail(p.status());
  p->operation = flashtune::Operation::kBackward;
  Status valid = flashtune::ValidateProblem(*p);
  if (!valid.ok()) return Fail(valid);
  *out = flashtune::WorkspaceBytes(*p, 0);  // the backward workspace does not depend on the SM count
  return Succeed();
}

int ft_backward(ft_runtime* runtime, const ft_backward_args* args, void* stream) {
  if (runtime == nullptr) return Fail(Code::kInvalidArgument, "ft_backward: runtime is NULL");
  if (args == nullptr) return Fail(Code::kInvalidArgument, "ft_backward: args is NULL");
  auto f = ToForwardArgs(args->forward, "args.forward");
  if (!f.ok()) return Fail(f.status());
  if (args->deterministic != 0 && args->deterministic != 1)
    return Fail(Code::kInvalidArgument,
                "args.deterministic: " + std::to_string(args->deterministic) + "; allowed: 0, 1");
  flashtune::BackwardArgs b;
  b.forward = *f;
  b.d_o = args->d_o;
  b.dq = args->dq;
  b.dk = args->dk;
  b.dv = args->dv;
  b.d_o_strides = ToStrides(args->d_o_strides);
  b.dq_strides = ToStrides(args->dq_strides);
  b.dk_strides = ToStrides(args->dk_strides);
  b.dv_strides = ToStrides(args->dv_strides);
  b.forward.workspace = args->workspace;
  b.forward.workspace_bytes = args->workspace_bytes;
  b.deterministic = args->deterministic == 1;
  Status status = runtime->runtime->backward(b, static_cast<CUstream>(stream));
  return status.ok() ? Succeed() : Fail(status);
}

const char* ft_last_error(void) { return t_last_error.c_str(); }

const char* ft_status_name(int status) {
  if (status < static_cast<int>(Code::kOk) || status > static_cast<int>(Code::kInternal)) return "unknown";
  static thread_local std::string name;
  name = std::string(flashtune::CodeName(static_cast<Code>(status)));
  return name.c_str();
}

const char* ft_version(void) { return FLASHTUNE_VERSION; }

}  // extern "C"
