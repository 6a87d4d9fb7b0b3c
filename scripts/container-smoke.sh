#!/usr/bin/env bash
# shellcheck disable=SC2015  # `[ check ] && pass ... || fail ...`: pass only counts and prints, so it is if/else
# The container image, checked without a Docker engine (these machines have the docker client but
# no engine). Everything is read from docker/Dockerfile, so the two cannot drift:
#
#  1. builds the binary with the Dockerfile's own `swift build` line;
#  2. checks that `ldd` finds every shared library among the runtime packages the Dockerfile
#     installs;
#  3. makes a Debian bookworm root file system with `debootstrap --variant=minbase` holding exactly
#     those packages (from the Debian mirror apt is configured with), adds the binary, the
#     backtracer, the directories and ownership the Dockerfile sets up;
#  4. runs the proxy in it like the image's ENTRYPOINT would: chroot, the Dockerfile's USER
#     (uid 10001) and ENV, read-only root, a writable volume, a mounted YAML config, in its own
#     network namespace;
#  5. drives it from a second "app" namespace whose only way out is the proxy (the sidecar
#     pattern): a request and a CONNECT tunnel to an origin in a third namespace, the image's
#     HEALTHCHECK command, and a SIGTERM drain with a response in flight.
#
# Needs root, debootstrap, iproute2, util-linux, python3 and curl (scripts/ensure-deps.sh
# --with-container-smoke installs them). Not part of scripts/test.sh: debootstrap downloads ~40 MB.
#
#   bash scripts/container-smoke.sh                # build, rootfs (cached in .build-container/), run
#   BUILD_WRAPPER="flock LOCKFILE" bash scripts/container-smoke.sh   # serialise the build
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/netns-lib.sh

dockerfile=docker/Dockerfile
cache_dir=.build-container
[ "$(id -u)" -eq 0 ] || { echo "container-smoke: needs root (chroot, network namespaces, mounts)" >&2; exit 1; }
for tool in debootstrap ip unshare nsenter chroot python3 curl objdump dpkg; do
  command -v "$tool" >/dev/null 2>&1 || { echo "container-smoke: $tool missing; run: bash scripts/ensure-deps.sh --with-container-smoke" >&2; exit 1; }
done

# ---- what the Dockerfile says -----------------------------------------------------------------
# The runtime stage: everything after the last FROM, with line continuations joined.
runtime_stage="$(awk '/^FROM /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$dockerfile" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')"
build_command="$(grep -o 'swift build -c release[^&\\]*' "$dockerfile" | head -n 1 | sed 's/ *$//')"
read -r -a packages <<<"$(grep -o 'apt-get install -y --no-install-recommends[^&]*' <<<"$runtime_stage" | sed 's/apt-get install -y --no-install-recommends//')"
user="$(awk '/^USER /{print $2}' <<<"$runtime_stage")"
read -r -a env_pairs <<<"$(grep '^ENV ' <<<"$runtime_stage" | sed 's/^ENV //')"
read -r -a make_dirs <<<"$(grep -o 'mkdir -p [^&]*' <<<"$runtime_stage" | sed 's/mkdir -p //')"
chown_spec="$(grep -o 'chown [0-9]*:[0-9]* [^&]*' <<<"$runtime_stage" | sed 's/ *$//')"
volume="$(grep -o '^VOLUME \["[^"]*"\]' <<<"$runtime_stage" | sed 's/^VOLUME \["\(.*\)"\]/\1/')"
binary_dest="$(awk '/^COPY --from=build .*\/httpdns-proxy /{print $NF}' <<<"$runtime_stage")"
backtrace_dest="$(awk '/^COPY --from=build .*\/swift-backtrace-static /{print $NF}' <<<"$runtime_stage")"
for name in build_command user volume binary_dest backtrace_dest chown_spec; do
  [ -n "${!name}" ] || { echo "container-smoke: could not read $name from $dockerfile" >&2; exit 1; }
