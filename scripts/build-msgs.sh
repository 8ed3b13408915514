#!/usr/bin/env bash
# Build the indgen_msgs interface package (rosidl) and install it into a Python
# virtual environment that holds the ROS 2 Jazzy PyPI wheels.
#   usage: scripts/build-msgs.sh VENV
# Installing into the venv itself means no environment variables are needed at run time.
# A ROS 2 install does not use this script: `colcon build` builds indgen_msgs there.
set -euo pipefail

venv=$(cd "${1:?usage: build-msgs.sh VENV}" && pwd)
src=$(cd "$(dirname "$0")/../src/indgen_msgs" && pwd)
build="$(dirname "$0")/../build/indgen_msgs"
mkdir -p "$build"
build=$(cd "$build" && pwd)

# rosidl finds the type supports through the ament index of the venv
export AMENT_PREFIX_PATH="$venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export PATH="$venv/bin:$PATH"

log="$build/build.log"
if ! {
  cmake -S "$src" -B "$build" \
    -DCMAKE_PREFIX_PATH="$venv" \
    -DCMAKE_INSTALL_PREFIX="$venv" \
    -DPython3_EXECUTABLE="$venv/bin/python3" \
    -DBUILD_TESTING=OFF &&
  cmake --build "$build" -j "$(nproc)" &&
  cmake --install "$build"
} >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "error: building indgen_msgs failed; the full log is $log" >&2
  exit 1
fi
"$venv/bin/python" -c "from indgen_msgs.msg import TaskSetup; from indgen_msgs.action import RunEpisode" \
  || { echo "error: indgen_msgs was built but does not import from $venv" >&2; exit 1; }
echo "indgen_msgs built and installed into $venv"
