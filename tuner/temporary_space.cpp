// TEMPORARY (branch db): a stand-in for EnumerateSpace (include/flashtune/space.h, branch gen)
// so `flashtune tune --dry-run` and the tests have a space before that branch is merged. It
// follows the template's validity rules from the brief; replace its uses with EnumerateSpace.
#include "flashtune/tuner.h"
#include "generator/kernel_abi.h"

namespace flashtune {

std::vector<Variant> TemporaryEnumerateSpace(const Problem& p, int64_t smem_limit) {
  std::vector<Variant> out;
  for (int bm : {64, 128})
    for (int bn : {32, 64, 128})
      for (int w : {4, 8})
        for (int s : {1, 2, 3}) {
          if (bm % (w * 16) != 0) continue;
          if (detail::SharedMemoryBytes(bm, bn, p.head_dim, s) > smem_limit) continue;
          out.push_back(Variant{p.dtype, p.head_dim, p.causal, bm, bn, w, s});
        }
  return out;
}

}  // namespace flashtune