done
[ ${#packages[@]} -gt 0 ] || { echo "container-smoke: no runtime packages found in $dockerfile" >&2; exit 1; }
uid="${user%%:*}"; gid="${user##*:}"
say "== from $dockerfile"
say "  build:    $build_command"
say "  packages: ${packages[*]}"
say "  user:     $uid:$gid   volume: $volume"
say "  env:      ${env_pairs[*]}"

# ---- 1. build ---------------------------------------------------------------------------------
say "== build"
# shellcheck disable=SC2086 # the wrapper and the build line are word lists
${BUILD_WRAPPER:-} $build_command 2>&1 | tail -n 3
# shellcheck disable=SC2086
binary="$(${BUILD_WRAPPER:-} ${build_command/ build / build --show-bin-path } | tail -n 1)/httpdns-proxy"
swift_root="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")"
backtracer="$swift_root/libexec/swift/linux/swift-backtrace-static"
[ -x "$binary" ] && [ -x "$backtracer" ] || { echo "container-smoke: $binary or $backtracer missing" >&2; exit 1; }
say "  $binary ($(du -h "$binary" | cut -f1))"

# ---- 2. shared libraries against the package list ---------------------------------------------
# Exactly: every library the binary names (ELF NEEDED) belongs to a listed package, and every
# listed package but ca-certificates owns one of them. Their own dependencies come through apt.
say "== ldd: the binary's own libraries (NEEDED) and the packages that own them"
owners=()
while read -r library; do
  path="$(ldd "$binary" | awk -v lib="$library" '$1 == lib && $2 == "=>" {print $3} $1 ~ "/" lib "$" {print $1}' | head -n 1)"
  [ -n "$path" ] || { echo "container-smoke: ldd does not find $library" >&2; exit 1; }
  real="$(readlink -f "$path")"
  owner="$({ dpkg -S "$path" || dpkg -S "$real" || dpkg -S "*/$(basename "$real")"; } 2>/dev/null | head -n 1 | cut -d: -f1)"
  say "  $library -> $path -> $owner"
  owners+=("$owner")
done < <(objdump -p "$binary" | awk '$1 == "NEEDED" {print $2}')
drift=no
for owner in $(printf '%s\n' "${owners[@]}" | sort -u); do
  printf '%s\n' "${packages[@]}" | grep -qx "$owner" || { echo "container-smoke: $owner is not in the Dockerfile's runtime packages" >&2; drift=yes; }
done
for package in "${packages[@]}"; do
  [ "$package" = ca-certificates ] && continue
  printf '%s\n' "${owners[@]}" | grep -qx "$package" || { echo "container-smoke: the Dockerfile installs $package, which owns none of the binary's libraries" >&2; drift=yes; }
done
[ "$drift" = no ] || exit 1
say "  the Dockerfile's runtime packages are exactly these owners, plus ca-certificates"

# ---- 3. root file system ----------------------------------------------------------------------
# The mirror apt already uses here (deb822 or one-line sources), never a hard-coded host.
debian_mirror() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk 'BEGIN{RS=""} /Suites:[^\n]*bookworm( |\n|$)/ && /Components:[^\n]*main/ {
           for (i = 1; i <= NF; i++) if ($i == "URIs:") { print $(i + 1); exit } }' "$file"
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    awk '$1 == "deb" && $0 !~ /\[/ && $3 == "bookworm" {print $2} $1 == "deb" && $0 ~ /\[/ {for (i = 1; i <= NF; i++) if ($i == "bookworm") print $(i - 1)}' "$file"
  done
}
mirror="$(debian_mirror | head -n 1)"
[ -n "$mirror" ] || { echo "container-smoke: no bookworm entry in apt's sources" >&2; exit 1; }
key="$(printf '%s\n' "${packages[@]}" | sort | sha256sum | cut -c1-12)"
rootfs_cache="$PWD/$cache_dir/rootfs-bookworm-minbase-$key"
if [ ! -f "$rootfs_cache/.complete" ]; then
  say "== debootstrap --variant=minbase bookworm + ${packages[*]} (from apt's configured mirror)"
  rm -rf "$cache_dir"/rootfs-*   # other package lists' file systems are stale
  mkdir -p "$cache_dir"
  debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" bookworm "$rootfs_cache.partial" "$mirror" \
    >"$cache_dir/debootstrap.log" 2>&1 || { tail -n 20 "$cache_dir/debootstrap.log"; exit 1; }
  # As the Dockerfile does: no package lists or downloaded archives in the image.
  rm -rf "$rootfs_cache.partial/var/lib/apt/lists/"* "$rootfs_cache.partial/var/cache/apt/"*.bin "$rootfs_cache.partial/var/cache/apt/archives/"*.deb
  touch "$rootfs_cache.partial/.complete"
  mv "$rootfs_cache.partial" "$rootfs_cache"
else
  say "== root file system cached: $rootfs_cache"
fi
for package in "${packages[@]}"; do
  # shellcheck disable=SC2016  # dpkg-query's format, not the shell's
  chroot "$rootfs_cache" dpkg-query -W -f='  ${Package} ${Version}\n' "$package"
done
say "  $(du -sh "$rootfs_cache" | cut -f1) in all; $(chroot "$rootfs_cache" dpkg-query -W -f='.\n' | wc -l) packages"

# The image's layers: binary, backtracer, directories and ownership, as the Dockerfile makes them.
rootfs="$rootfs_cache"
install -D -m 0755 "$binary" "$rootfs$binary_dest"
# The Dockerfile's build stage strips the debug information; so does this copy when it says so.
if grep -q 'strip --strip-debug /staging/httpdns-proxy' "$dockerfile"; then
  strip --strip-debug "$rootfs$binary_dest"
