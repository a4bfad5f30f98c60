// BackwardArgs for tests that validate and pack backward calls without a GPU: every pointer a
// distinct, 256-byte-aligned host address (never dereferenced: nothing is launched), contiguous
// [B, N, H, D] strides and a workspace of exactly BackwardWorkspaceBytes(problem).
#ifndef FLASHTUNE_TESTS_SUPPORT_BACKWARD_ARGS_FIXTURE_H_
#define FLASHTUNE_TESTS_SUPPORT_BACKWARD_ARGS_FIXTURE_H_

#include "flashtune/backward_args.h"
#include "generator/backward_workspace.h"

namespace flashtune::testing {

inline BackwardArgs PlaceholderBackwardArgs(const Problem& problem) {
  alignas(256) static char memory[10][256];
  BackwardArgs a = BackwardArgs::Contiguous(problem);
  a.forward.q = memory[0];
  a.forward.k = memory[1];
  a.forward.v = memory[2];
  a.forward.o = memory[3];
  a.forward.lse = reinterpret_cast<float*>(memory[4]);
  a.d_o = memory[5];
  a.dq = memory[6];
  a.dk = memory[7];
  a.dv = memory[8];
  a.forward.workspace = memory[9];
  a.forward.workspace_bytes = BackwardWorkspaceBytes(a.problem());
  return a;
}

}  // namespace flashtune::testing

#endif  // FLASHTUNE_TESTS_SUPPORT_BACKWARD_ARGS_FIXTURE_H_
