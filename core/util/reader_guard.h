#pragma once
// The boundary rule for readers (docs/readers.md): a function that reads bytes someone else wrote
// (a file, a command-line argument) returns a Status for every input and never lets an exception
// out. Its public entry points run their body through guardReader, which turns whatever a
// third-party library throws (nlohmann's parse_error / out_of_range / type_error, protobuf, std's
// bad_alloc / length_error / invalid_argument) into a Status that names the input:
//   Expected<Plan> readPlan(const std::string &path, ...)
//   {
//       return guardReader(path, [&]() -> Expected<Plan> { ...may throw... });
//   }
// tests/io/tst_reader_boundary.cpp checks that every reader entry point goes through it, and
// tests/fuzz/ has a libFuzzer harness per reader.

#include "core/util/status.h"

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace remat::core {

/// Runs `read` and returns its result; an exception becomes an error Status whose message starts
/// with `origin` (the file name, or what the text is, e.g. "--budget"). `read` returns Status or
/// Expected<T>.
template <typename Read>
auto guardReader(const std::string &origin, Read &&read) noexcept -> std::invoke_result_t<Read>
{
    // Building the message may itself throw bad_alloc; then there is nothing left to report with.
    try {
        try {
            return read();
        } catch (const std::bad_alloc &) {
            return makeError(StatusCode::ResourceExhausted,
                             origin +
                                 ": out of memory while reading (the input asks for more memory "
                                 "than this machine has; it is probably corrupt)");
        } catch (const std::length_error &e) {
            return makeError(StatusCode::OutOfRange,
                             origin + ": a size in the input is too large (" + e.what() + ")");
        } catch (const std::exception &e) {
            // nlohmann's messages name the problem and the offset ("[json.exception.out_of_range.406]
            // number overflow parsing '1e400'"); std::stoll's say which function failed.
            return makeError(StatusCode::ParseError, origin + ": cannot be read: " + e.what());
        } catch (...) {
            return makeError(StatusCode::Internal,
                             origin + ": cannot be read: an unknown exception");
        }
    } catch (...) {
        return makeError(StatusCode::ResourceExhausted,
                         "out of memory while reporting a read error");
    }
}

} // namespace remat::core