fi
say "  binary: $(stat -c %s "$rootfs$binary_dest") bytes at $binary_dest"
install -D -m 0755 "$backtracer" "$rootfs$backtrace_dest"
for dir in "${make_dirs[@]}"; do mkdir -p "$rootfs$dir"; done
read -r _ owner_ids owned <<<"$chown_spec"
chown "$owner_ids" "$rootfs$owned"
say "== ldd inside the root file system"
chroot "$rootfs" ldd "$binary_dest" >"$cache_dir/ldd.txt"
if grep -q 'not found' "$cache_dir/ldd.txt"; then
  cat "$cache_dir/ldd.txt"; echo "container-smoke: a library is missing in the root file system" >&2; exit 1
fi
say "  $(grep -c '=> /' "$cache_dir/ldd.txt") shared libraries, all found (the list: $cache_dir/ldd.txt)"

# ---- 4. run it --------------------------------------------------------------------------------
work="$(mktemp -d)"
trap 'netns_cleanup; rm -rf "$work"' EXIT
netns_setup "$$"
say "== namespaces: app $NS_APP_ADDR -> proxy $NS_PROXY_ADDR:8080 -> origin $NS_ORIGIN_ADDR:8000"
start_origin "$work/release" "$work/origin.log"

# The mounted configuration (read-only) and the volume (the only writable place besides /tmp).
mkdir -p "$work/config" "$work/volume"
chown "$uid:$gid" "$work/volume"
printf '{"service":"container-smoke","enable":1,"domainlist":[{"domain":"origin.test","ips":["%s"]}]}\n' \
  "$NS_ORIGIN_ADDR" >"$work/config/domains.json"
cat >"$work/config/proxy.yaml" <<YAML
provider: static
static-list: /etc/httpdns-proxy/domains.json
system-fallback: false
ip-family: ipv4
allow-destination: [$NS_ORIGIN_NET]
connect-ports: [8000]
shutdown-grace: 10s
YAML
container_env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${env_pairs[@]}"
  HTTPDNS_PROXY_CONFIG=/etc/httpdns-proxy/proxy.yaml)

# In a private mount namespace: the root file system read-only, /proc, a minimal /dev, /tmp, the
# config and the volume; then chroot to the Dockerfile's USER with the Dockerfile's ENV only.
# shellcheck disable=SC2016  # the inner shell expands its own arguments
ip netns exec "$NS_PROXY" unshare --mount --propagation private -- bash -c '
  set -e
  root=$1 config=$2 volume=$3 volume_path=$4; shift 4
  mount --bind "$root" "$root"
  mount -o remount,bind,ro "$root"
  mount -t proc proc "$root/proc"
  mount -t tmpfs -o size=1m,mode=0755 tmpfs "$root/dev"
  for node in null zero full random urandom tty; do touch "$root/dev/$node"; mount --bind "/dev/$node" "$root/dev/$node"; done
  mount -t tmpfs -o size=16m,mode=1777 tmpfs "$root/tmp"
  mount --bind "$config" "$root/etc/httpdns-proxy"
  mount -o remount,bind,ro "$root/etc/httpdns-proxy"
  mount --bind "$volume" "$root$volume_path"
  exec "$@"
' container "$rootfs" "$work/config" "$work/volume" "$volume" \
  chroot --userspec="$uid:$gid" --groups="$gid" "$rootfs" /usr/bin/env -i "${container_env[@]}" "$binary_dest" serve \
  >"$work/access.log" 2>"$work/proxy.log" &
proxy_pid=$!
pids_to_stop+=("$proxy_pid")

# `docker exec` into the running container: its network and mount namespaces, root and user.
in_container() {
  nsenter --net="/run/netns/$NS_PROXY" --mount="/proc/$proxy_pid/ns/mnt" \
    chroot --userspec="$uid:$gid" --groups="$gid" "$rootfs" /usr/bin/env -i "${container_env[@]}" "$@"
}
healthcheck() { in_container "$binary_dest" healthcheck; }
unhealthy() { ! healthcheck; }

say "== checks"
# The static list loads in the background after the listeners open: wait for it too.
list_loaded() { grep -q '"message":"static list loaded"' "$work/proxy.log"; }
if wait_until 20 healthcheck && wait_until 10 list_loaded; then pass "HEALTHCHECK (httpdns-proxy healthcheck): $(healthcheck 2>&1)"; else
  fail "the proxy did not become healthy"; cat "$work/proxy.log"; exit 1
