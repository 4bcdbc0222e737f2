#pragma once
// The fused attention kernels (ScaledDotProductAttention, core/ops/attention.h) on the tile steps
// of attention_tile.h: a flash-style forward writing O and the float32 log-sum-exp, and a
// backward that recomputes P per tile from Q, K and the log-sum-exp.
//   attentionForward(stream, problem, AttnStorage::Float, q, k, v, bias, mask, o, lse);
//   attentionRowDelta(stream, problem, storage, o, dO, delta);         // D = rowsum(dO * O)
//   attentionBackward(stream, problem, storage, ..., delta, dq, dk, dv, dbias);
// Q, K, V, O, dO in the storage type (float, half or bfloat16; float math), the bias float or the
// storage type, the mask bool; the gradients are float accumulators in their operands' layouts,
// zeroed by the caller (attentionStore rounds a half one into its tensor).

#include "gpu/kernels/attention_tile.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remat::gpu::kernels {

enum class AttnStorage { Float, Half, BFloat16 };

/// Bytes of dynamic shared memory a forward / backward block needs for head sizes d and dv.
int64_t attentionSharedBytes(int64_t d, int64_t dv, bool backward);

/// `problem`'s offset pointers must be device memory. `biasIsStorage`: the bias has the storage
/// type (else float32).
cudaError_t attentionForward(cudaStream_t s, const attn::Problem &problem, AttnStorage storage,
                             const void *q, const void *k, const void *v, const void *bias,
                             bool biasIsStorage, const bool *mask, void *o, float *lse);
cudaError_t attentionRowDelta(cudaStream_t s, const attn::Problem &problem, AttnStorage storage,
                              const void *o, const void *dO, float *delta);
cudaError_t attentionBackward(cudaStream_t s, const attn::Problem &problem, AttnStorage storage,
                              const void *q, const void *k, const void *v, const void *bias,
                              bool biasIsStorage, const bool *mask, const void *dO,
                              const float *lse, const float *delta, float *dq, float *dk, float *dv,
                              float *dbias);
/// dst[i] = src[i] rounded to the storage type (n elements).
cudaError_t attentionStore(cudaStream_t s, AttnStorage storage, const float *src, void *dst,
                           int64_t n);

} // namespace remat::gpu::kernels
