# Source this file (bash) to enter the embedded environment that tools/bootstrap.sh built:
#   . tools/env.sh
# It activates .venv, sources the colcon workspace, and sets the variables every run needs.
_ht_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
. "$_ht_root/.venv/bin/activate"
# colcon's setup scripts read unset variables: tolerate callers running with `set -u`.
case $- in *u*) _ht_nounset=1; set +u ;; *) _ht_nounset= ;; esac
# shellcheck disable=SC1091
. "$_ht_root/install/setup.bash"
[ -n "$_ht_nounset" ] && set -u
# install/setup.bash does not know the venv is an ament prefix: add it (the wheels' share/ lives there).
export AMENT_PREFIX_PATH="$AMENT_PREFIX_PATH:$VIRTUAL_ENV"
export CMAKE_PREFIX_PATH="${CMAKE_PREFIX_PATH:+$CMAKE_PREFIX_PATH:}$VIRTUAL_ENV"
# No DDS traffic may leave this machine; data goes over shared memory.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# Faster discovery between freshly started processes (see the profile's comments).
export FASTRTPS_DEFAULT_PROFILES_FILE="$_ht_root/tools/fastdds_localhost.xml"
# MuJoCo renders offscreen through EGL (software llvmpipe when there is no GPU).
export MUJOCO_GL="${MUJOCO_GL:-egl}"
export PYOPENGL_PLATFORM="${PYOPENGL_PLATFORM:-egl}"
export HAND_TELEOP_ROOT="$_ht_root"
# Our executables (what `ros2 run <pkg> <exe>` would start), e.g. check_joint_states, render_hand.
for _ht_bin in "$_ht_root"/install/*/lib/*/; do
  case ":$PATH:" in *":${_ht_bin%/}:"*) ;; *) PATH="$PATH:${_ht_bin%/}" ;; esac
done
export PATH
unset _ht_bin
unset _ht_root _ht_nounset
