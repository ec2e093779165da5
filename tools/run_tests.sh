#!/usr/bin/env bash
# The test command behind `make test`: lint, then every package's tests, on a private ROS domain.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck disable=SC1091
. tools/env.sh
# A private DDS domain per run, in 1-101 (the range the ROS 2 docs call safe on Linux: higher ids
# can collide with ephemeral ports; 0 is everyone's default).
# One nobody on this machine uses (a demo in another terminal, another checkout's tests): see
# hand_common/free_domain.py.
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(python -m hand_common.free_domain)}"
echo "[test] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=$ROS_AUTOMATIC_DISCOVERY_RANGE"
echo "[test] ruff"
ruff check src tools conftest.py
echo "[test] pytest"
set +e
python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "[test] error: no tests were collected"; exit 1; fi
exit "$rc"
