#!/usr/bin/env bash
# The Debian packages, for real (docs/operators/install.md): lintian finds no error in them; `dpkg
# -i` installs the three; their files are where they belong and the trainctl user exists; trainctld
# (as that user) and an agent (as root, like their units) start from /usr/bin with the configs of
# /etc/trainctl, without systemd (CI has none as PID 1); /usr/bin/trainctl runs a job to SUCCEEDED;
# `dpkg --purge` removes the packages without error and leaves none of their files.
#
#   tests/package/package_test.sh [BUILD_DIR]      # after `cmake --build BUILD_DIR --target package`
#
# Needs root (sudo otherwise). Refuses to run where trainctl is installed or has left state, since
# it purges the packages at the end. Removes the trainctl user at the end when it made it. Every
# wait is a poll with a deadline; a failure prints the daemons' logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
if [ "$(id -u)" != 0 ]; then exec sudo "$0" "$build"; fi

fail() {
  echo "package_test: $*" >&2
  exit 1
}

debs=()
for name in trainctld trainctl-agent trainctl; do
  mapfile -t found < <(ls "$build/${name}_"*.deb 2>/dev/null)
  [ ${#found[@]} = 1 ] || fail "want one $build/${name}_*.deb, found ${#found[@]}: run" \
    "cmake --build $build --target package"
  debs+=("${found[0]}")
done

for p in trainctld trainctl-agent trainctl; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv "not-installed"; then
    fail "package $p is installed on this machine; this test purges it: remove it first"
  fi
done
for d in /etc/trainctl /var/lib/trainctl /var/lib/trainctl-agent /run/trainctl-agent; do
  [ ! -e "$d" ] || fail "$d exists; this test would delete it when it purges the packages"
done
user_existed=0
if getent passwd trainctl >/dev/null; then user_existed=1; fi

# The shipped configs agree: the agent dials where trainctld listens.
listen=$(sed -n 's/^listen: *//p' deploy/trainctld.yaml)
scheduler=$(sed -n 's/^scheduler: *//p' deploy/agent.yaml)
[ -n "$listen" ] && [ "$listen" = "$scheduler" ] ||
  fail "deploy/agent.yaml's scheduler ($scheduler) is not deploy/trainctld.yaml's listen ($listen)"

echo "==> lintian"
lintian --fail-on error "${debs[@]}" ||
  fail "lintian reports errors (above)"

echo "==> dpkg -i ${debs[*]##*/}"
# The packages' dependencies that are missing, from apt (dpkg -i installs none). A dependency
# is there when a package of its name is installed or an installed package provides it.
provided=" $(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Provides}\n' |
  awk '/^ii/ {$1=""; print}' | sed 's/([^)]*)//g; s/,/ /g' | tr -s ' \n' ' ') "
missing=()
for dep in $(for deb in "${debs[@]}"; do dpkg-deb -f "$deb" Depends; done |
  tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | sort -u); do
  [[ $provided == *" $dep "* ]] || missing+=("$dep")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing the packages' dependencies: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

run=$(mktemp -d /tmp/package_test.XXXXXX)
trainctld_pid="" agent_pid="" installed=0
cleanup() {
  local rc=$?
  for pid in $agent_pid $trainctld_pid; do kill -KILL "$pid" 2>/dev/null || true; done
  if [ $rc != 0 ]; then
    for log in "$run"/*.log; do
      [ -e "$log" ] && { echo "--- $log (last 30 lines)"; tail -n 30 "$log"; }
    done
  fi
  if ((installed)); then dpkg --purge trainctl trainctl-agent trainctld >/dev/null 2>&1 || true; fi
  if ((!user_existed)) && getent passwd trainctl >/dev/null; then
    userdel trainctl 2>/dev/null || true
    groupdel trainctl 2>/dev/null || true
  fi
  rm -rf "$run"
  exit $rc
}
trap cleanup EXIT
installed=1
dpkg -i "${debs[@]}" >"$run/dpkg-install.log" 2>&1 || fail "dpkg -i failed: $(cat "$run/dpkg-install.log")"

echo "==> installed files"
for f in /usr/bin/trainctld /usr/bin/trainctl-agent /usr/bin/trainctl-shim /usr/bin/trainctl \
  /lib/systemd/system/trainctld.service /lib/systemd/system/trainctl-agent.service \
  /etc/trainctl/trainctld.yaml /etc/trainctl/agent.yaml \
  /usr/share/bash-completion/completions/trainctl /usr/share/zsh/vendor-completions/_trainctl \
  /usr/share/doc/trainctld/copyright /usr/share/doc/trainctl-agent/copyright \
  /usr/share/doc/trainctl/copyright; do
  [ -f "$f" ] || fail "$f is missing"
done
for p in trainctld:/etc/trainctl/trainctld.yaml trainctl-agent:/etc/trainctl/agent.yaml; do
  dpkg-query -W -f='${Conffiles}\n' "${p%%:*}" | grep -q " ${p#*:} " ||
    fail "${p#*:} is not a conffile of ${p%%:*}"
done
getent passwd trainctl >/dev/null || fail "the trainctl user does not exist"
[ "$(stat -c '%U %a' /var/lib/trainctl)" = "trainctl 700" ] ||
  fail "/var/lib/trainctl is $(stat -c '%U %a' /var/lib/trainctl), want trainctl 700"
bash -n /usr/share/bash-completion/completions/trainctl || fail "the bash completion is broken"
[ "$(/usr/bin/trainctl completion bash)" = "$(cat /usr/share/bash-completion/completions/trainctl)" ] ||
  fail "the installed bash completion is not what trainctl completion bash prints"

# poll SECONDS WHAT COMMAND...: runs COMMAND every 0.1 s until it succeeds, for at most SECONDS;
# fails at once when a daemon started here has exited.
poll() {
  local seconds=$1 what=$2
  local deadline=$((SECONDS + seconds))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "no $what within $seconds s"
    if [ -n "$trainctld_pid" ] && ! kill -0 "$trainctld_pid" 2>/dev/null; then
      fail "trainctld exited while waiting for $what"
    fi
    if [ -n "$agent_pid" ] && ! kill -0 "$agent_pid" 2>/dev/null; then
      fail "trainctl-agent exited while waiting for $what"
    fi
    sleep 0.1
  done
}

echo "==> trainctld as trainctl, agent as root, with /etc/trainctl's configs"
# Ports of their own (the shipped 7070/7080 may be taken on a shared machine): flags override
# the config's listen addresses and node name, everything else comes from the config. Free disk
# of a CI machine is below the agent's default preflight thresholds (like deploy/demo.sh).
(umask 0077 && exec setpriv --reuid=trainctl --regid=trainctl --init-groups \
  /usr/bin/trainctld --config /etc/trainctl/trainctld.yaml --listen 127.0.0.1:0 \
  --http-listen 127.0.0.1:0) >"$run/trainctld.log" 2>&1 &
trainctld_pid=$!
poll 20 "trainctld address in /var/lib/trainctl/trainctld.addr" test -s /var/lib/trainctl/trainctld.addr
server=$(cat /var/lib/trainctl/trainctld.addr)
[ "$(stat -c %U /var/lib/trainctl/trainctl.db)" = trainctl ] || fail "trainctl.db is not trainctl's"
/usr/bin/trainctl-agent --config /etc/trainctl/agent.yaml --scheduler "$server" --node pkg-test \
  --address 127.0.0.1 --check-disk-root-gb 0.5 --check-disk-cache-gb 0.5 \
  --check-disk-shm-gb 0.01 >"$run/agent.log" 2>&1 &
agent_pid=$!
export TRAINCTL_SERVER=$server
node_ready() { /usr/bin/trainctl nodes | grep -q "^pkg-test .* READY "; }
poll 30 "READY node pkg-test" node_ready

echo "==> a job through /usr/bin/trainctl"
id=$(/usr/bin/trainctl submit -f - <<'EOF'
displayName: package-test
workerPools:
  - name: main
    replicaCount: 1
    command: ["/bin/sh", "-c", "echo installed trainctl works"]
    resources: {cpu: 0.1, memoryMb: 32}
EOF
)
/usr/bin/trainctl wait "$id" --timeout 60s || fail "job $id did not succeed: $(/usr/bin/trainctl describe "$id")"
/usr/bin/trainctl logs "$id" | grep -q "installed trainctl works" || fail "job $id's log lacks its output"

echo "==> stop the daemons, dpkg --purge"
stop() {  # stop PID NAME: SIGTERM, then wait for it to exit (30 s at most)
  local deadline=$((SECONDS + 30))
  kill -TERM "$1"
  while kill -0 "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "$2 (pid $1) did not exit within 30 s of SIGTERM"
    sleep 0.1
  done
  wait "$1" 2>/dev/null || true
}
pid=$agent_pid agent_pid=""
stop "$pid" trainctl-agent
pid=$trainctld_pid trainctld_pid=""
stop "$pid" trainctld
files=$(dpkg -L trainctld trainctl-agent trainctl)
installed=0
dpkg --purge trainctl trainctl-agent trainctld >"$run/dpkg-purge.log" 2>&1 ||
  fail "dpkg --purge failed: $(cat "$run/dpkg-purge.log")"
for p in trainctld trainctl-agent trainctl; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv "not-installed"; then
    fail "$p is still known to dpkg after the purge: $(dpkg-query -W -f='${Status}' "$p")"
  fi
done
while read -r f; do
  # Directories other packages share (/usr/bin) stay; no file of ours may.
  if [ -e "$f" ] && [ ! -d "$f" ]; then fail "$f is left after the purge"; fi
done <<<"$files"
for d in /etc/trainctl /var/lib/trainctl /var/lib/trainctl-agent /run/trainctl-agent \
  /usr/share/doc/trainctld /usr/share/doc/trainctl-agent /usr/share/doc/trainctl; do
  [ ! -e "$d" ] || fail "$d is left after the purge"
done
echo "package_test: passed"
