#pragma once
// One entry point per reader, shared by the libFuzzer harnesses (fuzz_<target>.cpp, built by the
// `fuzz` preset) and the replay test (tst_replay.cpp, built in every build): each feeds `data` to
// the reader exactly as a user's file would reach it, then runs what a user would run next
// (simulate, a cheap solver), and returns the reader's Status. An exception or a sanitizer report
// is the bug; an error Status is the expected answer to a malformed input.
//   core::Status s = fuzz::findTarget("plan_file")->run(bytes.data(), bytes.size());
// The boundary rule they check is written in docs/readers.md.

#include "core/util/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace remat::fuzz {

struct Target
{
    const char *name; ///< harness and corpus folder name: tests/data/fuzz/<name>/
    core::Status (*run)(const uint8_t *data, size_t size);
};

/// Every target, in a fixed order (the list scripts/fuzz.sh and the replay test walk).
const std::vector<Target> &targets();
const Target *findTarget(const std::string &name);

core::Status runOnnx(const uint8_t *data, size_t size);
core::Status runPlanFile(const uint8_t *data, size_t size);
core::Status runSessionFile(const uint8_t *data, size_t size);
core::Status runNodeLink(const uint8_t *data, size_t size);
core::Status runNpz(const uint8_t *data, size_t size);
core::Status runProfile(const uint8_t *data, size_t size);
core::Status runCliArgs(const uint8_t *data, size_t size);

/// Stops the process with a message when `s` is an error whose message does not name `origin`
/// (the rule: a reader's error names the file). Aborting makes libFuzzer keep the input.
void requireNamesOrigin(const core::Status &s, const std::string &origin, const char *reader);
/// Stops the process with `what` (an invariant of the pipeline did not hold).
[[noreturn]] void fail(const std::string &what);

} // namespace remat::fuzz
