// The variant space: static rules, enumeration and the default heuristic.
#include "flashtune/space.h"

#include <algorithm>
#include <span>
#include <string>

#include "generator/kernel_abi.h"

namespace flashtune {

namespace {

std::string List(std::span<const int> values) {
  std::string s;
  for (int v : values) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return s;
}

bool Contains(std::span<const int> values, int v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

Status Invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

}  // namespace

std::string ProblemClass::ToString() const {
  return std::string(DTypeName(dtype)) + " d" + std::to_string(head_dim) +
         (causal ? " causal" : " full");
}

ProblemClass ClassOf(const Problem& p) { return {p.dtype, p.head_dim, p.causal}; }
ProblemClass ClassOf(const Variant& v) { return {v.dtype, v.head_dim, v.causal}; }

int64_t SharedMemoryBytes(const Variant& v) {
  return detail::SharedMemoryBytes(v.block_m, v.block_n, v.head_dim, v.stages);
}

Status CheckVariant(const Variant& v, int64_t max_smem_bytes) {
  if (v.dtype != DType::kF16 && v.dtype != DType::kBF16) {
    return Invalid("dtype (" + std::to_string(int(v.dtype)) + ") must be f16 or bf16");
  }
  if (!Contains(kSupportedHeadDims, v.head_dim)) {
    return Invalid("head_dim (" + std::to_string(v.head_dim) + ") must be one of " +
                   List(kSupportedHeadDims));
  }
  if (!Contains(kAllowedBlockM, v.block_m)) {
    return Invalid("block_m (" + std::to_string(v.block_m) + ") must be one of " +
                   List(kAllowedBlockM));
  }
  if (!Contains(kAllowedBlockN, v.block_n)) {
    return Invalid("block_n (" + std::to_string(v.block_n) + ") must be one of " +
                   List(kAllowedBlockN));
  }
  if (!Contains(kAllowedWarps, v.warps)) {
    return Invalid("warps (" + std::to_string(v.warps) + ") must be one of " + List(kAllowedWarps));
  }
  if (!Contains(kAllowedStages, v.stages)) {
    return Invalid("stages (" + std::to_string(v.stages) + ") must be one of " +
                   List(kAllowedStages));
  }
  // Split-Q: each warp owns whole 16-row mma tiles of the query block.
  if (v.block_m % (v.warps * 16) != 0) {
    return Invalid("block_m (" + std::to_string(v.block_m) + ") must be a multiple of warps * 16 (" +
                   std::to_string(v.warps * 16) + ")");
  }
  const int64_t smem = SharedMemoryBytes(v);
  if (smem > max_smem_bytes) {
    return Invalid("shared memory (" + std::to_string(smem) + " bytes for block_m " +
                   std::to_string(v.block_m) + ", block_n " + std::to_string(v.block_n) +
                   ", stages " + std::to_string(v.stages) + ", head_dim " +
                   std::to_string(v.head_dim) + ") exceeds max_smem_bytes (" +
                   std::to_string(max_smem_bytes) + ")");
  }
  return Status::Ok();
}

Result<std::vector<Variant>> EnumerateSpace(const ProblemClass& pc, const SpaceOptions& opt) {
  if (!Contains(kSupportedHeadDims, pc.head_dim)) {
    return Invalid("head_dim (" + std::to_string(pc.head_dim) + ") must be one of " +
                   List(kSupportedHeadDims));
  }
  const struct {
    const char* name;
    const std::vector<int>& values;
    std::span<const int> allowed;
  } axes[] = {{"block_m", opt.block_m, kAllowedBlockM},
              {"block_n", opt.block_n, kAllowedBlockN},
              {"warps", opt.warps, kAllowedWarps},
              {"stages", opt.stages, kAllowedStages}};
  for (const auto& axis : axes) {
    for (int v : axis.values) {
      if (!Contains(axis.allowed, v)) {
        return Invalid(std::string("SpaceOptions.") + axis.name + " holds " + std::to_string(v) +
                       "; allowed: " + List(axis.allowed));
      }
    }
  }
  auto sorted = [](std::vector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  std::vector<Variant> out;
  for (int bm : sorted(opt.block_m)) {
    for (int bn : sorted(opt.block_n)) {
      for (int w : sorted(opt.warps)) {
        for (int s : sorted(opt.stages)) {
          Variant v{pc.dtype, pc.head_dim, pc.causal, bm, bn, w, s};
          if (CheckVariant(v, opt.max_smem_bytes).ok()) out.push_back(v);
        }
      }
    }
  }
  if (out.empty()) {
    return Invalid("no variant of " + pc.ToString() + " fits max_smem_bytes (" +
                   std::to_string(opt.max_smem_bytes) + ") with the given SpaceOptions");
  }
  return out;
}

Variant DefaultVariant(const ProblemClass& pc, int64_t max_smem_bytes) {
  Variant v{pc.dtype, pc.head_dim, pc.causal, 64, 64, 4, 2};
  if (pc.head_dim <= 64) {
    v.block_m = 128;
    v.block_n = 128;
  } else if (pc.head_dim <= 128) {
    v.block_m = 128;
    v.block_n = 64;
  }
  // Cheapest losses first: prefetch depth, then key tile, then query tile.
  while (SharedMemoryBytes(v) > max_smem_bytes) {
    if (v.stages > 1) {
      --v.stages;
    } else if (v.block_n > 32) {
      v.block_n /= 2;
    } else if (v.block_m > 64) {
      v.block_m /= 2;
    } else {
      break;  // nothing smaller exists; CheckVariant reports it
    }
  }
  return v;
}

}  // namespace flashtune
