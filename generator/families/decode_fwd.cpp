// The decode_fwd family: space, prologue, split rule, workspace and launch packing of
// templates/decode_fwd.cuh (see decode_fwd.h for the kernel's shape).
#include "generator/families/decode_fwd.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "flashtune/arch.h"
#include "flashtune/problem_set.h"
#include "flashtune/space.h"
#include "generator/family.h"
#include "generator/prologue.h"

namespace flashtune {

Variant DecodeVariant(DType dtype, int head_dim, bool causal, int keys_per_step, int row_tiles, int warps, int stages,
                      int blocks_per_sm, bool paged) {
  Variant v;
  v.family = "decode_fwd";
  v.dtype = dtype;
  v.head_dim = head_dim;
  v.causal = causal;
  v.params = {{"bn", keys_per_step}, {"rm", row_tiles}, {"w", warps}, {"s", stages}, {"cs", blocks_per_sm},
              {"kv", paged ? 1 : 0}};
  return v;
}

namespace detail {

namespace {
constexpr int kDefaultSmCount = 132;  // H100/H200: the planning default when the device is unknown
// H100/H200 shared memory per SM (the per-block 1 KB reserve aside): the planning default, as the SM count.
int64_t SmemPerSm() { return FindGpuArch(9, 0)->smem_per_sm; }

int64_t RowTileCount(const Problem& p, int row_tiles) {
  const int64_t rows = (p.heads_q / p.heads_kv) * p.seqlen_q;
  return (rows + 16 * row_tiles - 1) / (16 * row_tiles);
}
}  // namespace

int DecodeSplits(const Problem& p, int sm_count, int keys_per_step, int row_tiles, int blocks_per_sm,
                 int64_t block_smem_bytes) {
  const int64_t sms = sm_count > 0 ? sm_count : kDefaultSmCount;
  const int64_t base = p.batch * p.heads_kv * RowTileCount(p, row_tiles);
  // As many splits as fit in one wave of `blocks_per_sm` blocks per SM: one block more than a
  // wave holds would run alone in a second wave (measured: B8 x 32k at 63% of the read
  // bandwidth with 5 splits over 264 slots, where 4 fill one wave). A block whose shared memory
  // lets fewer be resident counts what fits: 4 stages of 64 keys at d128 (143 KB, one per SM)
  // with cs2 ran two waves (tuner, B1 x 8k: 31.5 us against 24.4 us for cs1).
  int64_t per_sm = blocks_per_sm;
  if (block_smem_bytes > 0) per_sm = std::clamp<int64_t>(SmemPerSm() / (block_smem_bytes + 1024), 1, per_sm);
  const int64_t want = per_sm * sms / base;
  const int64_t steps = (p.seqlen_k + keys_per_step - 1) / keys_per_step;
  return int(std::clamp<int64_t>(std::min<int64_t>(want, steps), 1, kMaxDecodeSplits));
}

}  // namespace detail

namespace {

struct DecodeConfig {
  int bn, rm, warps, stages, cs;
  bool paged;
  explicit DecodeConfig(const Variant& v)
      : bn(v.Param("bn")),
        rm(v.Param("rm")),
        warps(v.Param("w")),
        stages(v.Param("s")),
        cs(v.Param("cs")),
        paged(v.Param("kv") == 1) {}
};

// Shared memory: the Q tile and `stages` K and V tiles, or, after the key loop, the cross-warp
// merge (fp32 O rows, each warp's max and sum, each row's normaliser, lse, head and token),
// whichever is larger. Tile rows are swizzled
// (no pad) where the head dim is a multiple of 64, else padded by 16 bytes for ldmatrix. The
// template asserts the same formula.
int64_t DecodeSmemBytes(int bn, int rm, int stages, int head_dim, int warps) {
  const int64_t rows = 16 * rm;
  const int64_t row_elems = head_dim % 64 == 0 ? head_dim : head_dim + 8;
  const int64_t q = rows * row_elems * 2;
  const int64_t pipeline = q + int64_t(2) * stages * bn * row_elems * 2;
  const int64_t merge = q + rows * (head_dim + 4) * 4 + int64_t(2) * warps * rows * 4 + 4 * rows * 4;
  return std::max(pipeline, merge);
}

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

class DecodeFwd final : public Family {
 public:
  std::string_view name() const override { return "decode_fwd"; }
  std::string_view template_name() const override { return "decode_fwd.cuh"; }
  // Never the class default: prefill kernels are; decode shapes pick it through PreferenceFor.
  int preference() const override { return -10; }
  const std::vector<ParamAxis>& axes() const override {
    static const std::vector<ParamAxis> kAxes = {
        // 32 keys (two warps) only in the few combinations InDefaultSpace keeps.
        {"bn", "keys_per_step (bn)", {32, 64, 128}, {32, 64, 128}},
        {"rm", "row_tiles (rm)", {1, 2, 4}, {1, 2}},
        {"w", "warps (w)", {2, 4, 8}, {2, 4, 8}},
        // 3 stages searched too: 3 x 64 keys is the deepest pipeline that keeps two blocks on an
        // SM at d128 (the default; 93% of the read bandwidth at B64 x 8k where the budgeted tune,
        // searching 2 and 4, kept 4 stages x 1 block at 76%: bench/data/h200-2026-12-01-decode).
        {"s", "stages (s)", {2, 3, 4}, {2, 3, 4}},
        {"cs", "blocks_per_sm (cs)", {1, 2, 4}, {1, 2, 4}},
        // The K/V layout the kernel is compiled for: 0 rows (dense or varlen), 1 pages. Page
        // copies by 16-row groups gained 1-35% on pages but cost dense calls 1-3.5% while one
        // kernel carried both paths (docs/perf-notes.md, "Decode round 12"). A problem's space
        // holds its layout's half (ReadsLayout).
        {"kv", "kv_layout (kv: 0 dense or varlen rows, 1 pages)", {0, 1}, {0, 1}},
    };
    return kAxes;
  }

