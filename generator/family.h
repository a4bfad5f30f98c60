// generator/family.h — a kernel family: the seam every kind of attention kernel plugs into.
//
// A family is one kernel template and everything the pipeline needs to know about it:
//  - its parameter space: the parameters' URI names, allowed values and the values searched
//    by default, pruned by the target's limits (Space, Check);
//  - its source: a constexpr prologue prepended to its template (Prologue, template_name);
//  - which problems it is for (PreferenceFor: layouts, e.g. decode's few query rows), so the
//    tuner searches and the planner picks only families that fit the problem; and where the
//    tuner searches it alone (SearchedAloneFor: the others measured far slower there);
//  - its launch: geometry, dynamic shared memory and argument packing for one call (Pack),
//    and whether a given call is one its kernel can serve at all (CanRun: e.g. TMA needs
//    16-byte-aligned strides), so the runtime can fall back to another family and say why;
//    a family may launch more kernels of the same module after the first (extra_kernels,
//    LaunchPacket::next: e.g. the backward pass's main and convert kernels, decode's combine
//    step) and ask for a caller-owned workspace (WorkspaceBytes);
//  - which operation it computes (operation(): a forward family packs ForwardArgs (Pack), a
//    backward family BackwardArgs (PackBackward)); PreferenceFor refuses problems of another
//    operation, so the tuner and the planner only consider the families of a problem's
//    operation;
//  - its output check: the tolerances its results are verified with (Tolerances);
//  - a prior for the budgeted search (PriorScore) and a short human description (Describe).
// The tuner searches the union of the spaces of the families that serve a (problem class,
// target); the database keys trials by variant URI, whose first field is the family; the
// runtime dispatches a winner to its family. None of them names a family: adding one means
// adding generator/families/<name>.cpp (defining `const Family& FamilyEntry_<name>()`; the
// build generates the registry from the file names) and its template under templates/.
//
// Thread safety: families are immutable singletons; every method is const and may be called
// from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flashtune/backward_args.h"
#include "flashtune/forward_args.h"
#include "flashtune/status.h"
#include "flashtune/variant.h"
#include "generator/launch_packet.h"

namespace flashtune {

struct ProblemClass;

// The compilation target a family is asked about: the NVRTC arch ("sm_90a") and its opt-in
// dynamic shared-memory limit per block.
struct Target {
  std::string arch = "sm_90a";
  int64_t max_smem_bytes = 232448;
};

// One parameter axis of a family.
struct ParamAxis {
  std::string_view name;         // URI key, e.g. "br"
  std::string_view description;  // "block_m: query rows per thread block"
  std::vector<int> allowed;      // every value the template accepts
  std::vector<int> searched;     // the values the default space enumerates (subset of allowed)
};

struct Tolerances {
  double output_rel_l2 = 1e-2;  // |o - ref| / |ref| over the whole output
  double lse_abs = 1e-3;        // max |lse - ref|
};

class Family {
 public:
  virtual ~Family() = default;

