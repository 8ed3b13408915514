#!/usr/bin/env bash
# Install the Debian packages IndGen needs, only those that are missing.
#   cmake + a C/C++ compiler: building indgen_msgs with rosidl
#   libEGL / libOSMesa / libGL: headless MuJoCo rendering
# and with --for-tests:
#   tmux: the operator console's terminal test
#   chromium: the browser tests of the documentation site (headless)
# Runs apt-get as root, through `sudo -n` otherwise; says what to run when it cannot.
set -euo pipefail

missing=()
if [ "${1:-}" = "--for-tests" ]; then
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fi
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
have_lib() { ldconfig -p 2>/dev/null | grep -q "$1"; }
have_lib 'libEGL.so.1 ' || missing+=(libegl1)
have_lib 'libGL.so.1 ' || missing+=(libgl1)
have_lib 'libOSMesa.so' || missing+=(libosmesa6)
have_lib 'libEGL_mesa' || missing+=(libegl-mesa0)
have_lib 'libgomp.so.1' || missing+=(libgomp1)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "system packages missing: ${missing[*]}; installing them with apt-get" >&2
if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  echo "error: cannot install ${missing[*]} without root; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed: ${missing[*]}" >&2