fi
status_line() { grep -E "^$1:" "/proc/$proxy_pid/status" | tr -s '\t ' ' '; }
say "  proxy process $proxy_pid: $(status_line Uid); $(status_line Gid); $(status_line CapEff); $(status_line VmRSS)"
say "  its root: $(readlink "/proc/$proxy_pid/root"); its network namespace: $(ip netns identify "$proxy_pid")"
if [ "$(status_line Uid)" = "Uid: $uid $uid $uid $uid" ]; then pass "the proxy runs as uid $uid"; else fail "the proxy's uid: $(status_line Uid)"; fi
if in_container /bin/sh -c 'echo x > /usr/local/bin/probe' 2>"$work/ro.err"; then
  fail "the root file system is writable"
else
  pass "root file system read-only: $(tr -d '\n' <"$work/ro.err")"
fi

in_app() { ip netns exec "$NS_APP" env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u no_proxy -u NO_PROXY "$@"; }
if in_app curl -sS --noproxy '*' --connect-timeout 2 -o /dev/null "http://$NS_ORIGIN_ADDR:8000/hello" 2>"$work/direct.err"; then
  fail "the app reached the origin without the proxy"
else
  pass "app -> origin directly fails: $(tr -d '\n' <"$work/direct.err")"
fi
say "  app\$ HTTP_PROXY=http://$NS_PROXY_ADDR:8080 curl -sS -D - http://origin.test:8000/hello"
if in_app env HTTP_PROXY="http://$NS_PROXY_ADDR:8080" http_proxy="http://$NS_PROXY_ADDR:8080" \
    curl -sS --max-time 10 -D - http://origin.test:8000/hello >"$work/hello.txt" 2>&1 \
  && grep -q '^hello from origin' "$work/hello.txt"; then
  sed 's/\r$//; s/^/    /' "$work/hello.txt"
  pass "the app's request went through the proxy"
else
  cat "$work/hello.txt"; fail "request through the proxy"
fi
body="$(in_app curl -sS --max-time 10 -p -x "http://$NS_PROXY_ADDR:8080" http://origin.test:8000/hello || true)"
if [ "$body" = "hello from origin" ]; then pass "CONNECT tunnel through the proxy: '$body'"; else fail "CONNECT tunnel: '$body'"; fi
if wait_until 5 grep -q "\"client\":\"$NS_APP_ADDR:" "$work/access.log"; then
  say "  access log:"; sed 's/^/    /' "$work/access.log"
  pass "the access log shows the app ($NS_APP_ADDR) and the origin ($NS_ORIGIN_ADDR)"
else
  fail "no access log entry from the app"
fi

# SIGTERM (the image's STOPSIGNAL) with a response in flight.
in_app curl -sS -N --max-time 30 -o "$work/slow.body" -x "http://$NS_PROXY_ADDR:8080" http://origin.test:8000/slow &
slow_pid=$!
pids_to_stop+=("$slow_pid")
half=$((64 * 1024))
slow_started() { [ "$(stat -c %s "$work/slow.body" 2>/dev/null || echo 0)" -ge "$half" ]; }
if wait_until 10 slow_started; then
  kill -TERM "$proxy_pid"
  if wait_until 10 unhealthy; then pass "after SIGTERM the HEALTHCHECK fails: $(healthcheck 2>&1 || true)"; else fail "healthcheck passes after SIGTERM"; fi
  if ! in_app curl -sS --max-time 3 -o /dev/null -x "http://$NS_PROXY_ADDR:8080" http://origin.test:8000/hello 2>"$work/new.err"; then
    pass "new connections refused while draining: $(tr -d '\n' <"$work/new.err")"
  else
    fail "a new request was served after SIGTERM"
  fi
  touch "$work/release"
  if wait "$slow_pid" && [ "$(stat -c %s "$work/slow.body")" -eq $((2 * half)) ]; then
    pass "the in-flight response completed during the drain ($((2 * half)) bytes)"
  else
    fail "the in-flight response was cut at $(stat -c %s "$work/slow.body" 2>/dev/null || echo 0) bytes"
  fi
  # Bounded: a proxy still running 15 s from now is killed (and fails the check).
  timeout 15 tail -s 0.1 --pid="$proxy_pid" -f /dev/null || kill -KILL "$proxy_pid" 2>/dev/null || true
  status=0
  wait "$proxy_pid" || status=$?
  if [ "$status" -eq 0 ]; then pass "the proxy exited 0 after the drain"; else fail "proxy exit status $status"; fi
else
  fail "the slow response did not start"; touch "$work/release"
fi
if [ -s "$work/volume/cache.json" ]; then
  pass "the DNS cache was saved to the volume at shutdown ($(stat -c '%s bytes, owner %u:%g' "$work/volume/cache.json"))"
else
  fail "no cache file in the volume"
fi
say "  proxy log (tail):"; tail -n 6 "$work/proxy.log" | sed 's/^/    /'

say "container smoke: $checks_passed checks passed, $checks_failed failed"
[ "$checks_failed" -eq 0 ]
