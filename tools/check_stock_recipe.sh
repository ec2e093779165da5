#!/usr/bin/env bash
# Resolve the stock recipe's pip sets (README "On a stock ROS 2 Jazzy install") for CPython 3.12, the
# interpreter of Ubuntu 24.04, without installing anything, and check the numpy major version pip
# picks: 1 for the main set (apt's OpenCV needs numpy < 2); the dex extra is reported as resolved.
# Needs the package registry (PyPI, download.pytorch.org), so it is NOT part of `make test`.
#   bash tools/check_stock_recipe.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PIP="${PIP:-$ROOT/.venv/bin/python -m pip}"
resolve() {  # name, expected numpy major ("" = report only), pip args...
  local name="$1" want="$2"; shift 2
  local tgt report
  tgt="$(mktemp -d)"; report="$tgt/report.json"
  $PIP install --dry-run --quiet --disable-pip-version-check --ignore-installed \
      --python-version 3.12 --only-binary=:all: --target "$tgt/x" --report "$report" "$@"
  python3 - "$name" "$want" "$report" <<'PY'
import json, sys
name, want, path = sys.argv[1:]
picked = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.load(open(path))["install"]}
print(f"[{name}] resolved {len(picked)} packages for CPython 3.12:")
for k in ("numpy", "mediapipe", "mujoco", "rosbags", "yourdfpy", "opencv-contrib-python", "dex-retargeting", "torch", "nlopt", "pin"):
    if k in picked:
        print(f"  {k}=={picked[k]}")
major = picked.get("numpy", "").split(".")[0]
if want and major != want:
    sys.exit(f"[{name}] FAIL: numpy {picked.get('numpy')} picked, expected major {want}")
print(f"[{name}] OK: numpy major {major or '(not pulled)'}" + (f" (expected {want})" if want else ""))
PY
  rm -rf "$tgt"
}
resolve main 1 -r "$ROOT/tools/stock-requirements.txt"
resolve dex-extra "" -r "$ROOT/tools/stock-requirements-dex.txt" --extra-index-url https://download.pytorch.org/whl/cpu
