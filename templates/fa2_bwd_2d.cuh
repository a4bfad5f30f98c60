// fa2_bwd's 2-D warp layout (kGrid2d): FlashAttention-2's backward split of one step's five
// GEMMs over 8 warps, included by fa2_bwd.cuh after its helpers (inside no namespace; it opens
// ft). Contract: GridWork<0>::step() does one query step of a main-kernel block — S = Q Kᵀ and
// dP = d_o Vᵀ on a (kBlockM / 32) × (rest) grid of 32-query tiles; P and dS to shared memory
// as [query][key] 16-bit tiles; dV += Pᵀ d_o and dK += dSᵀ Q on a 4 (32 keys) × 2 (D / 2) grid;
// dQ = dS K on a (kBlockM / 32) × (rest) grid of 32-query tiles, put like the rows layout's.
// store() writes dK (times the scale) and dV. Against the rows layout, each warp reads a Q /
// d_o half and a P / dS quarter instead of all of them: 0.45 ldmatrix per MMA instead of
// 0.58, and only 4 rows of lse / delta per thread instead of kBlockM / 4. Needs kBlockN 128,
// 8 warps, D 64 or 128 (kBlockM 128 only at D 64: registers); the family's rules say so too.
// Thread safety: a block's warps meet at the step's two barriers (P / dS complete; the caller's
// before the next step).

namespace ft {

template <int kUnused>
struct GridWork {
  static constexpr int kSWarpsM = kBlockM / 32;         // S / dP and dQ: warps along queries
  static constexpr int kSWarpsN = kWarps / kSWarpsM;    // S / dP: warps along keys
  static constexpr int kSKeys = kBlockN / kSWarpsN;     // keys per warp in S / dP
  static constexpr int kSNt = kSKeys / 8;               // its 8-key column tiles
  static constexpr int kKvWarpsN = kBlockN / 32;        // dK / dV: warps along keys (32 each)
  static constexpr int kKvWarpsD = kWarps / kKvWarpsN;  // and along D
  static constexpr int kKvNt = kHeadDim / kKvWarpsD / 8;  // 8-column tiles of a warp's dK / dV
  static constexpr int kQWarpsD = kWarps / kSWarpsM;    // dQ: warps along D
  static constexpr int kQCols = kHeadDim / kQWarpsD;    // dQ columns per warp
  static constexpr int kQNt = kQCols / 8;
  // Checked only where the layout is used (kUnused makes them dependent): the rows layout's
  // variants never instantiate GridWork.
  static_assert(kUnused == 0 && kWarps == 8 && kBlockN == 128 && (kHeadDim == 64 || kHeadDim == 128) &&
                    (kBlockM == 64 || (kBlockM == 128 && kHeadDim == 64)),
                "the 2-D layout needs block_n 128, 8 warps, head dim 64 or 128, block_m 64 (or 128 at d64)");
  static_assert(kUnused == 0 && kSNt % 2 == 0 && kKvNt % 2 == 0 && kQNt % 2 == 0,
                "B operands come in ldmatrix.x4 pairs");

  float acc_dk[2][kKvNt][4];  // this warp's 32 keys × kHeadDim / kKvWarpsD columns
  float acc_dv[2][kKvNt][4];

  __device__ void zero() { zero_pair(acc_dk, acc_dv); }

  __device__ void step(const FtParams& p, const StepArgs& s) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int Nk = p.seqlen_k, m0 = s.m0, n0 = s.n0;
    u16* sP = reinterpret_cast<u16*>(s.scratch);
    u16* sdS = sP + kBlockM * kPStride;
    const u32 sP_addr = smem_address(sP), sdS_addr = smem_address(sdS);

    // S / dP: this warp's 32 queries (two 16-row tiles) × kSKeys keys.
    const int q0 = (warp / kSWarpsN) * 32, key0 = (warp % kSWarpsN) * kSKeys;
    float lse2[2][2], dlt[2][2];  // per row tile and row half
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r) load_lse_delta(p, s, q0 + mi * 16 + lane / 4 + r * 8, &lse2[mi][r], &dlt[mi][r]);

