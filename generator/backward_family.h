// What every backward family shares: it computes Operation::kBackward as one module of three
// kernels (the preprocess under the variant's URI, then `<uri>_main` and `<uri>_convert`), and its
// calls need the backward workspace (generator/backward_workspace.h: the fp32 dq accumulator,
// rowsum(d_o ∘ o) and the ordering counters). The families define the rest.
// Thread safety: as Family (immutable after registration).
#pragma once

#include <string_view>
#include <vector>

#include "flashtune/backward_args.h"
#include "generator/family.h"

namespace flashtune {

class BackwardFamily : public Family {
 public:
  Operation operation() const final { return Operation::kBackward; }
  std::vector<std::string_view> extra_kernels() const final { return {"main", "convert"}; }
  int64_t WorkspaceBytes(const Problem& problem, int sm_count) const final {
    (void)sm_count;
    return ServesOperation(problem) ? BackwardWorkspaceBytes(problem) : 0;
  }
  std::string_view workspace_use() const final {
    return "the fp32 dq accumulator, rowsum(d_o * o) and the dq ordering counters";
  }
};

}  // namespace flashtune
