# Shared by bench/run.sh, bench/ab.sh and bench/soak.sh (sourced; each defines `die` first).

# bench_require_tools SERVICE... -- COMMAND...: makes sure every COMMAND is on PATH, installing its
# Debian package (same name) with apt-get when root, else dies with the exact command. SERVICEs
# are packaged daemons that must not keep running on their default ports after an install.
bench_require_tools() {
  local services=() commands=() missing=() cmd svc
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do services+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  commands=("$@")
  for cmd in "${commands[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "${0}: installing ${missing[*]} (apt-get)" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 \
        || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; } \
        || die "could not install ${missing[*]}"
      for svc in "${services[@]}"; do
        if command -v systemctl >/dev/null 2>&1; then systemctl stop "$svc" >/dev/null 2>&1 || true; fi
        if command -v service >/dev/null 2>&1; then service "$svc" stop >/dev/null 2>&1 || true; fi
      done
    else
      die "missing tools; install them with: apt-get install -y ${missing[*]}"
    fi
  fi
  for cmd in "${commands[@]}"; do
    command -v "$cmd" >/dev/null 2>&1 || die "$cmd is still missing"
  done
}

# bench_kill_groups PIDFILE: TERM, then KILL, every process group listed in PIDFILE (one leader
# PID a line; what the Python runner started, normally already stopped by it).
bench_kill_groups() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  while read -r pid; do
    [ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null || true
  done < "$pidfile"
  sleep 1
  while read -r pid; do
    [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
  done < "$pidfile"
}
