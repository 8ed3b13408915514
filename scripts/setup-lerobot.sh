#!/bin/bash
# lerobot in its own environment, for `indgen dataset export` (docs/guides/datasets.md).
#   scripts/setup-lerobot.sh [ENV]     (default .venv-lerobot; `make lerobot` runs it)
# lerobot's pins conflict with IndGen's and with each other: 0.3.3, the last release that writes
# the v2.1 format openpi's pinned lerobot reads, wants torch<2.8 and datasets<=3.6; 0.4.4 (v3.0)
# wants torch<2.11 and datasets>=4. On PyPI those torch releases are CUDA builds of several GB,
# while this kind of machine holds torch 2.14.1 with a torchvision that imports beside it. So:
#   ENV/bin/python       torch 2.14.1 and what both releases import (requirements/lerobot.txt)
#   ENV/format-v2.1/     lerobot 0.3.3 + datasets 3.6.0, put first on PYTHONPATH for v2.1
#   ENV/format-v3.0/     lerobot 0.4.4 + datasets 4.8.5, for v3.0
# lerobot goes in without its resolver (--no-deps); the round-trip test (test_dataset_export.py)
# writes and reads both formats with it, which is what shows this combination works.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV=${1:-.venv-lerobot}
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x "$ENV/bin/python" ] || "$PYTHON" -m venv "$ENV"
PIP=("$ENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install -r requirements/lerobot.txt
install_format() {  # format, then its packages
  local dir="$ENV/format-$1"; shift
  rm -rf "$dir.new"
  "${PIP[@]}" install --no-deps --target "$dir.new" "$@"
  rm -rf "$dir" && mv "$dir.new" "$dir"
}
install_format v2.1 lerobot==0.3.3 datasets==3.6.0
install_format v3.0 lerobot==0.4.4 datasets==4.8.5
for format in v2.1 v3.0; do
  PYTHONPATH="$ENV/format-$format" HF_HUB_OFFLINE=1 "$ENV/bin/python" -c \
    "from lerobot.datasets.lerobot_dataset import CODEBASE_VERSION as v; assert v == '$format', v" 2>/dev/null \
    || { echo "setup-lerobot: lerobot for $format does not import in $ENV" >&2; exit 1; }
done
echo "lerobot: $ENV (formats v2.1, v3.0)"
