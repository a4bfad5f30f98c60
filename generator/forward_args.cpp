// ForwardArgs checks: everything about a forward call that can be verified without a GPU.
#include "flashtune/forward_args.h"

#include "flashtune/problem_set.h"
#include "generator/arg_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>

namespace flashtune {

ForwardArgs ForwardArgs::Contiguous(const Problem& p, int block_size) {
  ForwardArgs a;
  a.problem = p;
  a.q_strides = a.o_strides = Strides::Contiguous(p.seqlen_q, p.heads_q, p.head_dim);
  a.k_strides = a.v_strides = Strides::Contiguous(p.seqlen_k, p.heads_kv, p.head_dim);
  if (p.layout == Layout::kPaged) {
    a.paged.block_size = block_size;
    a.paged.max_blocks_per_seq = block_size > 0 ? (p.seqlen_k + block_size - 1) / block_size : 0;
    a.paged.block_table_stride = a.paged.max_blocks_per_seq;
    a.paged.num_blocks = p.batch * a.paged.max_blocks_per_seq;
    a.k_strides = a.v_strides = Strides::Contiguous(block_size, p.heads_kv, p.head_dim);
  } else if (p.layout == Layout::kVarlen) {
    a.varlen.total_q = p.batch * p.seqlen_q;
    a.varlen.total_k = p.batch * p.seqlen_k;
    a.q_strides.batch = a.o_strides.batch = a.k_strides.batch = a.v_strides.batch = 0;
  }
  return a;
}

float ForwardArgs::EffectiveScale() const {
  if (softmax_scale != 0.0f) return softmax_scale;
  return problem.head_dim > 0 ? float(1.0 / std::sqrt(double(problem.head_dim))) : 0.0f;
}

namespace {

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

}  // namespace

namespace detail {

std::string SupportedHeadDims() {
  std::string s;
  for (int d : kSupportedHeadDims) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return s;
}

Status CheckPointer(const char* name, const void* p, uintptr_t alignment) {
  if (p == nullptr) return Invalid(std::string(name) + " must not be null");
  if (reinterpret_cast<uintptr_t>(p) % alignment != 0) {
    return Invalid(std::string(name) + " must be " + std::to_string(alignment) +
                   "-byte aligned (vector loads/stores)");
  }
  return Status::Ok();
}

// The largest element offset the kernel forms for a [B, N, H, D] tensor must fit in int64
// (it does its address arithmetic in 64 bits).
Status CheckStrides(const char* name, const Strides& s, int64_t batch, int64_t seqlen,
                    int64_t heads, int head_dim) {
  const struct {
    const char* dim;
    int64_t stride;
    int64_t extent;
  } dims[] = {{"batch", s.batch, batch}, {"seq", s.seq, seqlen}, {"head", s.head, heads}};
  int64_t max_offset = head_dim - 1;
  for (const auto& d : dims) {
    if (d.stride < 0) {
      return Invalid(std::string(name) + "_strides." + d.dim + " (" + std::to_string(d.stride) +
                     ") must be >= 0");
    }
    // 2-byte elements: a multiple of 8 elements keeps every row 16-byte aligned.
    if (d.stride % 8 != 0) {
      return Invalid(std::string(name) + "_strides." + d.dim + " (" + std::to_string(d.stride) +
                     ") must be a multiple of 8 elements (16 bytes)");
    }
    int64_t term = 0;
    if (__builtin_mul_overflow(d.stride, d.extent - 1, &term) ||
        __builtin_add_overflow(max_offset, term, &max_offset)) {
      return Invalid(std::string(name) + "_strides: the largest element offset overflows int64");
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(max_offset, int64_t(2), &bytes)) {
    return Invalid(std::string(name) + "_strides: the largest byte offset overflows int64");
  }
  return Status::Ok();
}

Status CheckDistinctElements(const char* name, const Strides& s, int64_t batch, int64_t seqlen, int64_t heads,
                             int head_dim) {
  struct Dim {
    const char* dim;
    int64_t stride;
    int64_t extent;
  } dims[] = {{"batch", s.batch, batch}, {"seq", s.seq, seqlen}, {"head", s.head, heads}};
  std::sort(std::begin(dims), std::end(dims), [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  // Sorted by stride, each dimension of more than one element must step past all the elements
  // of the dimensions inside it: [0, span) so far, a row of head_dim to begin with.
  int64_t span = head_dim;
  for (const Dim& d : dims) {
    if (d.extent <= 1) continue;
    if (d.stride < span) {
      return Invalid(std::string(name) + "_strides." + d.dim + " (" + std::to_string(d.stride) + ") makes " + name +
                     "'s elements overlap: it is written, so each of its " + std::to_string(d.extent) + " " + d.dim +
                     " entries needs its own " + std::to_string(span) + " elements (a stride >= " +
                     std::to_string(span) + ")");
    }
    span += d.stride * (d.extent - 1);  // no overflow: CheckStrides bounded the largest offset
  }
  return Status::Ok();
}

}  // namespace detail

using detail::CheckDistinctElements;
using detail::CheckPointer;
using detail::CheckStrides;
using detail::SupportedHeadDims;

namespace {

// A mixed batch's decode part (packed queries: varlen, or paged with cu_seqlens_q).
Status ValidateDecodeSeqs(const ForwardArgs& a) {
  const Problem& p = a.problem;
  const Varlen& v = a.varlen;
  if (v.decode_seqs < 0 || v.decode_seqs > p.batch)
    return Invalid("varlen.decode_seqs (" + std::to_string(v.decode_seqs) + ") must be in [0, batch = " +
                   std::to_string(p.batch) + "]");
  const int64_t most = std::min<int64_t>(p.seqlen_q, kDecodeMaxQueries);
  if (v.decode_seqs > 0 && (v.decode_max_seqlen_q < 1 || v.decode_max_seqlen_q > most))
    return Invalid("varlen.decode_max_seqlen_q (" + std::to_string(v.decode_max_seqlen_q) + ") must be in [1, " +
                   std::to_string(most) + "] (at most 16 and problem.seqlen_q) when decode_seqs is set");
  return Status::Ok();
}

Status ValidatePaged(const ForwardArgs& a) {
  const Problem& p = a.problem;
  const PagedKv& g = a.paged;
  if (g.block_table == nullptr) return Invalid("paged.block_table must not be null for the paged layout");
  if (reinterpret_cast<uintptr_t>(g.block_table) % 4 != 0) return Invalid("paged.block_table must be 4-byte aligned (int32)");
  if (a.seqlens_k == nullptr) return Invalid("seqlens_k must not be null for the paged layout (the keys of each sequence)");
  if (g.block_size < 1 || g.block_size > 256 || (g.block_size & (g.block_size - 1)) != 0)
    return Invalid("paged.block_size (" + std::to_string(g.block_size) +
                   ") must be a power of two in [1, 256] (1, 2, 4, ..., 16, ..., 256)");
  if (g.max_blocks_per_seq < 1 || g.max_blocks_per_seq > (int64_t{1} << 31) / g.block_size)
    return Invalid("paged.max_blocks_per_seq (" + std::to_string(g.max_blocks_per_seq) + ") must be in [1, 2^31 / block_size]");
  if (g.max_blocks_per_seq * g.block_size < p.seqlen_k)
    return Invalid("seqlen_k (" + std::to_string(p.seqlen_k) + ") exceeds the cache a sequence can address: " +
                   "paged.max_blocks_per_seq (" + std::to_string(g.max_blocks_per_seq) + ") * paged.block_size (" +
                   std::to_string(g.block_size) + ") = " + std::to_string(g.max_blocks_per_seq * g.block_size));
  if (g.block_table_stride < g.max_blocks_per_seq)
    return Invalid("paged.block_table_stride (" + std::to_string(g.block_table_stride) +
                   ") must be >= paged.max_blocks_per_seq (" + std::to_string(g.max_blocks_per_seq) + ")");
  if (g.block_table_stride > std::numeric_limits<int64_t>::max() / p.batch)
    return Invalid("paged.block_table_stride * batch overflows int64");
  if (g.num_blocks < 1 || g.num_blocks > std::numeric_limits<int32_t>::max())
    return Invalid("paged.num_blocks (" + std::to_string(g.num_blocks) + ") must be in [1, 2^31 - 1]");
  // Packed queries (vLLM's varlen q over the cache): q/o rows by cu_seqlens_q; the keys are the
  // pages' and seqlens_k's, so nothing of varlen's key side may be set.
  const Varlen& v = a.varlen;
  if (v.cu_seqlens_k != nullptr || v.total_k != 0)
    return Invalid("varlen.cu_seqlens_k and varlen.total_k must be null or 0 for the paged layout (its keys are the "
                   "pages' and seqlens_k's; only the queries may be packed)");
  if (v.cu_seqlens_q == nullptr) {
    if (v.total_q != 0)
      return Invalid("varlen.total_q (" + std::to_string(v.total_q) + ") is set but varlen.cu_seqlens_q is null");
    if (v.decode_seqs != 0)
      return Invalid("varlen.decode_seqs (" + std::to_string(v.decode_seqs) + ") needs packed queries "
                     "(varlen.cu_seqlens_q): with dense ones every sequence has seqlen_q queries; leave it 0");
    return Status::Ok();
  }
  if (reinterpret_cast<uintptr_t>(v.cu_seqlens_q) % 4 != 0)
    return Invalid("varlen.cu_seqlens_q must be 4-byte aligned (int32)");
  if (v.total_q < 0 || v.total_q > std::numeric_limits<int32_t>::max() || v.total_q > p.batch * p.seqlen_q)
    return Invalid("varlen.total_q (" + std::to_string(v.total_q) + ") must be in [0, batch * seqlen_q = " +
                   std::to_string(p.batch * p.seqlen_q) + "] (and below 2^31)");
  if (a.q_strides.batch != 0 || a.o_strides.batch != 0)
    return Invalid("q_strides.batch and o_strides.batch must be 0 when the queries are packed (varlen.cu_seqlens_q "
                   "set): q and o are [total_q, heads_q, head_dim]");
  return ValidateDecodeSeqs(a);
}

Status ValidateVarlen(const ForwardArgs& a) {
  const Problem& p = a.problem;
  const Varlen& v = a.varlen;
  if (v.cu_seqlens_q == nullptr) return Invalid("varlen.cu_seqlens_q must not be null for the varlen layout");
  if (v.cu_seqlens_k == nullptr) return Invalid("varlen.cu_seqlens_k must not be null for the varlen layout");
  if (reinterpret_cast<uintptr_t>(v.cu_seqlens_q) % 4 != 0 || reinterpret_cast<uintptr_t>(v.cu_seqlens_k) % 4 != 0)
    return Invalid("varlen.cu_seqlens_q and varlen.cu_seqlens_k must be 4-byte aligned (int32)");
  const struct {
    const char* name;
    int64_t total, longest;
  } totals[] = {{"varlen.total_q", v.total_q, p.seqlen_q}, {"varlen.total_k", v.total_k, p.seqlen_k}};
  for (const auto& t : totals) {
    if (t.total < 0 || t.total > std::numeric_limits<int32_t>::max())
      return Invalid(std::string(t.name) + " (" + std::to_string(t.total) + ") must be in [0, 2^31 - 1]");
    if (t.total > p.batch * t.longest)
      return Invalid(std::string(t.name) + " (" + std::to_string(t.total) + ") exceeds batch * the longest sequence (" +
                     std::to_string(p.batch * t.longest) + ")");
  }
  const struct {
    const char* name;
    const Strides& s;
  } strides[] = {{"q", a.q_strides}, {"k", a.k_strides}, {"v", a.v_strides}, {"o", a.o_strides}};
  for (const auto& t : strides)
    if (t.s.batch != 0)
      return Invalid(std::string(t.name) + "_strides.batch (" + std::to_string(t.s.batch) +
                     ") must be 0 for the varlen layout (sequences are rows of one packed tensor)");
  return ValidateDecodeSeqs(a);
}

}  // namespace

Status ValidateForwardArgs(const ForwardArgs& a) {
  const Problem& p = a.problem;
  if (p.dtype != DType::kF16 && p.dtype != DType::kBF16) {
    return Invalid("dtype (" + std::to_string(int(p.dtype)) + ") must be f16 or bf16");
  }
  bool supported = false;
  for (int d : kSupportedHeadDims) supported |= (d == p.head_dim);
  if (!supported) {
    return Invalid("head_dim (" + std::to_string(p.head_dim) + ") must be one of " +
                   SupportedHeadDims());
  }
  // The shape's limits (grid y/z 65535, 32-bit indexes) are the one rule every entry point uses.
  FT_RETURN_IF_ERROR(ValidateProblem(p));
  FT_RETURN_IF_ERROR(CheckPointer("q", a.q, 16));
  FT_RETURN_IF_ERROR(CheckPointer("k", a.k, 16));
  FT_RETURN_IF_ERROR(CheckPointer("v", a.v, 16));
  FT_RETURN_IF_ERROR(CheckPointer("o", a.o, 16));
  if (a.lse != nullptr) FT_RETURN_IF_ERROR(CheckPointer("lse", a.lse, 4));
  if (a.seqlens_k != nullptr && reinterpret_cast<uintptr_t>(a.seqlens_k) % 4 != 0)
    return Invalid("seqlens_k must be 4-byte aligned (int32)");
  // Extents of the tensors as the kernels index them: [batch-like, seq, heads, D].
  int64_t q_outer = p.batch, q_rows = p.seqlen_q, kv_outer = p.batch, kv_rows = p.seqlen_k;
  switch (p.layout) {
    case Layout::kDense:
      if (a.paged.block_table != nullptr || a.varlen.cu_seqlens_q != nullptr || a.varlen.cu_seqlens_k != nullptr ||
          a.varlen.decode_seqs != 0)
        return Invalid("paged.block_table, varlen.cu_seqlens_q, varlen.cu_seqlens_k and varlen.decode_seqs must be "
                       "null or 0 for the dense layout (set problem.layout to paged or varlen)");
      break;
    case Layout::kPaged:
      FT_RETURN_IF_ERROR(ValidatePaged(a));
      kv_outer = a.paged.num_blocks;
      kv_rows = a.paged.block_size;
      if (PackedQueries(a)) {  // q/o [total_q, Hq, D]
        q_outer = 1;
        q_rows = std::max<int64_t>(1, a.varlen.total_q);
      }
      break;
    case Layout::kVarlen:
      if (a.seqlens_k != nullptr) return Invalid("seqlens_k must be null for the varlen layout (cu_seqlens_k gives the keys)");
      FT_RETURN_IF_ERROR(ValidateVarlen(a));
      q_outer = kv_outer = 1;
      q_rows = std::max<int64_t>(1, a.varlen.total_q);
      kv_rows = std::max<int64_t>(1, a.varlen.total_k);
      break;
    default:
      return Invalid("problem.layout (" + std::to_string(int(p.layout)) + ") must be dense, paged or varlen");
  }
  FT_RETURN_IF_ERROR(CheckStrides("q", a.q_strides, q_outer, q_rows, p.heads_q, p.head_dim));
  FT_RETURN_IF_ERROR(CheckStrides("k", a.k_strides, kv_outer, kv_rows, p.heads_kv, p.head_dim));
  FT_RETURN_IF_ERROR(CheckStrides("v", a.v_strides, kv_outer, kv_rows, p.heads_kv, p.head_dim));
  FT_RETURN_IF_ERROR(CheckStrides("o", a.o_strides, q_outer, q_rows, p.heads_q, p.head_dim));
  FT_RETURN_IF_ERROR(CheckDistinctElements("o", a.o_strides, q_outer, q_rows, p.heads_q, p.head_dim));
  // lse is [B, Hq, Nq] (varlen: [Hq, total_q]) contiguous fp32: its element count must fit too.
  if (a.lse != nullptr && q_outer * p.heads_q > std::numeric_limits<int64_t>::max() / q_rows) {
    return Invalid("lse: batch * heads_q * seqlen_q overflows int64");
  }
  if (a.workspace_bytes < 0) return Invalid("workspace_bytes (" + std::to_string(a.workspace_bytes) + ") must be >= 0");
  if (a.workspace_bytes > 0) FT_RETURN_IF_ERROR(CheckPointer("workspace", a.workspace, 16));
  if (!std::isfinite(a.softmax_scale) || a.softmax_scale < 0.0f) {
    return Invalid("softmax_scale (" + std::to_string(a.softmax_scale) +
                   ") must be finite and >= 0 (0 means 1/sqrt(head_dim))");
  }
  return Status::Ok();
}

Status CheckArgsMatchVariant(const Variant& variant, const ForwardArgs& args) {
  auto mismatch = [&](const std::string& field, const std::string& got, const std::string& want) {
    return Invalid("args." + field + " (" + got + ") does not match the variant's " + field + " (" +
                   want + ") of " + variant.Uri());
  };
  const Problem& p = args.problem;
  if (p.dtype != variant.dtype) {
    return mismatch("dtype", std::string(DTypeName(p.dtype)), std::string(DTypeName(variant.dtype)));
  }
  if (p.head_dim != variant.head_dim) {
    return mismatch("head_dim", std::to_string(p.head_dim), std::to_string(variant.head_dim));
  }
  if (p.causal != variant.causal) {
    return mismatch("causal", p.causal ? "true" : "false", variant.causal ? "true" : "false");
  }
  return Status::Ok();
}

namespace {

// Sequence b's key count, as a host copy of seqlens_k holds it: in [0, seqlen_k].
Status CheckLengthHost(int64_t b, int32_t n, int64_t seqlen_k) {
  if (n < 0 || n > seqlen_k)
    return Invalid("seqlens_k[" + std::to_string(b) + "] (" + std::to_string(n) + ") must be in [0, seqlen_k = " +
                   std::to_string(seqlen_k) + "]");
  return Status::Ok();
}

}  // namespace

Status CheckPagedKvHost(const ForwardArgs& a, const std::vector<int32_t>& block_table,
                        const std::vector<int32_t>& seqlens_k) {
  const Problem& p = a.problem;
  const PagedKv& g = a.paged;
  if (int64_t(seqlens_k.size()) != p.batch)
    return Invalid("seqlens_k has " + std::to_string(seqlens_k.size()) + " entries, batch is " + std::to_string(p.batch));
  if (g.block_size < 1 || int64_t(block_table.size()) < p.batch * g.block_table_stride)
    return Invalid("block_table has " + std::to_string(block_table.size()) + " entries, fewer than batch * " +
                   "paged.block_table_stride (" + std::to_string(p.batch * g.block_table_stride) + ")");
  for (int64_t b = 0; b < p.batch; ++b) {
    const int32_t n = seqlens_k[size_t(b)];
    FT_RETURN_IF_ERROR(CheckLengthHost(b, n, p.seqlen_k));
    for (int64_t j = 0; j < (n + g.block_size - 1) / g.block_size; ++j) {
      const int32_t page = block_table[size_t(b * g.block_table_stride + j)];
      if (page < 0 || page >= g.num_blocks)
        return Invalid("block_table[" + std::to_string(b) + "][" + std::to_string(j) + "] (" + std::to_string(page) +
                       ") is not a page: must be in [0, paged.num_blocks = " + std::to_string(g.num_blocks) + ")");
    }
  }
  return Status::Ok();
}

bool PackedQueries(const ForwardArgs& a) {
  return a.problem.layout == Layout::kVarlen || (a.problem.layout == Layout::kPaged && a.varlen.cu_seqlens_q != nullptr);
}

bool DenseWithLengths(const ForwardArgs& a) { return a.problem.layout == Layout::kDense && a.seqlens_k != nullptr; }

bool IsMixedVarlen(const ForwardArgs& a) {
  return a.varlen.decode_seqs != 0 && a.problem.seqlen_q > kDecodeMaxQueries && PackedQueries(a);
}

CallParts MixedVarlenParts(const ForwardArgs& a) {
  CallParts out;
  const Varlen& v = a.varlen;
  if (!IsMixedVarlen(a)) {
    out.part[out.count++] = a;
    return out;
  }
  ForwardArgs decode = a;
  decode.problem.batch = v.decode_seqs;
  decode.problem.seqlen_q = v.decode_max_seqlen_q;
  decode.varlen.decode_seqs = 0;
  out.part[out.count++] = decode;
  if (v.decode_seqs < a.problem.batch) {
    ForwardArgs prefill = a;
    prefill.problem.batch = a.problem.batch - v.decode_seqs;
    prefill.varlen.cu_seqlens_q = v.cu_seqlens_q + v.decode_seqs;
    prefill.varlen.decode_seqs = 0;
    if (a.problem.layout == Layout::kPaged) {  // the rest's lengths and table rows
      prefill.seqlens_k = a.seqlens_k + v.decode_seqs;
      prefill.paged.block_table = a.paged.block_table + v.decode_seqs * a.paged.block_table_stride;
    } else {
      prefill.varlen.cu_seqlens_k = v.cu_seqlens_k + v.decode_seqs;
    }
    out.part[out.count++] = prefill;
  }
  return out;
}

Status CheckCuSeqlensHost(const char* name, const std::vector<int32_t>& cu, int64_t batch, int64_t max_len,
                          int64_t total) {
  if (int64_t(cu.size()) != batch + 1)
    return Invalid(std::string(name) + " has " + std::to_string(cu.size()) + " entries; batch + 1 = " +
                   std::to_string(batch + 1) + " expected");
  if (cu[0] != 0) return Invalid(std::string(name) + "[0] (" + std::to_string(cu[0]) + ") must be 0");
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = int64_t(cu[size_t(b + 1)]) - cu[size_t(b)];
    if (len < 0)
      return Invalid(std::string(name) + " must be non-decreasing: [" + std::to_string(b + 1) + "] (" +
                     std::to_string(cu[size_t(b + 1)]) + ") < [" + std::to_string(b) + "] (" +
                     std::to_string(cu[size_t(b)]) + ")");
    if (len > max_len)
      return Invalid(std::string(name) + ": sequence " + std::to_string(b) + " has " + std::to_string(len) +
                     " rows, more than the longest declared (" + std::to_string(max_len) + ")");
  }
  if (cu[size_t(batch)] != total)
    return Invalid(std::string(name) + "[batch] (" + std::to_string(cu[size_t(batch)]) + ") must equal the total (" +
                   std::to_string(total) + ")");
  return Status::Ok();
}

namespace {
// A mixed batch's decode sequences, the first decode_seqs, have at most decode_max_seqlen_q
// queries each (cu_seqlens_q a host copy, already checked).
Status CheckDecodeSeqsHost(const Varlen& v, const int32_t* cu_seqlens_q) {
  for (int64_t b = 0; b < v.decode_seqs; ++b) {
    const int64_t n = int64_t(cu_seqlens_q[b + 1]) - cu_seqlens_q[b];
    if (n > v.decode_max_seqlen_q)
      return Invalid("sequence " + std::to_string(b) + " has " + std::to_string(n) +
                     " queries, more than varlen.decode_max_seqlen_q (" + std::to_string(v.decode_max_seqlen_q) +
                     "), yet it is one of the first varlen.decode_seqs (" + std::to_string(v.decode_seqs) +
                     ") sequences, which run on the decode kernel");
  }
  return Status::Ok();
}
}  // namespace

Status CheckHostTables(const ForwardArgs& a, const HostTables& t) {
  FT_RETURN_IF_ERROR(ValidateForwardArgs(a));
  const Problem& p = a.problem;
  auto copy = [](const int32_t* table, int64_t n) { return std::vector<int32_t>(table, table + n); };
  auto missing = [&](const char* table) {
    return Invalid(std::string("tables.") + table + " is null, but the " + std::string(LayoutName(p.layout)) +
                   " call reads it");
  };
  switch (p.layout) {
    case Layout::kPaged:
      if (t.block_table == nullptr) return missing("block_table");
      if (t.seqlens_k == nullptr) return missing("seqlens_k");
      if (PackedQueries(a)) {
        if (t.cu_seqlens_q == nullptr) return missing("cu_seqlens_q");
        FT_RETURN_IF_ERROR(CheckCuSeqlensHost("cu_seqlens_q", copy(t.cu_seqlens_q, p.batch + 1), p.batch, p.seqlen_q,
                                              a.varlen.total_q));
        FT_RETURN_IF_ERROR(CheckDecodeSeqsHost(a.varlen, t.cu_seqlens_q));
      }
      return CheckPagedKvHost(a, copy(t.block_table, p.batch * a.paged.block_table_stride),
                              copy(t.seqlens_k, p.batch));
    case Layout::kDense:
      if (a.seqlens_k == nullptr) return Status::Ok();
      if (t.seqlens_k == nullptr) return missing("seqlens_k");
      for (int64_t b = 0; b < p.batch; ++b) FT_RETURN_IF_ERROR(CheckLengthHost(b, t.seqlens_k[b], p.seqlen_k));
      return Status::Ok();
    case Layout::kVarlen: {
      if (t.cu_seqlens_q == nullptr) return missing("cu_seqlens_q");
      if (t.cu_seqlens_k == nullptr) return missing("cu_seqlens_k");
      const Varlen& v = a.varlen;
      FT_RETURN_IF_ERROR(CheckCuSeqlensHost("cu_seqlens_q", copy(t.cu_seqlens_q, p.batch + 1), p.batch, p.seqlen_q,
                                            v.total_q));
      FT_RETURN_IF_ERROR(CheckCuSeqlensHost("cu_seqlens_k", copy(t.cu_seqlens_k, p.batch + 1), p.batch, p.seqlen_k,
                                            v.total_k));
      return CheckDecodeSeqsHost(v, t.cu_seqlens_q);
    }
  }
  return Invalid("problem.layout (" + std::to_string(int(p.layout)) + ") must be dense, paged or varlen");
}

}  // namespace flashtune
