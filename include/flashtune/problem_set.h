// flashtune/problem_set.h — the problems a tuning run covers, and the bucketing rule that maps
// any problem to the tuned entry the runtime uses.
//
// A problem set is the cross product dtype × head dim × causal × sequence length, sized like
// FA-2's benchmark (hidden = Hq·D fixed, B·N fixed), or a list read from a problem-set file,
// or a model's attention shape (flashtune/model_config.h).
//
// Bucketing rule (shared by the tuner when it stores winners and the runtime when it looks them
// up): dtype, head dim and causal are exact; Nq, Nk and B·Hq are each bucketed to the next power
// of two, stored as the exponent: bucket(n) = ceil(log2(n)), so 512 → 9, 513..1024 → 10; so is
// the GQA group Hq/Hkv (1 → 0, 8 → 3), because K/V shared by 8 query heads can move the best
// tile (H200: 3-5% at d128 causal, docs/performance.md). Two buckets of the same (dtype, D,
// causal) are `BucketDistance` apart (sum of the sequence and B·Hq exponent gaps); the group gap
// only breaks ties (`GroupGap`), so a GQA call whose own group is untuned gets the MHA winner of
// its shape, as before groups were buckets. A paged K/V call has buckets of its own, never near
// the dense ones: a winner is timed on the layout it serves (the dense winner of B8 x 32k, bn128
// w4 s2, read 16-key pages at 68% of the H200's read bandwidth, the untuned default at 91-94%).
// Varlen calls share the dense buckets.
//
// Problem-set file format (one problem per line, '#' starts a comment, blank lines ignored):
//   dtype=bf16 head_dim=128 causal=1 batch=4 seqlen_q=4096 seqlen_k=4096 heads_q=16 heads_kv=16
// Fields are key=value separated by spaces, in any order; the keys are the CLI's option names
// (--seqlen-q) and the export's columns (seqlen_q), with '-' or '_'. Required: dtype, head_dim,
// seqlen_q, and either batch and heads_q, or tokens and hidden (batch = tokens/seqlen_q,
// heads_q = hidden/head_dim). Optional: causal (0/1, default 0), seqlen_k (default seqlen_q),
// heads_kv (default heads_q), layout (dense or paged, default dense; the tuner times a paged
// problem on a pool of shuffled 16-key pages). The old keys d, nq, nk, hq, hkv are read too, with a notice.
// Errors name the file, line and field.
//
// Thread safety: free functions on value types; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/export.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

struct ProblemSetOptions {
  std::vector<DType> dtypes = {DType::kBF16, DType::kF16};
  // What models use: 64 (GPT-2, BERT), 96 (Phi), 128 (Llama, Mistral, Qwen), 192, 256 (Gemma).
  std::vector<int> head_dims = {64, 96, 128, 192, 256};
  std::vector<bool> causal = {false, true};
  std::vector<int64_t> seqlens = {512, 1024, 2048, 4096, 8192, 16384};  // Nq
  // Empty: Nk = Nq. Otherwise every Nq is crossed with every Nk here.
  std::vector<int64_t> seqlens_k;
  int64_t hidden = 2048;   // Hq = hidden / D (see exact_hidden)
  // false: a head dim that does not divide `hidden` gets the head count nearest hidden / D
  // (a multiple of heads_kv when that is set; a tie takes the smaller), e.g. d96 → 21 heads
  // for hidden 2048, so any
  // supported head dim can be named alone. true: `hidden` was chosen by the user and must be a
  // multiple of every head dim; the error names the two nearest hiddens that are.
  bool exact_hidden = false;
  int64_t tokens = 16384;  // B = tokens / Nq (at least 1)
  int64_t heads_kv = 0;    // 0: Hkv = Hq (MHA); otherwise GQA/MQA with this many K/V heads
};

// The cross product described by `options`, in the order dtype, D, causal, Nq, Nk.
// OK with at least one problem, or kInvalidArgument naming the option and the allowed values
// (e.g. a head dim the template does not support, hidden not divisible by D with exact_hidden,
// Hq % Hkv != 0).
Result<std::vector<Problem>> MakeProblemSet(const ProblemSetOptions& options);

// Decode shapes of one attention configuration (dtype, D, Hq, Hkv): what an inference engine's
// decode steps call. Crossed, in this order: causal, Nq (query tokens per sequence: 1, or a
// speculative draft's few; at most kDecodeMaxQueries), batch, keys, layout.
struct DecodeSetOptions {
  std::vector<bool> causal = {false};
  std::vector<int64_t> seqlens_q = {1};
  std::vector<int64_t> batches = {1, 8, 64};
  std::vector<int64_t> keys = {2048, 8192, 32768, 131072};
  // Dense and paged K/V each have their own buckets (a paged call's winner is timed on pages).
  std::vector<Layout> layouts = {Layout::kDense, Layout::kPaged};
  // A model's context: longer key counts are left out (none left: this count alone); 0: none.
  int64_t max_keys = 0;
};
// Inclusive bound on a decode problem's K+V bytes (B·Nk·Hkv·D·2·2): 8 GiB, B64 x 32k at 8 K/V
// heads of d128; larger shapes (B64 x 128k: 34 GB) are more than a tuning run should hold.
inline constexpr int64_t kMaxDecodeKvBytes = int64_t(8) << 30;
// The cross product, leaving out shapes past kMaxDecodeKvBytes. kInvalidArgument naming the
// option and the allowed values: an empty list, Nq outside [1, 16], a layout other than dense
// or paged, or a shape ValidateProblem refuses.
Result<std::vector<Problem>> MakeDecodeSet(DType dtype, int head_dim, int64_t heads_q, int64_t heads_kv,
                                           const DecodeSetOptions& options = {});

