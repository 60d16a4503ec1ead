#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running trainctl cluster:
# installs the build dependencies, builds trainctl, starts trainctld and two agents (node-a,
# node-b) with all their data under ./.demo/, and runs examples/hello.yaml to success.
#
#   deploy/demo.sh          set up, start the cluster, run the sample job (leaves it running)
#   deploy/demo.sh stop     stop the demo cluster
#
# Environment: TRAINCTL_DEMO_PORT (default 7070) is the scheduler's gRPC port on 127.0.0.1, and
# TRAINCTL_DEMO_HTTP_PORT (default 7080) its REST API and web console.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
demo="$root/.demo"
port="${TRAINCTL_DEMO_PORT:-7070}"
server="127.0.0.1:$port"
http="127.0.0.1:${TRAINCTL_DEMO_HTTP_PORT:-7080}"

stop_demo() {
  # Replicas outlive their agents (a restart keeps training); the demo's end stops them too.
  for node in a b; do
    if [ -d "$demo/node-$node" ] && [ -x "$root/build/bin/trainctl-agent" ]; then
      "$root/build/bin/trainctl-agent" --stop-replicas --work-dir "$demo/node-$node" \
        --stop-grace 5s >/dev/null || true
    fi
  done
  for name in agent-b agent-a trainctld; do
    pidfile="$demo/$name.pid"
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pidfile"
  done
}

if [ "${1:-}" = "stop" ]; then
  stop_demo
  echo "demo cluster stopped (data kept in $demo)"
  exit 0
fi

echo "==> installing dependencies"
bash deploy/install-deps.sh --build
echo "==> building"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINCTL_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target trainctld trainctl-agent trainctl
bin="$root/build/bin"

stop_demo
mkdir -p "$demo"
echo "==> starting trainctld on $server (data in $demo/scheduler)"
"$bin/trainctld" --data-dir "$demo/scheduler" --listen "$server" --http-listen "$http" \
  >"$demo/trainctld.log" 2>&1 &
echo $! >"$demo/trainctld.pid"
# A root agent runs replicas as `nobody`, who must be able to reach the work dirs. When the
# checkout lies under a directory closed to others (root's home, say), the demo runs them as
# root instead; production hosts keep the default (deploy/agent.yaml).
run_as=()
if [ "$(id -u)" = 0 ] && ! setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$demo"; then
  echo "==> $demo is closed to other users: the demo runs its replicas as root"
  run_as=(--default-run-as-user root --allow-root-replicas)
fi
for node in a b; do
  echo "==> starting trainctl-agent node-$node (work dir $demo/node-$node)"
  # The preflight disk items default to 32 GB free on / and the work dir and 1 GB on /dev/shm
  # (R20); a laptop, container or CI disk may have less, so the demo asks for 1 GB and 50 MB.
  # Production hosts keep the defaults (deploy/agent.yaml).
  "$bin/trainctl-agent" --scheduler "$server" --node "node-$node" --work-dir "$demo/node-$node" \
    --address 127.0.0.1 --check-disk-root-gb 1 --check-disk-cache-gb 1 --check-disk-shm-gb 0.05 \
    "${run_as[@]}" >"$demo/agent-$node.log" 2>&1 &
  echo $! >"$demo/agent-$node.pid"
done

export TRAINCTL_SERVER="$server"
# Wait until both agents have registered, so the job can spread over both nodes.
ready=0
for _ in $(seq 1 200); do
  ready=$("$bin/trainctl" nodes 2>/dev/null | grep -c ' READY ' || true)
  [ "$ready" -ge 2 ] && break
  sleep 0.1
done
if [ "$ready" -lt 2 ]; then
  echo "the demo cluster did not come up; see $demo/*.log" >&2
  exit 1
fi
"$bin/trainctl" nodes

echo "==> submitting examples/hello.yaml"
id=$("$bin/trainctl" submit -f examples/hello.yaml)
echo "job $id"
"$bin/trainctl" wait "$id"
"$bin/trainctl" get "$id"
echo "==> logs of worker-1"
"$bin/trainctl" logs "$id" --replica worker-1
cat <<MSG

The demo cluster is running (logs in $demo/*.log); its web console is http://$http/. Try:
  export TRAINCTL_SERVER=$server PATH=$bin:\$PATH
  trainctl list
  trainctl submit -f examples/long.yaml     # then: trainctl cancel ID
  curl -s http://$http/v1/jobs              # the REST API (GET /v1/openapi.json lists it)
Stop it with: deploy/demo.sh stop
MSG
