#include "status.h"

namespace remat::core {

const char *statusCodeName(StatusCode code)
{
    switch (code) {
    case StatusCode::Ok: return "Ok";
    case StatusCode::InvalidArgument: return "InvalidArgument";
    case StatusCode::NotFound: return "NotFound";
    case StatusCode::ParseError: return "ParseError";
    case StatusCode::Unsupported: return "Unsupported";
    case StatusCode::OutOfRange: return "OutOfRange";
    case StatusCode::Infeasible: return "Infeasible";
    case StatusCode::ResourceExhausted: return "ResourceExhausted";
    case StatusCode::Cancelled: return "Cancelled";
    case StatusCode::DeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::Internal: return "Internal";
    case StatusCode::DeviceError: return "DeviceError";
    }
    return "Unknown";
}

std::string Status::toString() const
{
    if (isOk())
        return "Ok";
    return std::string(statusCodeName(m_code)) + ": " + m_message;
}

Status Status::withContext(const std::string &context) const
{
    if (isOk())
        return *this;
    return Status(m_code, context + ": " + m_message);
}

} // namespace remat::core
