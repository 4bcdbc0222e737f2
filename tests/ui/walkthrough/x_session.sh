# Sourced by the walkthrough scripts: checks the tools and the build, then starts a fresh X session
# (Xvfb + openbox) with a fresh settings folder, torn down on exit. Needs WALK_NAME (for messages),
# STUDIO, OUT and DISP set by the caller (WALK_SCREEN: the screen's size, default 1600x1000);
# leaves XVFB, WM and the cleanup trap (which also stops $APP when the caller sets it).
for tool in Xvfb openbox xdotool import; do
    command -v "$tool" >/dev/null || { echo "$WALK_NAME: $tool not found (apt-get install xvfb openbox xdotool imagemagick)" >&2; exit 2; }
done
[ -x "$STUDIO" ] || { echo "$WALK_NAME: $STUDIO not built" >&2; exit 2; }
mkdir -p "$OUT"
export DISPLAY=$DISP
# A fresh settings folder: no remembered window layout, recent files or input shapes.
export XDG_CONFIG_HOME=$(mktemp -d /tmp/remat-walk-config.XXXXXX)
Xvfb "$DISP" -screen 0 "${WALK_SCREEN:-1600x1000}x24" >/dev/null 2>&1 &
XVFB=$!
sleep 1
openbox >/dev/null 2>&1 &
WM=$!
cleanup() { kill "${APP:-}" "$WM" "$XVFB" 2>/dev/null; rm -rf "$XDG_CONFIG_HOME"; }
trap cleanup EXIT
