#!/usr/bin/env bash
# tests/bench/build_time.sh [BUILD_DIR] [cmake -D...]: a cold build (no ccache) of what run.sh builds,
# then of everything test.sh builds, with the CPU time (user + sys) of every compile and link
# recorded; prints the CPU seconds per phase and the 30 dearest steps (tests/bench/build_time.md).
# CPU time, unlike wall time, does not depend on what else the machine runs; the wall time on two
# idle cores is about CPU / 2 plus the serial tail. Default BUILD_DIR: build-time.
#   nice -n 10 bash tests/bench/build_time.sh build-time
# Internal: `build_time.sh --step LOG CMD...` is the launcher that times one step.
set -uo pipefail
if [ "${1:-}" = "--step" ]; then
    log="$2"
    shift 2
    out=""
    prev=""
    for a in "$@"; do
        if [ "$prev" = "-o" ]; then out="$a"; fi
        prev="$a"
    done
    tf="$(mktemp)"
    /usr/bin/time -f "%U %S %e" -o "$tf" "$@"
    rc=$?
    echo "$(tail -1 "$tf") $out" >>"$log"
    rm -f "$tf"
    exit $rc
fi
cd "$(dirname "$0")/../.."
B="${1:-build-time}"
shift || true
self="$PWD/tests/bench/build_time.sh"
steps="$PWD/$B.steps"
launcher="$PWD/$B.launcher"
rm -rf "$B" "$steps"
# CMake takes one program as the launcher: a two-line script that calls this one.
printf '#!/bin/sh\nexec "%s" --step "%s" "$@"\n' "$self" "$steps" >"$launcher"
chmod +x "$launcher"
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCCACHE_PROGRAM="$launcher" \
    -DCMAKE_CXX_LINKER_LAUNCHER="$launcher" "$@" >/dev/null || exit 1
TIMEFORMAT='%U %S %R'
{ time cmake --build "$B" --target remat remat-studio >/dev/null; } 2>"$B.run.time" || exit 1
wc -l <"$steps" >"$B.run.steps"
{ time cmake --build "$B" >/dev/null; } 2>"$B.all.time" || exit 1
python3 - "$steps" "$(cat "$B.run.steps")" "$B.run.time" "$B.all.time" <<'PY'
import collections, sys
steps, run_n, run_t, all_t = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def phase(out):
    if out.endswith('.gch'): return 'precompiled headers'
    if out.endswith('.cu.o'): return 'gpu: nvcc'
    if out.endswith('.o'):
        return {'core': 'core compile', 'ui': 'ui compile', 'app': 'app compile',
                'gpu': 'gpu: host compile', 'tests': 'tests compile'}.get(out.split('/')[0], 'other compile')
    return 'tests link' if out.startswith('tests/') else 'app/module link'
rows = [l.split() for l in open(steps) if len(l.split()) >= 4]
for title, part in (('run.sh targets', rows[:run_n]), ('the rest (tests)', rows[run_n:])):
    agg = collections.defaultdict(lambda: [0, 0.0])
    for u, s, w, out in part:
        agg[phase(out)][0] += 1
        agg[phase(out)][1] += float(u) + float(s)
    print(f'{title}: {len(part)} steps, {sum(a[1] for a in agg.values()):.0f} CPU-s in compiles and links')
    for k, (n, c) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f'  {k:24s} {n:4d} steps {c:8.1f} CPU-s')
for name, f in (('run.sh targets', run_t), ('the rest', all_t)):
    u, s, r = map(float, open(f).read().split()[-3:])
    print(f'{name}: {u + s:.0f} CPU-s in all (with moc, rcc, archives), {r:.0f} s wall')
print('dearest steps:')
for c, out in sorted(((float(u) + float(s), out) for u, s, w, out in rows), reverse=True)[:30]:
    print(f'  {c:7.2f}  {out}')
PY
