#include "generator/launch_config.h"

#include "flashtune/space.h"

namespace flashtune::detail {

LaunchConfig ComputeLaunchConfig(const Variant& variant, const ForwardArgs& args) {
  LaunchConfig c{};
  c.grid[0] = unsigned((args.seqlen_q + variant.block_m - 1) / variant.block_m);
  c.grid[1] = unsigned(args.heads_q);
  c.grid[2] = unsigned(args.batch);
  c.block[0] = unsigned(variant.threads());
  c.block[1] = 1;
  c.block[2] = 1;
  c.smem_bytes = SharedMemoryBytes(variant);
  return c;
}

KernelParams MakeKernelParams(const ForwardArgs& a) {
  constexpr double kLog2e = 1.4426950408889634074;
  KernelParams p{};
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.o = a.o;
  p.lse = a.lse;
  const Strides* in[4] = {&a.q_strides, &a.k_strides, &a.v_strides, &a.o_strides};
  int64_t* out[4] = {p.q_stride, p.k_stride, p.v_stride, p.o_stride};
  for (int t = 0; t < 4; ++t) {
    out[t][0] = in[t]->batch;
    out[t][1] = in[t]->seq;
    out[t][2] = in[t]->head;
  }
  p.batch = int32_t(a.batch);
  p.seqlen_q = int32_t(a.seqlen_q);
  p.seqlen_k = int32_t(a.seqlen_k);
  p.heads_q = int32_t(a.heads_q);
  p.heads_kv = int32_t(a.heads_kv);
  p.scale_log2 = float(double(a.EffectiveScale()) * kLog2e);
  return p;
}

}  // namespace flashtune::detail
