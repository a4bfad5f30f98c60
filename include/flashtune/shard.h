// flashtune/shard.h — one part of a problem set, so that many machines of one GPU model can
// tune a large set in parallel and `flashtune db merge` can join their databases.
//
// `tune --shard K/N` keeps the K-th of N parts (1 <= K <= N). The split depends only on the
// problem list (the same command line gives the same parts on every machine) and never cuts
// what one run decides together:
//  - exhaustive: a bucket's problems stay in one part (a bucket has one winner);
//  - budgeted and auto: a class's problems (head dim, causal, operation; bf16 and fp16
//    together) stay in one part, in order, because the budgeted search of a class follows the
//    problems of that class tuned before it, and the same problem in the other 16-bit type; so
//    N parts merged give the winners of one run, as with exhaustive.
// Parts are balanced by FLOPs: units, heaviest first, go to the part with the least so far
// (ties: the lower part). Within a part, problems keep the set's order. A part may be empty
// when N exceeds the number of units.
//
// Thread safety: free functions on value types; safe from any thread.
#pragma once

#include <string_view>
#include <vector>

#include "flashtune/status.h"
#include "flashtune/variant.h"

namespace flashtune {

struct Shard {
  int index = 1;  // K, 1-based
  int count = 1;  // N
};

// "K/N" with 1 <= K <= N <= 10000; kInvalidArgument naming --shard and the allowed form.
Result<Shard> ParseShard(std::string_view text);

// The problems of part `shard` of `problems`, in their order, under the rule above for
// `strategy` ("auto", "exhaustive" or "budgeted"); kInvalidArgument for a bad shard or strategy.
Result<std::vector<Problem>> SelectShard(const std::vector<Problem>& problems, const Shard& shard,
                                         std::string_view strategy);

}  // namespace flashtune
