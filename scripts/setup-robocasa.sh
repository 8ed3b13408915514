#!/bin/bash
# RoboCasa in its own environment, for the robocasa world (docs/guides/robocasa.md).
#   scripts/setup-robocasa.sh [ENV]     (default .venv-robocasa; `make robocasa` runs it)
# RoboCasa365 wants robosuite 1.5.2 (which pins numpy below 2), mujoco below 3.10; IndGen's
# environment holds LIBERO's robosuite, a newer mujoco and numpy 2. The world runs RoboCasa in a
# worker process of this environment (src/indgen_sim/robocasa/worker).
set -euo pipefail
cd "$(dirname "$0")/.."
ENV=${1:-.venv-robocasa}
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x "$ENV/bin/python" ] || "$PYTHON" -m venv "$ENV"
"$ENV/bin/python" -m pip --disable-pip-version-check -q install -r requirements/robocasa.txt
"$ENV/bin/python" - <<'PY' 2>/dev/null || { echo "setup-robocasa: robocasa does not import in $ENV" >&2; exit 1; }
import robocasa, robosuite
assert robosuite.__version__ == "1.5.2", robosuite.__version__
PY
echo "robocasa: $ENV (rlinf-robocasa365 1.0.1, robosuite 1.5.2)"