  // 32-key steps over two warps (bn % (w * 16) == 0 makes bn32 two-warp; bn64 and bn128 keep 4
  // and 8 warps): one tile, 2 or 4 stages, 2 or 4 blocks per SM. It won round 3's eager sweep at
  // B1 x 2k (bn32 w2 s4 cs4 13.5 us against the default's 15.4: more, shorter splits where B x
  // Hkv and the keys are small; bench/data/h200-2026-12-02-decode3/call2-sweep.log); s2 cs4 is
  // the GPU tests' variant on every class. Only configurations that have run on the GPU; four
  // candidates a class, not the 18 of the full cross product.
  bool InDefaultSpace(const Variant& v) const override {
    const DecodeConfig c(v);
    if (c.warps != 2) return true;
    return c.bn == 32 && c.rm == 1 && (c.stages == 2 || c.stages == 4) && (c.cs == 2 || c.cs == 4);
  }

  // Decode (at most 16 query rows per sequence) on dense, paged or varlen K/V; paged prefill
  // too, below fa2_paged (preference 10), which the planner then picks.
  int PreferenceFor(const Problem& p) const override {
    if (!ServesOperation(p)) return -1;
    if (Log2Ceil(p.seqlen_q) <= kDecodeQueryBucket) return 20;  // the decode buckets
    return p.layout == Layout::kPaged ? 0 : -1;
  }
  // Searched alone (no prefill family) where it was measured to win by far: decode_tune_check's
  // budgeted tunes of the 11 decode buckets (bf16 d128 dense, Hq 32 Hkv 8, one query row, B 1-64
  // x 2k-128k keys) timed hopper_fwd and fa2_fwd at 2.0-11x decode_fwd's best, never better
  // (bench/data/h200-2026-12-02-decode4/tune.log, docs/perf-notes.md "Decode round 6"). The rule
  // covers what follows from those runs without new measurements:
  //  - every row sharing a K/V head in one 16-row MMA tile (Hq/Hkv * Nq <= 16): decode_fwd then
  //    runs the same instructions as at one row, and a prefill tile (>= 64 rows of one query
  //    head) the same as at Nq 1, so the measured ratio holds;
  //  - GQA groups of 4 or more: a prefill kernel runs a block per query head, decode_fwd one per
  //    K/V head, so a larger group only widens the gap; with MHA or pairs a prefill tile reads
  //    no more than decode_fwd does and was not measured (at B64 it may come close);
  //  - 1025 keys or more (the 2k bucket on): shorter caches were not measured, and there a
  //    single prefill launch may beat decode's split and combine;
  //  - d128, either dtype, causal or not (bottom-right causal with <= 16 rows masks only the last
  //    key block); the dense layout, and the paged one, whose only prefill family (fa2_paged)
  //    runs fa2_fwd's tile with a page-table read per row. Other head dims and varlen were not
  //    measured.
  bool SearchedAloneFor(const Problem& p) const override {
    if (!ServesOperation(p) || (p.layout != Layout::kDense && p.layout != Layout::kPaged) || p.head_dim != 128)
      return false;
    if (p.heads_kv <= 0 || p.heads_q % p.heads_kv != 0) return false;
    const int64_t group = p.heads_q / p.heads_kv;
    return group >= 4 && group * p.seqlen_q <= 16 && Log2Ceil(p.seqlen_k) >= 11;
  }
  bool reads_seqlens_k() const override { return true; }
  bool reads_varlen() const override { return true; }
  bool ReadsLayout(const Variant& v, Layout layout) const override {
    return DecodeConfig(v).paged == (layout == Layout::kPaged);
  }
  std::vector<std::string_view> extra_kernels() const override { return {"combine"}; }