// The default set's decode configuration: Llama-3-8B's attention.
inline constexpr DType kDefaultDecodeDType = DType::kBF16;
inline constexpr int kDefaultDecodeHeadDim = 128;
inline constexpr int64_t kDefaultDecodeHeadsQ = 32;
inline constexpr int64_t kDefaultDecodeHeadsKv = 8;

// The default set's decode buckets (`flashtune tune` adds them when no shape option is given):
// MakeDecodeSet for the default decode configuration with the default options: one query
// token, batch 1, 8, 64 x keys 2k, 8k, 32k, 128k but not 64 x 128k, each dense and paged: 22
// buckets.
std::vector<Problem> DefaultDecodeProblems();

// The default set's GQA buckets (`flashtune tune` adds them, like the decode ones, when no shape
// option is given): GQA-8 (Hq 16, Hkv 2) for d128 causal, both dtypes, at the default set's
// lengths (B = 16384 / N) — where GQA-8 changed the winner on the H200 by more than the 3%
// target (N 1k: 3.3%, 4k: 5.5%; d128 non-causal and d64 within 1.2%).
std::vector<Problem> DefaultGqaProblems();

// The default set's backward buckets (`flashtune tune` adds them, like the GQA ones, when no
// shape option or --operation is given): dq, dk, dv for d64 and d128, both dtypes, causal or
// not, at N 2k and 8k sized like the forward grid (hidden 2048, B = 16384 / N); the other
// lengths take the nearest bucket. Two lengths, budgeted, keep the default tune within its ten
// minutes (a backward measurement costs 3-5 forward ones).
std::vector<Problem> DefaultBackwardProblems();

// Hq for head dim `head_dim` under options.hidden / heads_kv / exact_hidden (the rule above);
// kInvalidArgument naming what to pass when there is none.
Result<int64_t> HeadsFor(const ProblemSetOptions& options, int head_dim);

// The layouts a problem is tuned and stored in: "dense" or "paged" (varlen calls take the dense
// buckets). kInvalidArgument "'<text>' is not allowed; allowed: dense, paged" otherwise, for the
// caller to prefix with the field it read.
Result<Layout> ParseTunedLayout(std::string_view text);

// Checks one problem against what the kernel can launch (the same rule as
// ValidateForwardArgs): supported D, batch, heads_q and heads_kv in [1, 65535] (grid limits),
// seqlens in [1, 2^31-1], Hq % Hkv == 0. OK, or kInvalidArgument naming the field, e.g.
// "batch (100000) must be in [1, 65535] (grid z limit)".
Status ValidateProblem(const Problem& problem);

// Parses the problem-set file format above. `source` names the text in errors ("set.txt").
// OK with the problems in file order, or kInvalidArgument "set.txt:3: field 'head_dim': ..." .
// One line per deprecated spelling used goes to `notices` (when given) for the caller to show.
Result<std::vector<Problem>> ParseProblemSet(std::string_view text, std::string_view source,
                                             std::vector<std::string>* notices = nullptr);
// Reads and parses `path`; kIoError when it cannot be read.
Result<std::vector<Problem>> LoadProblemSetFile(const std::string& path, std::vector<std::string>* notices = nullptr);
// The problem in the file format (one line, no newline); ParseProblemSet reads it back.
std::string FormatProblemLine(const Problem& problem);

// ceil(log2(n)) for n >= 1; 0 for n <= 1.
int Log2Ceil(int64_t n);

struct BucketKey {
  DType dtype = DType::kBF16;
  int head_dim = 128;
  bool causal = false;
  int seqlen_q_bucket = 0;     // Log2Ceil(Nq)
  int seqlen_k_bucket = 0;     // Log2Ceil(Nk)
  int batch_heads_bucket = 0;  // Log2Ceil(B·Hq)
  int kv_group_bucket = 0;     // Log2Ceil(Hq / Hkv): 0 for MHA
  Operation operation = Operation::kForward;
  bool paged = false;          // Layout::kPaged (varlen calls take the dense buckets)
  bool operator==(const BucketKey&) const = default;
};

BucketKey BucketOf(const Problem& problem);
// "bf16/d128/causal/q12/k12/bh8" — the database stores and matches this string. A GQA group
// appends "/g3" (MHA buckets keep the string they had before groups were buckets); backward
// buckets carry a "bwd/" prefix ("bwd/bf16/d128/..."), so forward keys stored before the
// backward pass existed keep their meaning; paged buckets end in "/paged".
std::string BucketString(const BucketKey& key);
// Inverse of BucketString; kInvalidArgument naming the bad part.
Result<BucketKey> ParseBucketKey(std::string_view text);
// Decode buckets: Nq <= 2^kDecodeQueryBucket = 16 query rows per sequence.
inline constexpr int kDecodeQueryBucket = 4;
inline constexpr int64_t kDecodeMaxQueries = int64_t(1) << kDecodeQueryBucket;
// Sum of |exponent differences| when operation, dtype, D, causal and paged match and both or
// neither are decode buckets; -1 otherwise (such buckets are never "near": a kernel for another
// class cannot run the problem, decode and prefill winners are different kernels, and a dense
// winner was timed on no page table).
int BucketDistance(const BucketKey& a, const BucketKey& b);
// |a.kv_group_bucket - b.kv_group_bucket|: the tie-break between buckets of equal distance.
int GroupGap(const BucketKey& a, const BucketKey& b);

}  // namespace flashtune
FLASHTUNE_API_END
