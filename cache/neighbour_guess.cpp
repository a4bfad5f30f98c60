// A plan for an untuned class from its neighbours' winners; see include/flashtune/neighbour_guess.h.
#include "flashtune/neighbour_guess.h"

#include <algorithm>
#include <tuple>

#include "flashtune/space.h"
#include "generator/family.h"

namespace flashtune {

namespace {

// Index of `d` among the supported head dims; -1 when it is not one.
int HeadDimIndex(int d) {
  for (size_t i = 0; i < std::size(kSupportedHeadDims); ++i)
    if (kSupportedHeadDims[i] == d) return int(i);
  return -1;
}

// `of` with want's class fields: the distance of the sizes alone.
BucketKey Aligned(BucketKey of, const BucketKey& want) {
  of.dtype = want.dtype;
  of.head_dim = want.head_dim;
  of.causal = want.causal;
  return of;
}

// Whether winners of `of`'s class may stand in for `want`'s: another class of the same or a
// larger head dim, at most 2x (a smaller head dim's tile measured 11-22% off on the H200:
// neighbour_guess.h), of the same kind of call (operation, decode or prefill, paged or not:
// BucketDistance's rule once the class is aligned).
bool IsNeighbour(const BucketKey& of, const BucketKey& want) {
  const bool same_class = of.dtype == want.dtype && of.head_dim == want.head_dim && of.causal == want.causal;
  return !same_class && of.head_dim >= want.head_dim && of.head_dim <= want.head_dim * 2 &&
         BucketDistance(Aligned(of, want), want) >= 0;
}

}  // namespace

std::optional<NeighbourGuess> GuessFromNeighbours(const std::vector<WinnerRow>& winners, const BucketKey& bucket,
                                                  std::string_view arch, int64_t max_smem_bytes) {
  const ProblemClass want{bucket.dtype, bucket.head_dim, bucket.causal};
  const Target target{std::string(arch), max_smem_bytes};
  // Rank: (causal differs, head-dim steps, dtype differs, bucket distance, median).
  using Rank = std::tuple<int, int, int, int, double>;
  std::vector<std::pair<Rank, const WinnerRow*>> ranked;
  for (const WinnerRow& w : winners) {
    const BucketKey& b = w.bucket;
    if (!IsNeighbour(b, bucket)) continue;
    const int steps = std::abs(HeadDimIndex(b.head_dim) - HeadDimIndex(want.head_dim));
    ranked.push_back({Rank{b.causal != want.causal, steps, b.dtype != want.dtype, BucketDistance(Aligned(b, bucket), bucket),
                           w.median_us},
                      &w});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [rank, w] : ranked) {
    Variant v = w->variant;
    v.dtype = want.dtype;
    v.head_dim = want.head_dim;
    v.causal = want.causal;
    const Family* family = FindFamily(v.family);
    if (family == nullptr || !family->Serves(want, target) || !family->Check(v, max_smem_bytes).ok()) continue;
    NeighbourGuess g;
    g.variant = v;
    g.from = *w;
    const int d = w->bucket.head_dim;
    g.reason = std::string(std::get<0>(rank) ? "other causal flag, " : "") +
               (d > want.head_dim ? "next larger tuned head dim" : "same head dim") +
               (w->bucket.dtype != want.dtype ? ", other dtype" : "");
    return g;
  }
  return std::nullopt;
}

Result<std::optional<NeighbourGuess>> GuessFromNeighbours(Database& db, const DeviceRecord& device,
                                                          const ToolchainInfo& toolchain, const BucketKey& bucket,
                                                          std::string_view arch, int64_t max_smem_bytes) {
  auto winners = db.ListWinnersFor(device, toolchain);
  if (!winners.ok()) return winners.status();
  // A neighbour's winner may be of a family that does not serve the requested class (hopper_fwd
  // has no d96): then the fastest verified variant of each other family measured on that
  // neighbour's problem stands in, as a row of the same bucket with its own (slower) median.
  std::vector<WinnerRow> rows;
  for (const WinnerRow& w : *winners) {
    rows.push_back(w);
    if (!IsNeighbour(w.bucket, bucket)) continue;
    auto trials = db.TrialsForProblem(w.problem_id, w.device_id, w.toolchain_id);
    if (!trials.ok()) return trials.status();
    std::vector<std::string> families_seen = {w.variant.family};
    for (const TrialRow& t : *trials) {  // ok trials come first, fastest first
      if (t.trial.status != Code::kOk) break;
      const std::string& family = t.trial.variant.family;
      if (std::find(families_seen.begin(), families_seen.end(), family) != families_seen.end()) continue;
      families_seen.push_back(family);
      WinnerRow stand_in = w;
      stand_in.variant = t.trial.variant;
      stand_in.variant_uri = t.variant_uri;
      stand_in.median_us = t.trial.median_us;
      rows.push_back(std::move(stand_in));
    }
  }
  return GuessFromNeighbours(rows, bucket, arch, max_smem_bytes);
}

}  // namespace flashtune
