#!/usr/bin/env bash
# Before/after proof for a change that must not move any figure: runs `remat train-graph --json`,
# `remat solve --compare --time-limit 5 --json`, `remat simulate --json --csv` (store-all: the
# summary and the per-step timeline CSV) and `remat run --check --json` on the corpus models with
# two binaries and diffs what they print, minus what is a wall-clock measurement.
#   scripts/compare_figures.sh BASE_BINARY NEW_BINARY [OUT_DIR]
#   e.g. scripts/compare_figures.sh /work/main/build/app/remat build/app/remat /tmp/figures
# Models: ../shared/corpus/with_weights/* (the file's batch), ../shared/corpus/graph_only/* at
# batch 1, ../shared/onnx-light/* (batch 1). REMAT_COMPARE_SKIP_RUN=1 skips `run --check`
# (minutes on the CPU for the graph-only models), REMAT_COMPARE_RUN=with_weights runs it on the
# with_weights models only; REMAT_COMPARE_MODELS="a.onnx b.onnx" narrows the list; outputs
# already in OUT_DIR/base or OUT_DIR/new are reused (delete new/ after a rebuild), and
# REMAT_COMPARE_BASE_ONLY=1 only writes OUT_DIR/base (start the base while NEW still builds).
#
# Left out of the comparison, and why:
#  - wall-clock fields (solve_seconds, step_seconds, median_step_seconds, "... ms" in solver notes): measurements;
#  - the rows of the Checkmate MILP / LP solvers (checkmate-*) when the base or new row did not
#    prove optimality: CBC under a 5 s limit stops wherever the clock stops it, so its incumbent
#    can differ between two runs of the same binary. They are listed apart, not hidden; and in
#    such a comparison the other rows' "dominated by X (...)" clauses, which can name that row.
# Exit status: 0 when every compared figure agrees, 1 otherwise.
set -uo pipefail
BASE=${1:?usage: compare_figures.sh BASE_BINARY NEW_BINARY [OUT_DIR]}
NEW=${2:?usage: compare_figures.sh BASE_BINARY NEW_BINARY [OUT_DIR]}
OUT=${3:-$(mktemp -d /tmp/remat-figures.XXXXXX)}
HERE=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${REMAT_SHARED_DIR:-$HERE/../shared}
mkdir -p "$OUT/base" "$OUT/new"

models=()
if [ -n "${REMAT_COMPARE_MODELS:-}" ]; then
    read -r -a models <<<"$REMAT_COMPARE_MODELS"
