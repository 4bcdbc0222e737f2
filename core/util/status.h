#pragma once
// Errors that cross a module boundary.
//   Status s = loadThing(path);            // [[nodiscard]]
//   REMAT_RETURN_IF_ERROR(s);
//   Expected<Graph> g = importOnnx(path);  if (!g) return g.status();  use(*g);

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace remat::core {

/// What kind of failure a Status carries; the message says the specifics.
enum class StatusCode : unsigned char {
    Ok,
    InvalidArgument,   ///< the caller asked for something impossible or malformed
    NotFound,          ///< a file, value, op or key does not exist
    ParseError,        ///< a file is not what it claims to be (truncated, not protobuf, bad JSON)
    Unsupported,       ///< valid input we do not handle (unknown op, dtype, format version)
    OutOfRange,        ///< overflowing dims, budgets, indices
    Infeasible,        ///< no plan satisfies the constraints
    ResourceExhausted, ///< out of memory (device or host)
    Cancelled,         ///< the stop token fired
    DeadlineExceeded,  ///< a time limit was hit
    Internal,          ///< a bug: an invariant did not hold
    DeviceError,       ///< a CUDA / backend failure
};

const char *statusCodeName(StatusCode code);

class [[nodiscard]] Status
{
public:
    Status() = default;
    Status(StatusCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

    static Status ok() { return {}; }

    bool isOk() const { return m_code == StatusCode::Ok; }
    explicit operator bool() const { return isOk(); }
    StatusCode code() const { return m_code; }
    const std::string &message() const { return m_message; }
    /// "ParseError: model.onnx: ..." for logs and dialogs.
    std::string toString() const;

    /// Returns a copy whose message is prefixed with `context: `.
    Status withContext(const std::string &context) const;

private:
    StatusCode m_code = StatusCode::Ok;
    std::string m_message;
};

inline Status makeError(StatusCode code, std::string message)
{
    return Status(code, std::move(message));
}

/// A value or the Status that explains why there is none (std::expected arrives in C++23).
template <typename T> class [[nodiscard]] Expected
{
public:
    Expected(T value) : m_data(std::move(value)) {}
    Expected(Status status) : m_data(std::move(status))
    {
        assert(!std::get<Status>(m_data).isOk() && "Expected<T> built from an ok Status");
    }

    bool hasValue() const { return std::holds_alternative<T>(m_data); }
    explicit operator bool() const { return hasValue(); }

    T &value() & { return std::get<T>(m_data); }
    const T &value() const & { return std::get<T>(m_data); }
    T &&value() && { return std::get<T>(std::move(m_data)); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }
    T &&operator*() && { return std::move(*this).value(); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }

    /// The error; Status::ok() when a value is held.
    Status status() const { return hasValue() ? Status() : std::get<Status>(m_data); }

private:
    std::variant<T, Status> m_data;
};

} // namespace remat::core

#define REMAT_CONCAT_INNER(a, b) a##b
#define REMAT_CONCAT(a, b) REMAT_CONCAT_INNER(a, b)

/// Returns the Status from the enclosing function if `expr` is an error.
#define REMAT_RETURN_IF_ERROR(expr)                                                                \
    do {                                                                                           \
        ::remat::core::Status remat_status_ = (expr);                                              \
        if (!remat_status_.isOk())                                                                 \
            return remat_status_;                                                                  \
    } while (0)

/// `REMAT_ASSIGN_OR_RETURN(auto g, importOnnx(path));` declares g or returns the error.
#define REMAT_ASSIGN_OR_RETURN(lhs, expr)                                                          \
    auto REMAT_CONCAT(remat_expected_, __LINE__) = (expr);                                         \
    if (!REMAT_CONCAT(remat_expected_, __LINE__))                                                  \
        return REMAT_CONCAT(remat_expected_, __LINE__).status();                                   \
    lhs = std::move(*REMAT_CONCAT(remat_expected_, __LINE__))
