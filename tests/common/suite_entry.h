#pragma once
// The last header of the precompiled header of a module's shared test executable (<module>_tests,
// tests/CMakeLists.txt); no suite includes it itself. A suite ends in QTEST_MAIN(X) (or
// QTEST_GUILESS_MAIN / QTEST_APPLESS_MAIN), which defines `int main(int argc, char *argv[])`. Here
// that definition becomes the suite's own entry, static to its file and registered under the
// file's name (tst_<unit>, from __BASE_FILE__), and the executable's main
// (common/suites_main.cpp.in) runs the suite its first argument names. The suite's body is
// untouched: the same application object, attributes and QTest::qExec as in its own executable.

namespace remat::tests {
/// Records the entry of the suite compiled from `file` (a path; its base name is the suite's name).
bool registerSuite(const char *file, int (*entry)(int, char **));
} // namespace remat::tests

// `int main(int argc, char *argv[]) {...}` reads, after this (a function-like macro: only `main(`
// changes, never a variable or parameter named main):
//   int static remat_suite_entry(int, char **);
//   static const bool remat_suite_registered = registerSuite(__BASE_FILE__, &remat_suite_entry);
//   int remat_suite_entry(int argc, char *argv[]) {...}
#define main(...)                                                                                  \
    static remat_suite_entry(int, char **);                                                        \
    [[maybe_unused]] static const bool remat_suite_registered =                                    \
        ::remat::tests::registerSuite(__BASE_FILE__, &remat_suite_entry);                          \
    int remat_suite_entry(__VA_ARGS__)