  // The most any variant splits: the smallest key step, the most row rows per tile and blocks
  // per SM of the allowed values. Varlen, and paged past 16 query rows: also a bound for any
  // leading part of the batch with up to 16 query rows per sequence (a mixed call of packed
  // queries runs that part here; MixedVarlenParts): with more than one split, splits * blocks
  // <= 4 blocks per SM * sms, and a block holds <= 64 rows.
  std::string_view workspace_use() const override {
    return "the split-KV partial results (o and lse of each key split, merged by the combine kernel)";
  }
  int64_t WorkspaceBytes(const Problem& p, int sm_count) const override {
    const int64_t row_bytes = int64_t(p.head_dim + 1) * 4;
    int64_t leading = 0;  // the rows of a mixed call's decode part
    if (p.layout == Layout::kVarlen || (p.layout == Layout::kPaged && p.seqlen_q > kDecodeMaxQueries)) {
      const int64_t nq = std::min<int64_t>(p.seqlen_q, int64_t(1) << kDecodeQueryBucket);
      const int64_t sms = sm_count > 0 ? sm_count : 132;
      leading = std::min(int64_t(detail::kMaxDecodeSplits) * p.batch * p.heads_q * nq, 4 * sms * 64);
      if (p.layout == Layout::kVarlen) return leading * row_bytes;
    }
    const int splits = detail::DecodeSplits(p, sm_count, 32, 4, 4);
    const int64_t whole = splits <= 1 ? 0 : int64_t(splits) * p.batch * p.heads_q * p.seqlen_q;
    return std::max(whole, leading) * row_bytes;
  }

  // mma.sync, ldmatrix and cp.async: the arch table's cp_async targets (sm_80 on).
  std::string UnservedFor(const ProblemClass& cls, const Target& target) const override {
    (void)cls;
    return NeedsCpAsync(target);
  }

  int64_t SharedMemoryBytes(const Variant& v) const override {
    const DecodeConfig c(v);
    return DecodeSmemBytes(c.bn, c.rm, c.stages, v.head_dim, c.warps);
  }
  int Threads(const Variant& v) const override { return v.Param("w") * 32; }

  Status CheckRules(const Variant& v, int64_t max_smem_bytes) const override {
    const DecodeConfig c(v);
    if (c.bn % (c.warps * 16) != 0)
      return Invalid("keys_per_step (" + std::to_string(c.bn) + ") must be a multiple of warps * 16 (" +
                     std::to_string(c.warps * 16) + "): each warp takes whole 16-key MMA steps");
    if (c.rm * v.head_dim > 256)
      return Invalid("row_tiles (" + std::to_string(c.rm) + ") * head_dim (" + std::to_string(v.head_dim) +
                     ") must be <= 256: every warp keeps all rows' fp32 output in registers");
    const int64_t smem = SharedMemoryBytes(v);
    if (smem > max_smem_bytes)
      return Invalid("shared memory (" + std::to_string(smem) + " bytes for keys_per_step " + std::to_string(c.bn) +
                     ", row_tiles " + std::to_string(c.rm) + ", stages " + std::to_string(c.stages) + ", head_dim " +
                     std::to_string(v.head_dim) + ") exceeds max_smem_bytes (" + std::to_string(max_smem_bytes) + ")");
    return Status::Ok();
  }

