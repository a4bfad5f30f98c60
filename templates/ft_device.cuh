// Device helpers the kernel templates share: shared-memory addresses, cp.async, ldmatrix, the
// m16n8k16 MMA, 16-bit packing, the approximate exp2/log2 and the mma.sync online-softmax and
// P·V steps, and the varlen sequence lookup. Inline PTX only (NVRTC needs no toolkit header). The generator inlines this file
// where a template says #include "ft_device.cuh"; include it inside namespace ft, after
// `using namespace ft_config` (it reads kBf16) and the u32 typedef.
#ifndef FT_DEVICE_CUH_
#define FT_DEVICE_CUH_

__device__ __forceinline__ u32 smem_address(const void* p) {
  u32 a;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// 16-byte global -> shared copy; src_bytes = 0 zero-fills (rows past the sequence end).
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// d += a * b on one m16n8k16 tile, fp32 accumulation.
__device__ __forceinline__ void mma_16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  if constexpr (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats -> one register of two 16-bit values, `lo` in the low half.
__device__ __forceinline__ u32 pack2(float lo, float hi) {
  u32 r;
  if constexpr (kBf16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_log2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

#define kNegInf __int_as_float(0xff800000)

// ---- the mma.sync online-softmax step (fa2_fwd, decode_fwd) ------------------------------
// Fragments in the m16n8k16 accumulator layout: s[nj][e] is S of 8-key column tile nj, rows
// lane / 4 (e < 2) and lane / 4 + 8 (e >= 2), columns 2 * (lane % 4) + (e & 1).

// Row r (0: the upper 8 rows, 1: the lower) of one 16-row tile: folds this step's scores into
// the running max (times scale*log2(e)) and this thread's share of the row sum, writes P
// (exp2(s * scale - m), packed to 16 bits, two adjacent columns a register) into p[nj][r],
// and returns the factor exp2(m_old - m_new) the row's O accumulator must be scaled by.
template <int kN>
__device__ __forceinline__ float softmax_row_step(const float (&s)[kN][4], int r, float scale_log2, float& row_max,
                                                  float& row_sum, u32 (&p)[kN][2]) {
  float mx = kNegInf;
#pragma unroll
  for (int nj = 0; nj < kN; ++nj) mx = fmaxf(mx, fmaxf(s[nj][2 * r], s[nj][2 * r + 1]));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  const float m_new = fmaxf(row_max, mx * scale_log2);
  // A row with no visible key yet keeps m = -inf; subtracting 0 keeps exp2 at 0, not NaN.
  const float m_base = m_new == kNegInf ? 0.f : m_new;
  const float correction = fast_exp2(row_max - m_base);
  row_max = m_new;
  float sum = 0.f;
#pragma unroll
  for (int nj = 0; nj < kN; ++nj) {
    const float p0 = fast_exp2(fmaf(s[nj][2 * r], scale_log2, -m_base));
    const float p1 = fast_exp2(fmaf(s[nj][2 * r + 1], scale_log2, -m_base));
    p[nj][r] = pack2(p0, p1);
    sum += p0 + p1;
  }
  row_sum = row_sum * correction + sum;
  return correction;
}

// Scales one 16-row tile of O: the upper rows by c0, the lower by c1.
template <int kD>
__device__ __forceinline__ void scale_rows(float (&o)[kD][4], float c0, float c1) {
#pragma unroll
  for (int dt = 0; dt < kD; ++dt) {
    o[dt][0] *= c0;
    o[dt][1] *= c0;
    o[dt][2] *= c1;
    o[dt][3] *= c1;
  }
}

// Shared-memory layouts of a tile of 16-bit rows: the byte offset of element (row, col), col a
// multiple of 8 (one 16-byte chunk), from the tile's row 0. Either spreads ldmatrix's eight rows
// of one chunk over all 32 banks.
//  - PaddedRows: rows kStride elements apart (a 16-byte pad after each row).
//  - SwizzledRows: rows exactly kCols elements apart (kCols a multiple of 64, so every row starts
//    on a 128-byte line), chunk c of row r stored at chunk c ^ (r % 8). The 16-byte cp.async
//    copies of one global 128-byte line then fill one shared 128-byte line; with the pad they
//    straddle two, and a stream of them read 4-5% less DRAM bandwidth (decode's K/V, measured:
//    docs/perf-notes.md, "Decode round 9"). A base offset of a multiple of 8 rows keeps the
//    pattern, so a warp's sub-tile may be addressed from its own first row.
template <int kStride>
struct PaddedRows {
  static constexpr int kStrideElems = kStride;
  static __device__ __forceinline__ u32 offset(int row, int col) { return (u32)((row * kStride + col) * 2); }
};
template <int kCols>
struct SwizzledRows {
  static_assert(kCols % 64 == 0, "swizzled rows must be whole 128-byte lines");
  static constexpr int kStrideElems = kCols;
  static __device__ __forceinline__ u32 offset(int row, int col) {
    return (u32)(row * kCols * 2 + ((((col >> 3) ^ row) & 7) | ((col >> 3) & ~7)) * 16);
  }
};

// O += P V for one warp's kMT 16-row tiles: P from registers (softmax_row_step's layout) as
// the A operand, V as the B operand read transposed by ldmatrix from a shared tile laid out by
// Rows (PaddedRows or SwizzledRows) whose row 0 is this warp's first key, at `v_addr`.
template <int kMT, int kN, int kD, class Rows>
__device__ __forceinline__ void pv_mma(float (&o)[kMT][kD][4], const u32 (&p)[kMT][kN][2], u32 v_addr, int lane) {
#pragma unroll
  for (int kk = 0; kk < kN / 2; ++kk) {
    u32 pa[kMT][4];
#pragma unroll
    for (int mi = 0; mi < kMT; ++mi) {
      pa[mi][0] = p[mi][2 * kk][0];
      pa[mi][1] = p[mi][2 * kk][1];
      pa[mi][2] = p[mi][2 * kk + 1][0];
      pa[mi][3] = p[mi][2 * kk + 1][1];
    }
#pragma unroll
    for (int dt = 0; dt < kD; dt += 2) {
      u32 b[4];
      ldmatrix_x4_trans(b, v_addr + Rows::offset(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, (dt + lane / 16) * 8));
#pragma unroll
      for (int mi = 0; mi < kMT; ++mi) {
        mma_16816(o[mi][dt], pa[mi], b[0], b[1]);
        mma_16816(o[mi][dt + 1], pa[mi], b[2], b[3]);
      }
    }
  }
}

// Sequence b of a varlen batch: sets *row0 to its first row in the packed tensor and returns
// its length. Read from device memory the host could not check: the span is clamped to
// [0, total) and its length to [0, max_len], so a bad cu_seqlens gives a wrong answer (rows
// the grid does not cover stay unwritten) but never an access outside the tensors.
__device__ __forceinline__ int varlen_span(const int* cu, int b, int max_len, long long total, long long* row0) {
  const long long start = min(max((long long)cu[b], 0ll), total);
  const long long end = min(max((long long)cu[b + 1], start), total);
  *row0 = start;
  return (int)min(end - start, (long long)max_len);
}

#endif  // FT_DEVICE_CUH_
