#include "gpu/cuda_status.h"

#include <fmt/format.h>

#if defined(REMAT_HAVE_CUDNN)
#include <cudnn.h>
#endif

namespace remat::gpu {

using core::makeError;
using core::Status;
using core::StatusCode;

Status cudaStatus(cudaError_t err, const std::string &context)
{
    if (err == cudaSuccess)
        return Status::ok();
    cudaGetLastError(); // reset the non-sticky error so later calls start clean
    const StatusCode code =
        err == cudaErrorMemoryAllocation ? StatusCode::ResourceExhausted : StatusCode::DeviceError;
    return makeError(
        code, fmt::format("{}: {}: {}", context, cudaGetErrorName(err), cudaGetErrorString(err)));
}

Status cublasStatus(cublasStatus_t err, const std::string &context)
{
    if (err == CUBLAS_STATUS_SUCCESS)
        return Status::ok();
    const StatusCode code =
        err == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::ResourceExhausted : StatusCode::DeviceError;
    return makeError(code, fmt::format("{}: cuBLAS {} ({})", context, cublasGetStatusName(err),
                                       cublasGetStatusString(err)));
}

#if defined(REMAT_HAVE_CUDNN)
Status cudnnStatusOf(int code, const std::string &context)
{
    const auto err = static_cast<cudnnStatus_t>(code);
    if (err == CUDNN_STATUS_SUCCESS)
        return Status::ok();
    const StatusCode sc = err == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                                  err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                              ? StatusCode::ResourceExhausted
                          : err == CUDNN_STATUS_NOT_SUPPORTED ? StatusCode::Unsupported
                                                              : StatusCode::DeviceError;
    return makeError(sc, fmt::format("{}: cuDNN {}", context, cudnnGetErrorString(err)));
}
#endif

} // namespace remat::gpu