  // 64 keys per step over 4 warps, one 16-row tile, 3 stages, 2 blocks per SM; fewer stages
  // until the shared memory fits. Head dims up to 64 take 128 keys a step, 4 stages, one block
  // an SM: a step of as many bytes as d128's. In session 40's sweep of all 58 dense bf16 d64
  // tiles (H100, Hq 32 Hkv 8, B8 x 2k / 8k / 32k, B64 x 2k, B1 x 8k) it ran within 0-2.3% of
  // the fastest at each shape, where d128's tile ran 2-16% behind (B8 x 32k: 185.8 against
  // 210.9 us; bench/data/h100-2026-12-06-s40/). (d32 follows d64 unmeasured.)
  // The class default reads dense K/V; DefaultFor gives a paged problem the same tile on pages,
  // except at head dims up to 64 (NarrowPagedTile).
  Variant Default(const ProblemClass& cls, const Target& target) const override {
    const bool narrow = cls.head_dim <= 64;
    int s = narrow ? 4 : 3;
    Variant v = DecodeVariant(cls.dtype, cls.head_dim, cls.causal, narrow ? 128 : 64, 1, 4, s, narrow ? 1 : 2);
    while (SharedMemoryBytes(v) > target.max_smem_bytes && s > 2) v.SetParam("s", --s);
    return v;
  }
  // A problem's default also looks at its size. A short K/V stream (decode rows over at most
  // kShortStreamKeyElems key elements, B * Hkv * Nk * D) takes 32-key steps over two warps, 4
  // stages, 4 blocks an SM: more, shorter splits, so the blocks' fixed latency overlaps. It is
  // the tile the tuner picked in most short buckets on an H100 (d128, Hq 32, Hkv 8: dense B1 x
  // 8k / 32k and B8 x 2k, paged B1 x 2k / 32k and B8 x 2k / 8k; the others picked it with 2
  // blocks an SM or 2 stages), and it is in every class's searched space. At head dims up to 64
  // the bounds are lower (ShortStreamBound): there the short tile's 32-key steps carry a quarter
  // of the class default's bytes, and through the runtime (bench/decode_bench.py, H100, Hq 32
  // Hkv 8, session 40) it ran 8-11% behind that default at B1 x 8k, B8 x 2k and B8 x 8k (2^22,
  // 2^23 and 2^25 key elements) and 6-9% behind at B1 x 4k, B2 x 2k (2^21), but 25-27% ahead at
  // B1 x 2k (2^20).
  Variant DefaultFor(const Problem& problem, const Target& target) const override {
    Variant v = ProblemTile(problem, target, nullptr).value_or(Default(ClassOf(problem), target));
    v.SetParam("kv", problem.layout == Layout::kPaged ? 1 : 0);
    return v;
  }
  std::string DefaultReason(const Problem& problem, const Target& target) const override {
    std::string why;
    ProblemTile(problem, target, &why);
    return why;
  }

  std::string Prologue(const Variant& v) const override {
    const DecodeConfig c(v);
    return detail::PrologueBuilder(v.Uri())
        .Bool("kBf16", v.dtype == DType::kBF16, "false = fp16")
        .Int("kHeadDim", v.head_dim)
        .Int("kBlockN", c.bn)
        .Int("kRowTiles", c.rm)
        .Int("kWarps", c.warps)
        .Int("kStages", c.stages)
        .Bool("kCausal", v.causal)
        .Bool("kPaged", c.paged, "false = dense or varlen rows")
        .Int("kSmemBytes", SharedMemoryBytes(v))
        .Finish(template_name());
  }

  Status CanRun(const Variant& v, const ForwardArgs& a) const override {
    const int64_t tiles = detail::RowTileCount(a.problem, DecodeConfig(v).rm);
    if (tiles > 65535)
      return Status(Code::kUnsupported, "decode_fwd: " + std::to_string(tiles) +
                                            " row tiles (Hq/Hkv * Nq rows) exceed the grid's z limit (65535)");
    if (a.problem.batch * a.problem.heads_kv > 2147483647LL)
      return Status(Code::kUnsupported, "decode_fwd: batch * heads_kv exceeds the grid's x limit");
    return Status::Ok();
  }

