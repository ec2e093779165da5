#!/usr/bin/env bash
# Resolve the stock recipe's pip sets (README "On a stock ROS 2 Jazzy install") for CPython 3.12, the
# interpreter of Ubuntu 24.04, without installing anything, and check the numpy major version pip
# picks: 1 for the main set (apt's OpenCV needs numpy < 2). The dex venv's set must carry what the
# dexterous nodes import (dex-retargeting, torch, mujoco, trimesh), torch must be the pinned CPU
# build (+cpu) and no CUDA/nvidia package may come with it (nvidia-*, *cuda*, triton): exit 1 if not.
# Needs the package registry (PyPI, download.pytorch.org), so it is NOT part of `make test`.
#   bash tools/check_stock_recipe.sh
#   PYVER=3.11 TORCH_INDEX= bash tools/check_stock_recipe.sh   # offline, against a local wheel mirror
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PIP="${PIP:-$ROOT/.venv/bin/python -m pip}"
PYVER="${PYVER:-3.12}"                                           # Ubuntu 24.04's CPython
TORCH_INDEX="${TORCH_INDEX-https://download.pytorch.org/whl/cpu}" # empty: pip's configured indexes only
resolve() {  # name, expected numpy major ("" = report only), required packages ("" = none), pip args...
  local name="$1" want="$2" need="$3"; shift 3
  local tgt report
  tgt="$(mktemp -d)"; report="$tgt/report.json"
  $PIP install --dry-run --quiet --disable-pip-version-check --ignore-installed \
      --python-version "$PYVER" --only-binary=:all: --target "$tgt/x" --report "$report" "$@"
  python3 - "$name" "$want" "$report" "$need" <<'PY'
import json, re, sys
name, want, path, need = sys.argv[1:]
picked = {re.sub(r"[-_.]+", "-", i["metadata"]["name"].lower()): i["metadata"]["version"]
          for i in json.load(open(path))["install"]}
print(f"[{name}] resolved {len(picked)} packages:")
for k in ("numpy", "mediapipe", "mujoco", "rosbags", "yourdfpy", "opencv-contrib-python", "dex-retargeting", "torch", "nlopt", "pin", "trimesh"):
    if k in picked:
        print(f"  {k}=={picked[k]}")
major = picked.get("numpy", "").split(".")[0]
if want and major != want:
    sys.exit(f"[{name}] FAIL: numpy {picked.get('numpy')} picked, expected major {want}")
for k in need.split():
    if k not in picked:
        sys.exit(f"[{name}] FAIL: {k} is not in the resolved set")
if need:
    gpu = sorted(k for k in picked if k.startswith("nvidia-") or "cuda" in k or k == "triton")
    if gpu:
        sys.exit(f"[{name}] FAIL: CUDA/nvidia packages in the resolved set: {', '.join(gpu)}")
    if "torch" in picked and not picked["torch"].endswith("+cpu"):
        sys.exit(f"[{name}] FAIL: torch {picked['torch']} is not the CPU build (+cpu)")
    print(f"[{name}] OK: {', '.join(need.split())} resolved; no CUDA/nvidia package; torch {picked.get('torch', '-')}")
print(f"[{name}] OK: numpy major {major or '(not pulled)'}" + (f" (expected {want})" if want else ""))
PY
  rm -rf "$tgt"
}
[ -n "${DEX_ONLY:-}" ] || resolve main 1 "" -r "$ROOT/tools/stock-requirements.txt"
resolve dex-extra "" "dex-retargeting torch six mujoco trimesh" -r "$ROOT/tools/stock-requirements-dex.txt" \
  ${TORCH_INDEX:+--extra-index-url "$TORCH_INDEX"}
