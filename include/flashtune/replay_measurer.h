// flashtune/replay_measurer.h — a Measurer that answers from recorded timings: tests, and
// `flashtune tune --replay`, run the whole engine without a GPU (Kernel Tuner's simulation runner).
//
// Thread safety: one thread at a time, like every Measurer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flashtune/export.h"
#include "flashtune/measurer.h"

FLASHTUNE_API_BEGIN
namespace flashtune {

// Replay: a Measurer that answers from recorded rows (CSV with a header, or a JSON array of
// objects; both as written by Database::Export). Columns used: dtype, head_dim, causal, batch,
// seqlen_q, seqlen_k, heads_q, heads_kv, variant, status, median_us, iqr_us; optional layout
// (dense or paged; absent: dense), reps, registers, smem_bytes, spill_bytes, compile_ms, message,
// source_hash, phase. The first row per
// (problem, variant) answers Measure; later rows (e.g. phase=retime) answer successive Remeasure
// calls, cycling. Unknown columns are ignored; errors name the line and column.
class ReplayMeasurer : public Measurer {
 public:
  struct Options {
    DeviceRecord device = {"replay", "replay-0", 9, 0, 132, "replay"};
    ToolchainInfo toolchain = {"replay", "replay", "replay"};
    int delay_ms = 0;  // sleep per measurement, to make runs observable (kill -9 tests)
  };
  static Result<std::unique_ptr<ReplayMeasurer>> FromFile(const std::string& path, Options options);
  // `source` names the text in errors.
  static Result<std::unique_ptr<ReplayMeasurer>> FromText(std::string_view text, std::string_view source,
                                                          Options options);

  DeviceRecord Device() const override { return options_.device; }
  ToolchainInfo Toolchain() const override { return options_.toolchain; }
  // kNotFound (error Result) when nothing was recorded for (problem, variant).
  Result<Measurement> Measure(const Problem& problem, const Variant& variant) override;
  Result<std::vector<Measurement>> Remeasure(const Problem& problem, const std::vector<Variant>& variants) override;
  // The registers recorded for `variant` (on any problem); kNotFound when none was.
  Result<int> CompiledRegisters(const Variant& variant) override;

  // The problems recorded, in first-seen order, and each one's recorded variants (the space).
  std::vector<Problem> Problems() const;
  std::vector<Variant> Variants(const Problem& problem) const;
  int64_t measure_calls() const { return measure_calls_; }

  struct Entry {
    Problem problem;
    Variant variant;
    std::vector<Measurement> rows;
    size_t next_retime = 1;
  };

 private:
  explicit ReplayMeasurer(Options options) : options_(std::move(options)) {}
  Entry* Find(const Problem& problem, const Variant& variant);
  Options options_;
  std::vector<Entry> entries_;
  int64_t measure_calls_ = 0;
};

}  // namespace flashtune
FLASHTUNE_API_END