  // URI prefix and registry key ("fa2_fwd").
  virtual std::string_view name() const = 0;
  // The embedded template the source is generated from ("fa2_fwd.cuh").
  virtual std::string_view template_name() const = 0;
  // Which family's Default the runtime prefers when several serve a class and nothing is
  // tuned (higher wins): the family expected to be fastest untuned.
  virtual int preference() const { return 0; }
  // How well the family fits `problem` (its operation, layout and sizes): < 0 when it cannot
  // serve it at all (the tuner does not search it and the planner does not pick it), else
  // higher is preferred. Default: preference() for a problem of operation() whose layout is
  // dense, or varlen when the family reads_varlen(); -1 otherwise. An override refuses other
  // operations too (ServesOperation).
  virtual int PreferenceFor(const Problem& problem) const {
    const bool layout = problem.layout == Layout::kDense || (problem.layout == Layout::kVarlen && reads_varlen());
    return ServesOperation(problem) && layout ? preference() : -1;
  }
  // Whether the tuner searches this family alone for `problem` (which it serves): its A/Bs
  // showed every other family that serves such a problem losing by a wide margin, so their
  // candidates would only spend a budgeted search's measurements. Only the search narrows: the
  // planner still falls back to the other families (PreferenceFor). Default: no.
  virtual bool SearchedAloneFor(const Problem& problem) const {
    (void)problem;
    return false;
  }
  // Whether the tuner times the family for `problem` (which it serves): false where it serves
  // such calls only with inputs a problem does not describe, so that no tuned measurement could
  // run it (hopper_paged reads a dense cache only with seqlens_k). Default: yes.
  virtual bool SearchedFor(const Problem& problem) const {
    (void)problem;
    return true;
  }
  // Whether its kernels read packed varlen batches (ForwardArgs::varlen's cu_seqlens).
  virtual bool reads_varlen() const { return false; }
  // Whether `v`'s kernel reads K/V in `layout`. A family may compile a kernel per layout, so
  // that one layout's code does not slow the other's (decode_fwd's `kv`); such a variant
  // serves only the problems of its layouts: the tuner does not search it for others, and the
  // planner does not pick it for them. Default: every variant reads every layout the family
  // serves (PreferenceFor).
  virtual bool ReadsLayout(const Variant& v, Layout layout) const {
    (void)v;
    (void)layout;
    return true;
  }
  // Whether `problem` asks for the operation the family computes.
  bool ServesOperation(const Problem& problem) const { return problem.operation == operation(); }
  // Workspace bytes a call of `problem` needs on a device of `sm_count` SMs, for any variant
  // of the family (an upper bound, so the caller can size it before the plan is known).
  virtual int64_t WorkspaceBytes(const Problem& problem, int sm_count) const {
    (void)problem;
    (void)sm_count;
    return 0;
  }
  // The variant that runs `problem` in `v`'s place: `v`, or a twin of the same tile compiled
  // for the call's layout (hopper_fwd's p3 for packed sequences), with `why` (when not null)
  // saying so. The planner applies it to whatever it picked: tuned winners were timed on dense
  // tensors.
  virtual Variant TwinFor(const Variant& v, const Problem& problem, std::string* why) const {
    (void)problem;
    (void)why;
    return v;
  }
  // Workspace bytes that make a call of `problem` faster when the caller gives them, though it
  // runs without (hopper_fwd's claimed tiles on packed sequences). WorkspaceBytes (the free
  // function, Runtime::workspace_size) asks for them too; a call is refused only for less than
  // the family's WorkspaceBytes.
  virtual int64_t WorkspaceWanted(const Problem& problem) const {
    (void)problem;
    return 0;
  }
  // What the family's workspace holds, as a noun phrase ("split-KV partial results ..."), for
  // WorkspaceUse; "" for a family that asks for none.
  virtual std::string_view workspace_use() const { return {}; }
  // Whether its kernels honour ForwardArgs::seqlens_k on the dense layout (per-sequence key
  // counts); a call with seqlens_k goes to another family otherwise.
  virtual bool reads_seqlens_k() const { return false; }
  // Suffixes of the module's further kernels, launched after the first in the order the
  // packet's `next` steps name them: kernel i + 1 is "<uri>_<extra_kernels()[i]>".
  virtual std::vector<std::string_view> extra_kernels() const { return {}; }
  // The operation its kernels compute.
  virtual Operation operation() const { return Operation::kForward; }
  // Its parameters, in URI order. By convention the first is the query tile (rows per block:
  // the parallelism knob) and the second the key tile; the budgeted search relies on it.
  virtual const std::vector<ParamAxis>& axes() const = 0;

