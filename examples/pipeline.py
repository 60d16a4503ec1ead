#!/usr/bin/python3
"""A pipeline step that runs one trainctl job: submit, wait, print the outcome and the log.

    examples/pipeline.py --server 127.0.0.1:7070 --stubs build/clients/python/gen
    examples/pipeline.py --server HOST:7070 --ca ca.crt --token "$TOKEN" --spec job.json

It submits the spec (by default one replica that runs `echo hello from trainctl`) with a
request id, so that a create retried after a broken connection never makes a second job; a
pipeline that reruns the step with the same --request-id gets the job the first run created.
It then follows the job's watch stream to its end, riding out a restart of trainctld, prints
the final state and the primary replica's output, and exits 0 on SUCCEEDED, 1 on FAILED or
CANCELLED and 2 on any error.

Runs on Debian's /usr/bin/python3 with python3-grpcio and python3-protobuf (and python3-yaml
for YAML specs). It uses trainctl_client from ../clients/python and the stubs the build
generates (build/clients/python/gen), found through --stubs or $TRAINCTL_PYTHON_STUBS.
"""

import argparse
import json
import os
import sys
import uuid

HERE = os.path.dirname(os.path.realpath(__file__))
CLIENT_DIR = os.path.join(HERE, os.pardir, "clients", "python")

# One replica that prints a line; the shape of examples/hello.yaml.
DEFAULT_SPEC = {
    "displayName": "pipeline-hello",
    "project": "default",
    "workerPools": [{
        "name": "main",
        "replicaCount": 1,
        "command": ["/bin/sh", "-c"],
        "args": ["echo hello from trainctl"],
        "resources": {"cpu": 0.1, "memoryMb": 64},
    }],
    "scheduling": {"stopGracePeriod": "5s", "timeout": "5m"},
}

EXIT_OK = 0
EXIT_JOB_FAILED = 1
EXIT_ERROR = 2


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Submit a trainctl job, wait for it, print its state and primary log.")
    p.add_argument("--server", default=os.environ.get("TRAINCTL_SERVER", "127.0.0.1:7070"),
                   help="trainctld address HOST:PORT (default: $TRAINCTL_SERVER, "
                        "else 127.0.0.1:7070)")
    p.add_argument("--token", default=os.environ.get("TRAINCTL_TOKEN"),
                   help="bearer token (default: $TRAINCTL_TOKEN)")
    p.add_argument("--ca", default=os.environ.get("TRAINCTL_CA"),
                   help="CA certificate (PEM) of the server; talks TLS when given "
                        "(default: $TRAINCTL_CA)")
    p.add_argument("--spec", help="the job spec, JSON (.json) or YAML (.yaml, .yml; needs "
                                  "python3-yaml); default: one replica echoing a line")
    p.add_argument("--request-id",
                   help="the create's request id; the same id returns the same job "
                        "(default: a new UUID)")
    p.add_argument("--stubs", default=os.environ.get("TRAINCTL_PYTHON_STUBS"),
                   help="directory holding the generated trainctl/v1/*_pb2.py "
                        "(default: $TRAINCTL_PYTHON_STUBS)")
    p.add_argument("--timeout", type=float, default=None,
                   help="give up waiting after this many seconds (default: no limit)")
    return p.parse_args(argv)


def fail(message):
    """Prints `message` as an error and exits with EXIT_ERROR."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_ERROR)


def load_spec(path):
    """The spec dict of a JSON or YAML file, or DEFAULT_SPEC when no file is named."""
    if path is None:
        return DEFAULT_SPEC
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if path.endswith((".yaml", ".yml")):
            try:
                import yaml  # pylint: disable=import-outside-toplevel
            except ImportError:
                fail(f"{path}: reading YAML needs python3-yaml; give the spec as JSON instead")
            try:
                return yaml.safe_load(text)
            except yaml.YAMLError as e:
                fail(f"{path}: {e}")
        return json.loads(text)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    return None


def import_client(stubs):
    """Imports trainctl_client from ../clients/python, with the stubs in `stubs` on the path."""
    if stubs:
        sys.path.insert(0, os.path.abspath(stubs))
    sys.path.insert(0, os.path.abspath(CLIENT_DIR))
    try:
        import trainctl_client  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        fail(f"cannot import the trainctl client ({e}); it needs /usr/bin/python3 with "
             "python3-grpcio and python3-protobuf, and the generated stubs through --stubs DIR "
             "or TRAINCTL_PYTHON_STUBS (the build writes them to build/clients/python/gen)")
    return trainctl_client


def primary_replica(job):
    """The name of the job's primary replica (rank 0), or None before any was placed."""
    for replica in job.replicas:
        if replica.rank == 0:
            return replica.name
    return job.replicas[0].name if job.replicas else None


def run(args):
    tc = import_client(args.stubs)
    # Importable once trainctl_client is.
    import grpc  # pylint: disable=import-outside-toplevel
    from google.protobuf import json_format  # pylint: disable=import-outside-toplevel

    spec = load_spec(args.spec)
    request_id = args.request_id or str(uuid.uuid4())
    try:
        with tc.Client(args.server, token=args.token, ca_file=args.ca) as client:
            job = client.submit(spec, request_id=request_id)
            print(f"submitted {job.id} (request id {request_id})", flush=True)
            job = client.wait(job.id, timeout=args.timeout)
            print(f"{job.id} {tc.state_name(job.state)}", flush=True)
            if job.error.message:
                print(f"error: {job.error.message}", flush=True)
            replica = primary_replica(job)
            if replica is not None:
                output = client.logs(job.id, replica)
                print(f"--- {replica} ---", flush=True)
                sys.stdout.write(output.decode("utf-8", errors="replace"))
                if output and not output.endswith(b"\n"):
                    sys.stdout.write("\n")
                sys.stdout.flush()
    except grpc.RpcError as e:
        print(f"error: {e.code().name}: {e.details()}", file=sys.stderr)
        return EXIT_ERROR
    except TimeoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except json_format.ParseError as e:  # not a JobSpec
        print(f"error: bad spec: {e}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK if tc.state_name(job.state) == "SUCCEEDED" else EXIT_JOB_FAILED


def main(argv=None):
    return run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
