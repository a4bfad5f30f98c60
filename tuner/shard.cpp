// Splitting a problem set into parts for many machines; see include/flashtune/shard.h.
#include "flashtune/shard.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>

#include "flashtune/problem_set.h"
#include "flashtune/space.h"

namespace flashtune {

Result<Shard> ParseShard(std::string_view text) {
  auto bad = [&] {
    return Status(Code::kInvalidArgument, "--shard '" + std::string(text) +
                                              "': allowed K/N with 1 <= K <= N <= 10000, e.g. 2/8 for the second of 8 parts");
  };
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return bad();
  Shard s;
  auto k = std::from_chars(text.data(), text.data() + slash, s.index);
  auto n = std::from_chars(text.data() + slash + 1, text.data() + text.size(), s.count);
  if (k.ec != std::errc() || k.ptr != text.data() + slash || n.ec != std::errc() ||
      n.ptr != text.data() + text.size() || s.index < 1 || s.index > s.count || s.count > 10000)
    return bad();
  return s;
}

Result<std::vector<Problem>> SelectShard(const std::vector<Problem>& problems, const Shard& shard,
                                         std::string_view strategy) {
  if (shard.count < 1 || shard.index < 1 || shard.index > shard.count)
    return Status(Code::kInvalidArgument, "shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) +
                                              ": allowed K/N with 1 <= K <= N");
  if (strategy != "exhaustive" && strategy != "budgeted" && strategy != "auto")
    return Status(Code::kInvalidArgument, "strategy '" + std::string(strategy) + "': allowed auto, exhaustive, budgeted");
  const bool by_class = strategy != "exhaustive";
  // Units in first-seen order, each with its FLOPs.
  std::map<std::string, size_t> unit_of_key;
  std::vector<double> flops;
  std::vector<size_t> unit(problems.size());
  for (size_t i = 0; i < problems.size(); ++i) {
    // By class: bf16 and fp16 of one head dim and mask together (a search starts from the same
    // problem's results in the other 16-bit type: SearchContext::SiblingRanking).
    Problem folded = problems[i];
    if (folded.dtype == DType::kF16) folded.dtype = DType::kBF16;
    const std::string key = by_class ? ClassOf(folded).ToString() : BucketString(BucketOf(problems[i]));
    auto [it, fresh] = unit_of_key.emplace(key, flops.size());
    if (fresh) flops.push_back(0);
    unit[i] = it->second;
    flops[it->second] += problems[i].Flops();
  }
  // Heaviest first (ties: first seen) to the lightest part so far (ties: the lower part).
  std::vector<size_t> order(flops.size());
  for (size_t u = 0; u < order.size(); ++u) order[u] = u;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return flops[a] > flops[b]; });
  std::vector<double> load(size_t(shard.count), 0);
  std::vector<int> part_of_unit(flops.size());
  for (size_t u : order) {
    const size_t part = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    part_of_unit[u] = int(part) + 1;
    load[part] += flops[u];
  }
  std::vector<Problem> out;
  for (size_t i = 0; i < problems.size(); ++i)
    if (part_of_unit[unit[i]] == shard.index) out.push_back(problems[i]);
  return out;
}

}  // namespace flashtune
