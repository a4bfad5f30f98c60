// The GPU worker's backward side: verifies and prepares the timed launches of backward-pass
// candidates (problems of Operation::kBackward), as the worker does forward candidates.
//
// Verification: the candidate's dq, dk and dv (outputs and workspace poisoned with 0xFF first)
// against the float64 reference (ReferenceBackward of the reference forward's o and lse) on two
// ragged shapes of the class (GQA with Nq < Nk, MQA with Nq > Nk: causal rows that see no key),
// then on the timed shape against the trusted variant (the class default, itself checked against
// the reference once per problem). Tolerances: the candidate's family's output tolerance
// (Family::ToleranceFor; relative L2 1e-2 bf16, 2e-3 fp16 by default), per gradient.
// Timing inputs: random q, k, v, o and d_o with lse = log(keys the row sees) (what lse is for
// such inputs, so P stays a probability), replicated until a pass exceeds 3x the L2 cache
// (TimedInputSets).
//
// Thread safety: one per worker process, used from its one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flashtune/kernel.h"
#include "flashtune/status.h"
#include "generator/family.h"
#include "tuner/gpu_protocol.h"

namespace flashtune::detail {

// Shared with gpu_worker.cpp, which defines them:
// ‖a − b‖ / ‖b‖ over 16-bit values; +inf when `a` holds a NaN/inf.
double RelativeError16(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b, DType dtype);
// What `v`'s outputs are verified with: its family's tolerances (Family::ToleranceFor).
Tolerances TolerancesOf(const Variant& v);
// Elements of q (and o, d_o), of k (and v), and of lse for `p`, densely packed.
size_t QElems(const Problem& p);
size_t KElems(const Problem& p);
size_t LseElems(const Problem& p);
// "%.3g" for messages.
std::string Format3g(double v);
// A kernel of `variant` from the cubin bytes a request carries.
Result<ForwardKernel> LoadFromImage(const Context& context, const std::string& image, const Variant& variant);

class BackwardWorker {
 public:
  BackwardWorker(const Context& context, const Stream& stream, int64_t l2_bytes)
      : context_(context), stream_(stream), l2_bytes_(l2_bytes) {}

  // Inputs and outputs for the timed shape `p` (kept while problems of its sizes follow).
  Status Prepare(const Problem& p);
  // The checks above; kWrongResult naming the shape, the gradient and the error otherwise.
  Status Verify(const ForwardKernel& candidate, const MeasureRequest& request);
  // Launches the candidate on input set `i` of the prepared shape (no synchronisation).
  Status Launch(const ForwardKernel& kernel, size_t i);

 private:
  struct Tensors {
    std::optional<DeviceBuffer> q, k, v, o, d_o, lse, dq, dk, dv, workspace;
  };
  struct Case {
    Problem problem;
    Tensors device;
    std::vector<double> dq, dk, dv;  // the float64 reference
  };
  struct Gradients {
    std::vector<uint16_t> dq, dk, dv;
  };

  Status Upload(Tensors& t, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                const std::vector<uint16_t>& v, const std::vector<uint16_t>& o, const std::vector<uint16_t>& d_o,
                const std::vector<float>& lse);
  Status AllocGradients(Tensors& t, const Problem& p);
  BackwardArgs ArgsFor(const Problem& p, const Tensors& inputs, const Tensors& outputs) const;
  // Poisons the gradients and workspace, launches, waits and copies the gradients back.
  Status RunPoisoned(const ForwardKernel& kernel, const Problem& p, const Tensors& inputs, Tensors& outputs,
                     Gradients* out);
  Result<std::vector<Case>*> CasesFor(const Problem& timed);
  Status CheckAgainstReference(const ForwardKernel& kernel, std::vector<Case>& cases, const std::string& who);

  const Context& context_;
  const Stream& stream_;
  int64_t l2_bytes_;
  std::map<std::string, std::vector<Case>> cases_;
  Problem timed_;                 // the prepared shape
  std::string inputs_key_;        // its ToString()
  std::vector<Tensors> inputs_;   // replicated input sets (their gradients unused)
  Tensors output_;                // gradients and workspace of the timed launches
  std::string trusted_key_;
  Gradients trusted_;
};

}  // namespace flashtune::detail
