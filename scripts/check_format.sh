#!/usr/bin/env bash
# Fails when a tracked C++/CUDA source differs from .clang-format (clang-format 14, Debian 12's).
# CI runs it before the build (scripts/test.sh); to fix what it lists:
#   git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format-14 -i
# Another clang-format major version lays some constructs out differently, so 14 is preferred.
set -euo pipefail
cd "$(dirname "$0")/.."
CF=""
for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null; then CF=$c; break; fi
done
if [ -z "$CF" ]; then
    echo "check_format: clang-format not found; run scripts/setup.sh (it installs clang-format)" >&2
    exit 1
fi
files=()
while IFS= read -r f; do files+=("$f"); done < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${#files[@]}" -eq 0 ]; then
    echo "check_format: not a git checkout; nothing checked" >&2
    exit 0
fi
# One clang-format per batch of files; the files it complains about are read from its messages.
mapfile -t bad < <(printf '%s\0' "${files[@]}" |
    xargs -0 -n 64 "$CF" --dry-run -Werror 2>&1 >/dev/null |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u)
if [ "${#bad[@]}" -gt 0 ]; then
    echo "check_format: ${#bad[@]} file(s) differ from .clang-format ($CF):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "fix: $CF -i ${bad[*]:0:3}$([ "${#bad[@]}" -gt 3 ] && echo ' ...')" >&2
    exit 1
fi
echo "check_format: ${#files[@]} sources match .clang-format ($CF)"