    float acc_s[2][kSNt][4], acc_dp[2][kSNt][4];
    zero_pair(acc_s, acc_dp);
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) {
      u32 aq[2][4], ao[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const u32 off = (u32)(((q0 + mi * 16 + (lane % 16)) * kRowStride + ks * 16 + (lane / 16) * 8) * 2);
        ldmatrix_x4(aq[mi], s.q + off);
        ldmatrix_x4(ao[mi], s.d_o + off);
      }
#pragma unroll
      for (int nj = 0; nj < kSNt; nj += 2) {
        const u32 off = (u32)(((key0 + nj * 8 + (lane / 16) * 8 + (lane % 8)) * kRowStride + ks * 16 +
                               ((lane / 8) % 2) * 8) * 2);
        u32 bk[4], bv[4];
        ldmatrix_x4(bk, s.k + off);
        ldmatrix_x4(bv, s.v + off);
        mma_side_by_side(acc_s, acc_dp, nj, aq, ao, bk, bv);
      }
    }

    // P = exp2(S·scale·log2e − lse·log2e), masked; dS = P ∘ (dP − delta); both to shared memory.
    const bool need_mask = (n0 + kBlockN > Nk) || (kCausal && n0 + key0 + kSKeys - 1 > m0 + q0 + s.diag);
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = q0 + mi * 16 + lane / 4 + r * 8;
#pragma unroll
        for (int nj = 0; nj < kSNt; ++nj) {
          const int col = key0 + nj * 8 + 2 * (lane % 4);
          float pv[2], dsv[2];
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            float pr = fast_exp2(fmaf(acc_s[mi][nj][2 * r + c], p.scale_log2, -lse2[mi][r]));
            if (need_mask) {
              const int key = n0 + col + c;
              if (key >= Nk || (kCausal && key > m0 + row + s.diag)) pr = 0.f;
            }
            pv[c] = pr;
            dsv[c] = pr * (acc_dp[mi][nj][2 * r + c] - dlt[mi][r]);
          }
          *reinterpret_cast<u32*>(sP + row * kPStride + col) = pack2(pv[0], pv[1]);
          *reinterpret_cast<u32*>(sdS + row * kPStride + col) = pack2(dsv[0], dsv[1]);
        }
      }
    if constexpr (kDqStaged) staged_dq_read();  // the last step's bulk adds have read the dQ tile
    __syncthreads();  // P and dS are complete (and the dQ tile free)

    // dV += Pᵀ d_o, dK += dSᵀ Q: this warp's 32 keys × its D columns. A = Pᵀ / dSᵀ from the
    // [query][key] tiles with ldmatrix.trans; B = d_o / Q ([query][d]) with ldmatrix.trans.
    {
      const int kv_key0 = (warp % kKvWarpsN) * 32, col0 = (warp / kKvWarpsN) * kKvNt * 8;
#pragma unroll
      for (int kk = 0; kk < kBlockM / 16; ++kk) {
        u32 pa[2][4], da[2][4];
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
          const u32 off = (u32)(((kk * 16 + (lane % 8) + (lane / 16) * 8) * kPStride + kv_key0 + mi * 16 +
                                 ((lane / 8) % 2) * 8) * 2);
          ldmatrix_x4_trans(pa[mi], sP_addr + off);
          ldmatrix_x4_trans(da[mi], sdS_addr + off);
        }
#pragma unroll
        for (int dt = 0; dt < kKvNt; dt += 2) {
          const u32 off =
              (u32)(((kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * kRowStride + col0 + (dt + lane / 16) * 8) * 2);
          u32 bo[4], bq[4];
          ldmatrix_x4_trans(bo, s.d_o + off);
          ldmatrix_x4_trans(bq, s.q + off);
          mma_side_by_side(acc_dv, acc_dk, dt, pa, da, bo, bq);
        }
      }
    }

    // dQ[m0 ..] += dS K: this warp's 32 queries × kQCols columns. A = dS ([query][key]) with
    // ldmatrix; B = K ([key][d]) with ldmatrix.trans.
    if constexpr (kDeterministic && !kDqStaged) wait_turn(s.counter, s.n_block);  // adds go straight to global
    const int dq_row0 = (warp / kQWarpsD) * 32, dq_col0 = (warp % kQWarpsD) * kQCols;
    float acc[2][kQNt][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int j = 0; j < kQNt; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      u32 a[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
        ldmatrix_x4(a[mi], sdS_addr + (u32)(((dq_row0 + mi * 16 + (lane % 16)) * kPStride + kk * 16 + (lane / 16) * 8) * 2));
#pragma unroll
      for (int j = 0; j < kQNt; j += 2) {
        u32 b[4];
        ldmatrix_x4_trans(b, s.k + (u32)(((kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * kRowStride + dq_col0 +
                                          (j + lane / 16) * 8) * 2));
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
          mma_16816(acc[mi][j], a[mi], b[0], b[1]);
          mma_16816(acc[mi][j + 1], a[mi], b[2], b[3]);
        }
      }
    }
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int j = 0; j < kQNt; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          put_dq_pair(p, s, dq_row0 + mi * 16 + lane / 4 + h * 8, dq_col0 + j * 8 + 2 * (lane % 4), acc[mi][j][2 * h],
                      acc[mi][j][2 * h + 1]);
    finish_dq_step(p, s);
  }

  __device__ void store(const FtParams& p, const StepArgs& s) const {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int kv_key0 = (warp % kKvWarpsN) * 32, col0 = (warp / kKvWarpsN) * kKvNt * 8;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int dt = 0; dt < kKvNt; ++dt)
          store_dk_dv_pair(p, s, kv_key0 + mi * 16 + lane / 4 + r * 8, col0 + dt * 8 + 2 * (lane % 4),
                           acc_dk[mi][dt][2 * r], acc_dk[mi][dt][2 * r + 1], acc_dv[mi][dt][2 * r],
                           acc_dv[mi][dt][2 * r + 1]);
  }
};

}  // namespace ft
