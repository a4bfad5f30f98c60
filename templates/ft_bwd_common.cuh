// What the backward templates (fa2_bwd, hopper_bwd) share: the 16-bit element as fp32, the
// ordering counters' acquire / release (deterministic mode's turns), and the per-row kernels'
// bodies, which each template's kernels call with its own launch bounds and parameter struct:
// the preprocess (delta = rowsum(d_o ∘ o), the fp32 dq accumulator zeroed, and the ordering
// counter of the block's rows) and the convert (dq = dq_accum · scale in the caller's dtype and
// strides). Grid (ceil(Nq / kRows), Hq, B); kWarpsPerBlock warps, one row at a time each.
// The generator inlines this file where a template says #include "ft_bwd_common.cuh"; include
// it inside namespace ft after ft_device.cuh (pack2), `using namespace ft_config` (kBf16) and the
// i64 / u16 / u32 typedefs.
#ifndef FT_BWD_COMMON_CUH_
#define FT_BWD_COMMON_CUH_

// One 16-bit element of the call's dtype as fp32.
__device__ __forceinline__ float to_float(u16 x) {
  if constexpr (kBf16) {
    return __uint_as_float(u32(x) << 16);
  } else {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(x));
    return f;
  }
}


// An ordering counter (the workspace's, one per 16 query rows of a head): read with acquire,
// set with release, at GPU scope.
__device__ __forceinline__ int load_acquire(const int* p) {
  int x;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(x) : "l"(p) : "memory");
  return x;
}
__device__ __forceinline__ void store_release(int* p, int x) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(x) : "memory");
}

template <int kHeadDim, int kRows, int kWarpsPerBlock>
__device__ __forceinline__ void bwd_preprocess_rows(const ft_abi::Fa2BwdParams& p, bool zero_counter) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int head = blockIdx.y, batch = blockIdx.z;
  const int Nq = p.seqlen_q;
  const i64 row_base = ((i64)batch * p.heads_q + head) * Nq;
  for (int r = warp; r < kRows; r += kWarpsPerBlock) {
    const int row = blockIdx.x * kRows + r;
    if (row >= Nq) break;
    const u16* o = static_cast<const u16*>(p.o) + batch * p.o_stride[0] + (i64)row * p.o_stride[1] + head * p.o_stride[2];
    const u16* d_o = static_cast<const u16*>(p.d_o) + batch * p.do_stride[0] + (i64)row * p.do_stride[1] +
                     head * p.do_stride[2];
    float sum = 0.f;
    for (int d = lane; d < kHeadDim; d += 32) sum += to_float(o[d]) * to_float(d_o[d]);
#pragma unroll
    for (int s = 16; s > 0; s /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, s);
    if (lane == 0) p.delta[row_base + row] = sum;
    float* acc = p.dq_accum + (row_base + row) * kHeadDim;
    for (int d = lane; d < kHeadDim; d += 32) acc[d] = 0.f;
  }
  // The counter of this block's rows (the workspace has one per kRows rows of each head).
  if (zero_counter && threadIdx.x == 0 && blockIdx.x < p.counters_per_head)
    p.counters[((i64)batch * p.heads_q + head) * p.counters_per_head + blockIdx.x] = 0;
}

// kSwizzled: the accumulator's rows hold their 16-byte units permuted, unit u of row q at
// u ^ (q % 8) (hopper_bwd's dQ tile layout, added to the accumulator as it is).
template <int kHeadDim, int kRows, int kWarpsPerBlock, bool kSwizzled = false>
__device__ __forceinline__ void bwd_convert_rows(const ft_abi::Fa2BwdParams& p) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int head = blockIdx.y, batch = blockIdx.z;
  const int Nq = p.seqlen_q;
  const i64 row_base = ((i64)batch * p.heads_q + head) * Nq;
  for (int r = warp; r < kRows; r += kWarpsPerBlock) {
    const int row = blockIdx.x * kRows + r;
    if (row >= Nq) break;
    const float* acc = p.dq_accum + (row_base + row) * kHeadDim;
    u16* dq = static_cast<u16*>(p.dq) + batch * p.dq_stride[0] + (i64)row * p.dq_stride[1] + head * p.dq_stride[2];
    for (int d = 2 * lane; d < kHeadDim; d += 64) {
      const int src = kSwizzled ? ((d / 4) ^ (row % 8)) * 4 + d % 4 : d;
      *reinterpret_cast<u32*>(dq + d) = pack2(acc[src] * p.scale, acc[src + 1] * p.scale);
    }
  }
}

#endif  // FT_BWD_COMMON_CUH_