  void Pack(const Variant& v, const ForwardArgs& a, LaunchPacket* out) const override {
    const DecodeConfig c(v);
    const Problem& p = a.problem;
    constexpr double kLog2e = 1.4426950408889634074;
    const int splits = detail::DecodeSplits(p, out->sm_count, c.bn, c.rm, c.cs, SharedMemoryBytes(v));
    detail::DecodeParams k{};
    k.q = a.q;
    k.k = a.k;
    k.v = a.v;
    k.o = a.o;
    k.lse = a.lse;
    k.seqlens_k = a.seqlens_k;
    k.block_table = p.layout == Layout::kPaged ? a.paged.block_table : nullptr;
    if (PackedQueries(a)) {  // varlen, or a paged call's packed queries (cu_seqlens_k then null)
      k.cu_seqlens_q = a.varlen.cu_seqlens_q;
      k.cu_seqlens_k = a.varlen.cu_seqlens_k;
      k.total_q = a.varlen.total_q;
      k.total_k = a.varlen.total_k;
    }
    const int64_t rows = p.batch * p.heads_q * p.seqlen_q;
    k.ws_o = splits > 1 ? static_cast<float*>(a.workspace) : nullptr;
    k.ws_lse = splits > 1 ? static_cast<float*>(a.workspace) + int64_t(splits) * rows * p.head_dim : nullptr;
    const Strides* in[4] = {&a.q_strides, &a.k_strides, &a.v_strides, &a.o_strides};
    ft_abi::i64* dst[4] = {k.q_stride, k.k_stride, k.v_stride, k.o_stride};
    for (int t = 0; t < 4; ++t) {
      dst[t][0] = in[t]->batch;
      dst[t][1] = in[t]->seq;
      dst[t][2] = in[t]->head;
    }
    k.block_table_stride = a.paged.block_table_stride;
    k.batch = int32_t(p.batch);
    k.seqlen_q = int32_t(p.seqlen_q);
    k.seqlen_k = int32_t(p.seqlen_k);
    k.heads_q = int32_t(p.heads_q);
    k.heads_kv = int32_t(p.heads_kv);
    k.num_blocks = int32_t(p.layout == Layout::kPaged ? a.paged.num_blocks : 0);
    k.block_shift = p.layout == Layout::kPaged ? Log2Ceil(a.paged.block_size) : 0;  // a power of two (validated)
    k.splits = splits;
    k.scale_log2 = float(double(a.EffectiveScale()) * kLog2e);

    out->grid[0] = unsigned(p.batch * p.heads_kv);
    out->grid[1] = unsigned(splits);
    out->grid[2] = unsigned(detail::RowTileCount(p, c.rm));
    out->block[0] = unsigned(c.warps * 32);
    out->block[1] = out->block[2] = 1;
    out->smem_bytes = uint32_t(SharedMemoryBytes(v));
    // sm_90+: a programmatic dependent of the kernel before it on the stream (the previous
    // call's combine in a decode loop): its launch and block scheduling overlap that kernel's
    // tail; the template waits (griddepcontrol.wait) before touching global memory.
    out->overlap = out->cc_major >= 9;
    out->tensor_maps = 0;
    out->SetArgs(k);
    out->next_steps = 0;
    if (splits > 1) {
      // The combine: one block of four warps per output row; on sm_90 and newer launched as
      // the split kernel's programmatic dependent (the split kernel triggers after its key
      // loop, so the launch hides under its merge and epilogue; the template waits with
      // griddepcontrol.wait).
      LaunchStep& combine = out->next[0];
      combine.overlap = out->cc_major >= 9;
      combine.kernel = 0;
      combine.grid[0] = unsigned(rows);
      combine.grid[1] = combine.grid[2] = 1;
      combine.block[0] = 128;
      combine.block[1] = combine.block[2] = 1;
      combine.smem_bytes = 0;
      out->next_steps = 1;
    }
  }

  std::string Describe(const Variant& v) const override {
    const DecodeConfig c(v);
    return std::to_string(16 * c.rm) + "x" + std::to_string(c.bn) + " w" + std::to_string(c.warps) + " s" +
           std::to_string(c.stages) + " cs" + std::to_string(c.cs) + (c.paged ? " paged" : "");
  }