else
    models+=("$SHARED"/corpus/with_weights/*.onnx "$SHARED"/corpus/graph_only/*.onnx "$SHARED"/onnx-light/*.onnx)
fi

# Strips measurements so that two runs of one binary print the same text.
normalize() {
    python3 -c '
import json, re, sys
TIMING = {"solve_seconds", "step_seconds", "wall_seconds", "elapsed_seconds", "median_step_seconds"}
def clean(v, key=""):
    if isinstance(v, dict):
        return {k: clean(x, k) for k, x in v.items() if k not in TIMING}
    if isinstance(v, list):
        return [clean(x) for x in v]
    if isinstance(v, str) and key == "note":
        # wall-clock in notes: "12 ms", and "0.01 s" (two decimals; figures print as %g)
        return re.sub(r"\b\d+(\.\d+)? ms\b|\b\d+\.\d\d s\b", "<t>", v)
    return v
text = sys.stdin.read()
try:
    doc = json.loads(text)
except ValueError:
    print(text.strip())          # an error message: compared as text
    sys.exit(0)
if isinstance(doc, list):        # solve --compare: one row per solver
    unproven = False
    for row in doc:
        if str(row.get("solver", "")).startswith("checkmate") and row.get("status") != "optimal":
            row["_unproven"] = True
            unproven = True
    # Which plan a row is "dominated by" depends on every other row, an unproven (clock-bound)
    # Checkmate row included: the clause is set apart then (and listed apart when it differs).
    if unproven:
        for row in doc:
            note = row.get("note")
            if isinstance(note, str):
                m = re.match(r"dominated by [^(]*\([^)]*\)(; )?", note)
                if m:
                    row["_dominance"] = m.group(0)
                    row["note"] = note[m.end():]
print(json.dumps(clean(doc), indent=1, sort_keys=True))
'
}

runAll() { # binary, folder
    local bin=$1 dir=$2 model name args
    for model in "${models[@]}"; do
        name=$(basename "$(dirname "$model")")_$(basename "$model" .onnx)
        args=()
        case "$model" in */graph_only/* | */onnx-light/*) args=(--batch 1) ;; esac
        # raw output kept in .raw (normalize again after changing the filter), compared as .json
        [ -s "$dir/$name.train.raw" ] || "$bin" train-graph --json "${args[@]}" "$model" >"$dir/$name.train.raw" 2>&1
        [ -s "$dir/$name.solve.raw" ] || "$bin" solve --compare --time-limit 5 --json "${args[@]}" "$model" >"$dir/$name.solve.raw" 2>&1
        [ -s "$dir/$name.simulate.raw" ] ||
            "$bin" simulate --json "${args[@]}" --csv "$dir/$name.timeline.csv" "$model" >"$dir/$name.simulate.raw" 2>&1
        if [ -z "${REMAT_COMPARE_SKIP_RUN:-}" ] &&
            { [ "${REMAT_COMPARE_RUN:-all}" != with_weights ] || [[ "$model" == */with_weights/* ]]; }; then
            [ -s "$dir/$name.run.raw" ] || "$bin" run --check --json "${args[@]}" "$model" >"$dir/$name.run.raw" 2>&1
        fi
        for kind in train solve simulate run; do
            [ -s "$dir/$name.$kind.raw" ] && normalize <"$dir/$name.$kind.raw" >"$dir/$name.$kind.json"
        done
        # the timeline CSV as text (every field is simulated, none measured)
        [ -s "$dir/$name.timeline.csv" ] && cp "$dir/$name.timeline.csv" "$dir/$name.timeline.json"
        echo "  $name" >&2
    done
}

echo "base: $BASE" >&2
runAll "$BASE" "$OUT/base"
[ -n "${REMAT_COMPARE_BASE_ONLY:-}" ] && exit 0
echo "new:  $NEW" >&2
runAll "$NEW" "$OUT/new"

python3 - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
files = sorted(f for f in os.listdir(os.path.join(out, "base")) if f.endswith(".json"))
same = differ = 0
unproven = []
dominance = []
def load(path):
    text = open(path).read()
    try:
        return json.loads(text)
    except ValueError:
        return text
def figures(doc):
    """(label, value) of every number and string in a document, for counting and diffing."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k == "_dominance":
                continue         # compared apart (see the header)
            for label, x in figures(v):
                yield (k + ("." + label if label else ""), x)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            tag = v.get("solver", str(i)) if isinstance(v, dict) else str(i)
            for label, x in figures(v):
                yield (tag + ("." + label if label else ""), x)
    else:
        yield ("", doc)
rows = []
for f in files:
    a = load(os.path.join(out, "base", f))
    b = load(os.path.join(out, "new", f)) if os.path.exists(os.path.join(out, "new", f)) else None
    if isinstance(a, list) and isinstance(b, list):  # set aside Checkmate rows not proven optimal
        keepA, keepB = [], []
        for ra, rb in zip(a, b):
            if ra.get("_dominance") != rb.get("_dominance"):
                dominance.append(f"{f}: {ra.get('solver')}: base '{ra.get('_dominance', '')}' new '{rb.get('_dominance', '')}'")
            if ra.get("_unproven") or rb.get("_unproven"):
                if ra != rb:
                    unproven.append(f"{f}: {ra.get('solver')} base peak {ra.get('peak_bytes')} new {rb.get('peak_bytes')}")
                continue
            keepA.append(ra); keepB.append(rb)
        a, b = keepA, keepB
    fa, fb = list(figures(a)), list(figures(b)) if b is not None else []
    n = len(fa)
    if fa == fb:
        same += n
        rows.append((f, n, 0))
    else:
        d = sum(1 for x, y in zip(fa, fb) if x != y) + abs(len(fa) - len(fb))
        differ += d
        rows.append((f, n, d))
        for x, y in zip(fa, fb):
            if x != y:
                print(f"DIFF {f}: {x[0]}: base {x[1]!r} new {y[1]!r}")
print(f"{'file':48s} {'figures':>8s} {'differ':>7s}")
for f, n, d in rows:
    print(f"{f:48s} {n:8d} {d:7d}")
print(f"total: {same + differ} figures compared, {differ} differ, in {len(files)} outputs")
if unproven:
    print("Checkmate rows not proven optimal that differ (time-limited CBC, not compared):")
    for u in unproven:
        print("  " + u)
if dominance:
    print("Dominance clauses judged against a time-limited Checkmate plan that differ (not compared):")
    for d in dominance:
        print("  " + d)
sys.exit(1 if differ else 0)
EOF
