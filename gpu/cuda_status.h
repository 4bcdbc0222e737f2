#pragma once
// CUDA, cuBLAS and cuDNN results as Status: the gpu/ boundary never lets an error code escape.
//   REMAT_RETURN_IF_ERROR(gpu::cudaStatus(cudaMalloc(&p, n), "allocate 4 MiB"));
//   REMAT_RETURN_IF_ERROR(gpu::cublasStatus(cublasSgemm(...), "MatMul '/attn/MatMul'"));
// Out-of-memory results map to ResourceExhausted, everything else to DeviceError.

#include "core/util/status.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace remat::gpu {

/// Ok for cudaSuccess; otherwise "<context>: <cuda error name>: <text>". Clears the (non-sticky)
/// last-error state so the device stays usable after a recoverable failure.
core::Status cudaStatus(cudaError_t err, const std::string &context);
core::Status cublasStatus(cublasStatus_t err, const std::string &context);
#if defined(REMAT_HAVE_CUDNN)
core::Status cudnnStatusOf(int cudnnStatusCode, const std::string &context);
#endif

} // namespace remat::gpu
