#!/usr/bin/env bash
# Fails when a lower layer of trainctl includes a higher one: the dependency rules of
# docs/developers/architecture.md, "Dependencies point one way", checked on every #include of the
# source tree. Prints each offending include as file:line and the rule it breaks. Run from anywhere;
# ctest runs it too.
#
#   common/     includes nothing of model/, scheduler/, storage/, server/, agents/, cli/
#   scheduler/  the core: no gRPC (grpc/, grpcpp/, *.grpc.pb.h, common/grpc_status.h), no
#               sqlite3.h, nothing of storage/, server/, agents/, cli/
#   model/      the core's model (trainctl_model): no gRPC, nothing of scheduler/, storage/,
#               server/, agents/, cli/
#   storage/    no gRPC; nothing of scheduler/ (the model is model/), server/, agents/, cli/
#   agents/     nothing of model/, scheduler/, storage/, server/, cli/; gRPC only in agent.h,
#               agent.cc, agent_connect.cc, scheduler_link.* and log_shipper.* (the streams to
#               the scheduler, trainctl_agent_lib)
#   cli/        nothing of model/, scheduler/, storage/, server/, agents/
#   server/     nothing of agents/ or cli/ (other programs)
set -euo pipefail
cd "$(dirname "$0")/.."

grpc='grpc/.*|grpcpp/.*|.*\.grpc\.pb\.h|common/grpc_status\.h'
failed=0

# check RULE INCLUDE_REGEX ALLOWED_REGEX FILE...: reports every include of a FILE whose path
# matches INCLUDE_REGEX but not ALLOWED_REGEX.
check() {
  local rule=$1 forbidden=$2 allowed=$3
  shift 3
  local file line path n
  for file in "$@"; do
    n=0
    while IFS= read -r line; do
      n=$((n + 1))
      [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\<\"]([^\>\"]+)[\>\"] ]] || continue
      path=${BASH_REMATCH[1]}
      [[ $path =~ ^($forbidden)$ ]] || continue
      [[ -n $allowed && $path =~ ^($allowed)$ ]] && continue
      echo "$file:$n: includes \"$path\": $rule"
      failed=1
    done <"$file"
  done
}

# The C++ sources under DIR, optionally leaving out the files named after it.
sources() {
  local dir=$1
  shift
  local exclude=()
  for name in "$@"; do exclude+=(! -name "$name"); done
  find "$dir" -type f \( -name '*.h' -o -name '*.cc' \) "${exclude[@]}" | sort
}

mapfile -t common_files < <(sources common)
mapfile -t scheduler_files < <(sources scheduler)
mapfile -t storage_files < <(sources storage)
mapfile -t model_files < <(sources model)
mapfile -t agent_files < <(sources agents)
mapfile -t agent_host_files < <(sources agents agent.h agent.cc agent_connect.cc scheduler_link.h \
  scheduler_link.cc log_shipper.h log_shipper.cc)
mapfile -t cli_files < <(sources cli)
mapfile -t server_files < <(sources server)

check "common/ is below every other module" \
  'model/.*|scheduler/.*|storage/.*|server/.*|agents/.*|cli/.*' '' "${common_files[@]}"
check "the scheduler core uses no gRPC" "$grpc" '' "${scheduler_files[@]}"
check "the scheduler core uses no SQLite" 'sqlite3\.h' '' "${scheduler_files[@]}"
check "the scheduler core is below storage, server, agents and cli" \
  'storage/.*|server/.*|agents/.*|cli/.*' '' "${scheduler_files[@]}"
check "storage uses no gRPC" "$grpc" '' "${storage_files[@]}"
check "the model (model/) is below the core, storage and the programs" \
  'scheduler/.*|storage/.*|server/.*|agents/.*|cli/.*' '' "${model_files[@]}"
check "the model uses no gRPC" "$grpc" '' "${model_files[@]}"
check "storage sees the core's model (model/), not the core" 'scheduler/.*' '' "${storage_files[@]}"
check "storage is below server, agents and cli" 'server/.*|agents/.*|cli/.*' '' \
  "${storage_files[@]}"
check "the agent shares only proto/ and common/ with the scheduler" \
  'model/.*|scheduler/.*|storage/.*|server/.*|cli/.*' '' "${agent_files[@]}"
check "only agent.h/agent.cc, agent_connect.cc, scheduler_link.*, log_shipper.* (trainctl_agent_lib) use gRPC in agents/" "$grpc" '' \
  "${agent_host_files[@]}"
check "the CLI talks to trainctld only through proto/" \
  'model/.*|scheduler/.*|storage/.*|server/.*|agents/.*' '' "${cli_files[@]}"
check "trainctld does not include the other programs" 'agents/.*|cli/.*' '' "${server_files[@]}"

if [ "$failed" != 0 ]; then
  echo "check_layers: some includes break the dependency rules" \
    "(docs/developers/architecture.md)" >&2
  exit 1
fi
echo "check_layers: every include follows the dependency rules"