  // Why the family has no kernels for `cls` on `target` (its space is empty then), in a phrase
  // for a plan's `why` ("computes the backward pass only", "head dims 64, 96 and 128 only"); empty
  // when it has. A class of another operation is answered here, for every family alike; the
  // rest is the family's UnservedFor.
  std::string Unserved(const ProblemClass& cls, const Target& target) const;
  // Whether the family has kernels for `cls` on `target` at all.
  bool Serves(const ProblemClass& cls, const Target& target) const { return Unserved(cls, target).empty(); }
  // Dynamic shared memory the variant's kernel needs, in bytes.
  virtual int64_t SharedMemoryBytes(const Variant& v) const = 0;
  // Threads per block.
  virtual int Threads(const Variant& v) const = 0;
  // OK when the template accepts `v` (beyond the per-axis allowed values, which the caller
  // has checked) and its shared memory fits `max_smem_bytes`; kInvalidArgument naming the
  // parameter, its value and the rule otherwise.
  virtual Status CheckRules(const Variant& v, int64_t max_smem_bytes) const = 0;
  // The family's untuned choice for `cls` on `target` (what the runtime runs without a tuned
  // winner). Must pass Check.
  virtual Variant Default(const ProblemClass& cls, const Target& target) const = 0;
  // The untuned choice for `problem` (which the family serves): Default of its class, made to
  // read the problem's layout (ReadsLayout) by a family that compiles a kernel per layout.
  virtual Variant DefaultFor(const Problem& problem, const Target& target) const;
  // Why DefaultFor chose differently from the class default for `problem`, in a phrase for a
  // plan's `why` ("a short K/V stream: ..."); empty where it did not.
  virtual std::string DefaultReason(const Problem& problem, const Target& target) const;
  // The constexpr prologue (ends with `#line 1 "<template>"`).
  virtual std::string Prologue(const Variant& v) const = 0;
  // OK when the variant's kernel can run `args` (already validated and matching the variant's
  // class); kUnsupported saying why otherwise (the runtime then falls back to another family).
  virtual Status CanRun(const Variant& v, const ForwardArgs& args) const {
    (void)v;
    (void)args;
    return Status::Ok();
  }
  // The same for one backward call (already validated and matching the variant's class):
  // kUnsupported saying why the variant's kernel cannot run it (e.g. deterministic mode or
  // strides TMA cannot describe), so the caller can use another family's variant.
  virtual Status CanRunBackward(const Variant& v, const BackwardArgs& args) const {
    (void)v;
    (void)args;
    return Status::Ok();
  }
  // Fills geometry, shared memory and parameter bytes for one forward call. Precondition:
  // CanRun OK. Only asked of forward families (PackValidatedForward refuses the others), so a
  // family of another operation leaves it as is.
  virtual void Pack(const Variant& v, const ForwardArgs& args, LaunchPacket* out) const {
    (void)v;
    (void)args;
    (void)out;
  }
  // The same for one backward call (ValidateBackwardArgs OK, the variant matches). Only asked
  // of backward families (PackBackward refuses the others).
  virtual void PackBackward(const Variant& v, const BackwardArgs& args, LaunchPacket* out) const {
    (void)v;
    (void)args;
    (void)out;
  }
  // Makes `v` (a variant of this family for `problem`'s class) run a backward call with or
  // without deterministic mode (BackwardArgs::deterministic): the family's policy for its
  // deterministic parameters. False, `v` unchanged, when the family has no such mode. Default:
  // the `det` parameter set to 1 or 0 where the family allows it.
  virtual bool SetDeterminism(Variant& v, const Problem& problem, bool deterministic) const;
  // What the tuner's worker verifies this family's outputs with, against the float64 reference
  // and the trusted variant (backward: per gradient, output_rel_l2 only).
  virtual Tolerances ToleranceFor(DType dtype) const {
    return {dtype == DType::kBF16 ? 1e-2 : 2e-3, 1e-3};
  }
  // The budgeted search's prior: lower is more promising. 0 for every variant by default.
  virtual double PriorScore(const Problem& p, const Variant& v) const {
    (void)p;
    (void)v;
    return 0;
  }
  // How far apart two variants of this family are, in "steps" (the budgeted search polishes
  // around its best by nearest steps). Default: sum over parameters of |log2(a / b)|.
  virtual double Distance(const Variant& a, const Variant& b) const;
  // "128x64 w4 s2": the parameters in a line a person reads.
  virtual std::string Describe(const Variant& v) const;

  // Whether the default space (Space without `values`) enumerates `v`, a valid combination of
  // searched values: a family leaves out combinations that its A/Bs showed never win, e.g. a
  // tile measured to pay at one head dim only. `v` stays allowed (Check) either way. Default: yes.
  virtual bool InDefaultSpace(const Variant& v) const {
    (void)v;
    return true;
  }

  // Full check: family name, class, every parameter present with an allowed value, then
  // CheckRules. kInvalidArgument naming the field.
  Status Check(const Variant& v, int64_t max_smem_bytes) const;
  // Every variant of the searched values (the cross product of axes().searched, in axis
  // order, ascending) that passes Check on `target` and InDefaultSpace; empty when !Serves.
  // `values` replaces the searched values of the parameters it names (values the family does
  // not allow are dropped by Check); with `values`, InDefaultSpace is not asked.
  std::vector<Variant> Space(const ProblemClass& cls, const Target& target,
                             const std::vector<std::pair<std::string, std::vector<int>>>& values = {}) const;
  // A variant of this family with every parameter set.
  Variant MakeVariant(const ProblemClass& cls, std::span<const int> values) const;

