#!/usr/bin/env bash
# Makes sure the system packages the build and tests need are present: libcurl, OpenSSL and
# libxcrypt development files (pkg-config finds them), and the curl client the end-to-end tests drive.
# With --with-test-tools also the tools some end-to-end tests use: headless Chromium (the admin page
# is checked in a real browser) and Python's pacparser (the PAC file is evaluated by a PAC engine).
# Installs them with apt-get when running as root; otherwise prints the exact command and fails.
set -euo pipefail

missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --exists libcurl || missing+=(libcurl4-openssl-dev)
  pkg-config --exists openssl || missing+=(libssl-dev)
  pkg-config --exists libxcrypt || missing+=(libcrypt-dev)
else
  missing+=(libcurl4-openssl-dev libssl-dev libcrypt-dev)
fi
pip_missing=()
if [ "${1:-}" = "--with-test-tools" ]; then
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
  command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
  # Test-only Python packages: bcrypt makes the $2y$ hashes of the proxy-auth tests.
  command -v python3 >/dev/null 2>&1 && ! python3 -c 'import bcrypt' 2>/dev/null && pip_missing+=(bcrypt)
  # pacparser evaluates /proxy.pac like a browser would.
  command -v python3 >/dev/null 2>&1 && ! python3 -c 'import pacparser' 2>/dev/null && pip_missing+=(pacparser)
fi

install_pip() {
  [ ${#pip_missing[@]} -eq 0 ] && return 0
  if python3 -m pip install -q "${pip_missing[@]}" >&2 2>/dev/null \
     || python3 -m pip install -q --break-system-packages "${pip_missing[@]}" >&2; then
    return 0
  fi
  echo "missing Python test packages: ${pip_missing[*]}" >&2
  echo "run:  python3 -m pip install ${pip_missing[*]}" >&2
  exit 1
}

if [ ${#missing[@]} -eq 0 ]; then
  install_pip
  exit 0
fi

cmd="apt-get update && apt-get install -y ${missing[*]}"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing missing system packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >&2
  # python3 may have just been installed.
  if [ "${1:-}" = "--with-test-tools" ]; then
    pip_missing=()
    python3 -c 'import bcrypt' 2>/dev/null || pip_missing+=(bcrypt)
    python3 -c 'import pacparser' 2>/dev/null || pip_missing+=(pacparser)
  fi
  install_pip
else
  echo "missing system packages: ${missing[*]}" >&2
  echo "run as root:  $cmd" >&2
  exit 1
fi