  // Decode is bandwidth-bound: the prior prefers the most K/V bytes in flight per SM (resident
  // blocks x prefetched steps, up to ~96 KB), then more resident blocks, then no row tiles
  // beyond what the packed rows need.
  double PriorScore(const Problem& problem, const Variant& v) const override {
    const DecodeConfig c(v);
    const int64_t rows = (problem.heads_q / problem.heads_kv) * problem.seqlen_q;
    const int64_t smem = SharedMemoryBytes(v) + 1024;  // + the per-block reservation
    const int regs = c.rm * v.head_dim / 2 + c.rm * (c.bn / c.warps) / 2 + 96;  // estimated, per thread
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(kLargestMaxSmemBytes / smem,
                                                                  65536 / (int64_t(c.warps) * 32 * std::min(regs, 255))));
    const double in_flight = double(blocks) * (c.stages - 1) * c.bn * v.head_dim * 2 * 2;
    double score = -std::log2(std::min(in_flight, 96.0 * 1024) / (32.0 * 1024));
    // At equal bytes in flight, more resident blocks hide each block's serial steps (merge,
    // epilogue): round 3's budgeted tune picked 4 stages x 1 block (76% of the read bandwidth
    // at B64 x 8k) over the untried 3 stages x 2 blocks (93%).
    score -= 0.3 * std::log2(double(blocks));
    if (16 * c.rm > 2 * rows) score += 0.5;  // mostly empty rows
    if (c.cs != 2) score += 0.1;              // one wave of two blocks per SM: the default
    return score;
  }

 private:
  // B1 x 32k keys at Hkv 8, d128: the largest bucket where the short-stream tile won.
  static constexpr int64_t kShortStreamKeyElems = int64_t(1) << 25;
  // Head dims up to 64, session 40's A/Bs (Hq 32 Hkv 8, d64): dense, B1 x 2k (2^20), the one
  // shape where the short tile beat the 128-key one; paged, B1 x 4k and B2 x 2k (2^21), where it
  // beat the paged 64-key tile by 9-14% (level at 2^22, 3-23% behind from 2^23 on).
  static constexpr int64_t kNarrowShortStreamKeyElems = int64_t(1) << 20;
  static constexpr int64_t kNarrowPagedShortStreamKeyElems = int64_t(1) << 21;
  static int64_t KeyElems(const Problem& p) { return p.batch * p.heads_kv * p.seqlen_k * p.head_dim; }
  static int64_t ShortStreamBound(const Problem& p) {
    if (p.head_dim > 64) return kShortStreamKeyElems;
    return p.layout == Layout::kPaged ? kNarrowPagedShortStreamKeyElems : kNarrowShortStreamKeyElems;
  }
  // Paged, past the short streams, head dims up to 64 take 64 keys over 4 warps, 2 stages, 4
  // blocks an SM (34 KB of shared memory at d64): on 16-key pages the dense default's 128-key
  // steps ran 9-17% behind it, the fastest of the 58 paged d64 tiles at B8 x 8k and B64 x 2k
  // (session 40's sweep). Nothing at wider heads (the class default serves them).
  static std::optional<Variant> NarrowPagedTile(const Problem& problem) {
    if (problem.head_dim > 64) return std::nullopt;
    return DecodeVariant(problem.dtype, problem.head_dim, problem.causal, 64, 1, 4, 2, 4);
  }
  // The tile DefaultFor gives `problem` in place of its class default, else nothing; with `why`,
  // the reason in a phrase (only then built: DefaultFor is on the planning path). One home for
  // the order: a short stream first, then a narrow paged call.
  std::optional<Variant> ProblemTile(const Problem& problem, const Target& target, std::string* why) const {
    std::optional<Variant> v = ShortStreamTile(problem, target);
    const bool short_stream = v.has_value();
    if (!v && problem.layout == Layout::kPaged) v = NarrowPagedTile(problem);
    if (v && why != nullptr)
      *why = (short_stream ? "a short K/V stream: " : "paged K/V at head dim <= 64 past the short streams: ") +
             std::string("B*Hkv*Nk*D = ") + std::to_string(KeyElems(problem)) + " key elements " +
             (short_stream ? "<= " : "> ") + "2^" + std::to_string(Log2Ceil(ShortStreamBound(problem)));
    return v;
  }
  // The short-stream tile where `problem` qualifies and its shared memory fits, else nothing.
  std::optional<Variant> ShortStreamTile(const Problem& problem, const Target& target) const {
    if (problem.seqlen_q > kDecodeMaxQueries || KeyElems(problem) > ShortStreamBound(problem)) return std::nullopt;
    Variant v = DecodeVariant(problem.dtype, problem.head_dim, problem.causal, 32, 1, 2, 4, 4);
    if (SharedMemoryBytes(v) > target.max_smem_bytes) return std::nullopt;
    return v;
  }
};

}  // namespace

const Family& FamilyEntry_decode_fwd() {
  static const DecodeFwd family;
  return family;
}

}  // namespace flashtune
