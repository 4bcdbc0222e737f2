// The libFuzzer entry point of one harness: REMAT_FUZZ_TARGET names its target (fuzz_targets.h).
// Built once per target by tests/fuzz/CMakeLists.txt; run by scripts/fuzz.sh.
#include "fuzz_targets.h"

#include <cstdlib>
#include <string>

namespace {

const remat::fuzz::Target &target()
{
    static const remat::fuzz::Target *t = remat::fuzz::findTarget(REMAT_FUZZ_TARGET);
    if (!t)
        remat::fuzz::fail(std::string("no fuzz target named ") + REMAT_FUZZ_TARGET);
    return *t;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)target().run(data, size);
    return 0;
}