 private:
  // Unserved for a class of the family's operation(): the target's arch, the head dim.
  virtual std::string UnservedFor(const ProblemClass& cls, const Target& target) const = 0;
};

// Every registered family, in name order.
std::span<const Family* const> Families();
// The family called `name`; nullptr when none is.
const Family* FindFamily(std::string_view name);
// The family of `v`; kInvalidArgument naming the known families when none is registered.
Result<const Family*> FamilyOf(const Variant& v);
// Comma-separated names, for messages.
std::string FamilyNames();

// Whether v's family accepts `value` for its parameter `name` (false for an unknown family or a
// parameter the family does not have), e.g. FamilyAllows(v, "det", 1): has a deterministic mode.
bool FamilyAllows(const Variant& v, std::string_view name, int value);

// Family::SetDeterminism through v's family (false for an unknown family).
bool SetDeterminism(Variant& v, const Problem& problem, bool deterministic);

// Registers a family for the life of the process (tests add families that only they use).
// Not thread-safe with concurrent lookups: call before any other thread uses the registry.
void RegisterFamilyForTesting(const Family* family);

// The families that serve (cls, target), most preferred first (ties in name order): the order
// in which the runtime's planner takes a default and falls back.
std::vector<const Family*> FamiliesServing(const ProblemClass& cls, const Target& target);

// Whether `v` can serve `problem`: its family is registered, serves the problem
// (PreferenceFor) and `v`'s kernel reads the problem's layout (ReadsLayout).
bool VariantServes(const Variant& v, const Problem& problem);

// Threads per block of `v`, through its family (0 for an unknown family). SharedMemoryBytes
// is in flashtune/space.h.
int ThreadsPerBlock(const Variant& v);

// The families that can serve `problem` (PreferenceFor >= 0), most preferred first.
std::vector<const Family*> FamiliesFor(const Problem& problem);

// What families' Unserved say of an arch: empty when `target` has wgmma and setmaxnreg (an
// arch-specific "a" target of a wgmma GPU: sm_90a), or cp.async (sm_80 on); else a phrase
// naming the target ("needs wgmma and setmaxnreg, which only sm_90a has; this target is sm_90").
std::string NeedsWgmma(const Target& target);
std::string NeedsCpAsync(const Target& target);

// Why each family `problem` prefers over `chosen` (FamiliesFor's order) has no kernels for it on
// `target` ("hopper_bwd: head dims 64, 96 and 128 only"; families with one reason named together,
// reasons joined by "; "); empty when none was passed over. What a plan that runs `chosen`
// says about the families it passed over.
std::string PassedOver(const Problem& problem, const Target& target, std::string_view chosen);

// The families the tuner searches for `problem` on `target`: those of FamiliesFor that serve the
// class there and are SearchedFor it, in its order; only those among them that are searched
// alone for the problem (SearchedAloneFor) when any is.
std::vector<const Family*> FamiliesSearchedFor(const Problem& problem, const Target& target);

// The workspace check packing makes: `workspace_bytes` holds what `v`'s family needs for
// `problem` on a device of `sm_count` multiprocessors (kInvalidArgument naming it otherwise; OK
// for an unknown family, which packing refuses). The runtime asks it before loading a planned
// kernel, so a call refused for its workspace compiles nothing.
Status CheckCallWorkspace(const Variant& v, const Problem& problem, int64_t workspace_bytes, int sm_count);

// Validates args for `v` (ValidateForwardArgs, CheckArgsMatchVariant, the workspace the
// family needs, the family's CanRun) and packs them. On error nothing is written that a launch could use.
Status PackForward(const Variant& v, const ForwardArgs& args, LaunchPacket* out);
// PackForward for callers that have already run ValidateForwardArgs (the runtime's hot path).
// kInvalidArgument when `v`'s family does not compute the forward pass.
Status PackValidatedForward(const Variant& v, const ForwardArgs& args, LaunchPacket* out);
// Validates a backward call for `v` (ValidateBackwardArgs, CheckArgsMatchVariant, `v`'s family
// computes the backward pass, the family's CanRunBackward) and packs it.
Status PackBackward(const Variant& v, const BackwardArgs& args, LaunchPacket* out);
// PackBackward for callers that have already run ValidateBackwardArgs.
Status PackValidatedBackward(const Variant& v, const BackwardArgs& args, LaunchPacket* out);

}  // namespace flashtune
