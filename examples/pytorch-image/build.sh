#!/bin/sh
# build.sh REGISTRY: builds the image of Containerfile and pushes it as
# REGISTRY/trainctl-examples/pytorch-ddp:1, e.g. `examples/pytorch-image/build.sh 10.0.0.5:5000`.
# Needs buildah (apt-get install buildah) and, once, docker.io/library/debian:12 from Docker Hub
# or a mirror. A plain-HTTP registry also needs TLS_VERIFY=false here and the agents'
# --insecure-registry REGISTRY.
set -eu
registry=${1:?usage: build.sh REGISTRY (host:port)}
here=$(cd "$(dirname "$0")" && pwd)
image="$registry/trainctl-examples/pytorch-ddp:1"
buildah bud --layers -f "$here/Containerfile" -t "$image" "$here/../pytorch-ddp"
buildah push --tls-verify="${TLS_VERIFY:-true}" "$image" "docker://$image"
echo "pushed $image"
