#!/usr/bin/python3
"""Tests examples/pipeline.py and the Python client's idempotent submit on a real local cluster.

    tests/python/pipeline_test.py --bin-dir build/bin --stubs build/clients/python/gen

It starts a MiniCluster (trainctld and one trainctl-agent on loopback), then:
  1. runs examples/pipeline.py against it and checks that it exits 0 and prints the job's
     SUCCEEDED state and its replica's output;
  2. submits one spec twice through trainctl_client with the same request id and checks that
     both answers are the same job; restarts trainctld with SIGKILL and checks that a third
     submit with that id still returns that job, that the id with another spec is refused with
     ALREADY_EXISTS, and that the cluster holds that one job alone;
  3. gives trainctl_client a list of addresses: one that is down and a standby stand-in that
     names trainctld as the leader (as a standby trainctld does), and checks that submit and
     wait get through to trainctld.

Exit status: 0 when everything passed; 1 on any failure, with the reason on stderr. $TRAINCTL_BIN_DIR, when set, wins over --bin-dir (as
for the C++ integration tests). TRAINCTL_KEEP_TEST_DIRS=1 keeps the cluster's files and logs,
which are kept anyway after a failure.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
PIPELINE = os.path.join(ROOT, "examples", "pipeline.py")
# No __pycache__ folders in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from minicluster import MiniCluster  # noqa: E402  pylint: disable=wrong-import-position

BINARIES = ("trainctld", "trainctl-agent", "trainctl-shim", "trainctl")


class Failure(Exception):
    """A check that did not hold."""


def check(cond, message):
    if not cond:
        raise Failure(message)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin-dir", default=os.environ.get("TRAINCTL_BIN_DIR"),
                   help="directory of trainctld, trainctl-agent, trainctl-shim and trainctl")
    p.add_argument("--stubs", default=os.environ.get("TRAINCTL_PYTHON_STUBS"),
                   help="directory holding the generated trainctl/v1/job_pb2.py")
    args = p.parse_args()
    if os.environ.get("TRAINCTL_BIN_DIR"):
        args.bin_dir = os.environ["TRAINCTL_BIN_DIR"]
    if not args.bin_dir or not args.stubs:
        p.error("--bin-dir and --stubs are required")
    return args


def import_client(stubs):
    sys.path.insert(0, os.path.abspath(stubs))
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    try:
        # pylint: disable=import-outside-toplevel
        import grpc
        import trainctl_client
    except ImportError as e:
        raise Failure(f"cannot import the client ({e}): it needs {sys.executable} with "
                      "python3-grpcio and python3-protobuf, and the stubs in --stubs") from e
    return grpc, trainctl_client


def echo_spec(name, line):
    return {
        "displayName": name,
        "workerPools": [{
            "name": "main",
            "replicaCount": 1,
            "command": ["/bin/sh", "-c"],
            "args": [f"echo {line}"],
            "resources": {"cpu": 0.1, "memoryMb": 64},
        }],
    }


def test_pipeline(cluster, stubs):
    """examples/pipeline.py submits, waits and prints the log; exit 0 on SUCCEEDED."""
    argv = [sys.executable, PIPELINE, "--server", cluster.grpc_address, "--stubs", stubs,
            "--timeout", "120"]
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=150, check=False,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    except subprocess.TimeoutExpired as e:
        raise Failure(f"examples/pipeline.py did not finish in {e.timeout}s") from e
    print(r.stdout, end="")
    what = f"examples/pipeline.py (exit {r.returncode}):\n{r.stdout}{r.stderr}"
    check(r.returncode == 0, f"expected exit 0 from {what}")
    check("SUCCEEDED" in r.stdout, f"no SUCCEEDED state in the output of {what}")
    check("hello from trainctl" in r.stdout, f"no replica output in the output of {what}")
    print("PASS: examples/pipeline.py")


def test_idempotent_submit(cluster, grpc, tc):
    """Raises Failure unless a request id creates one job, across a restart of trainctld."""
    request_id = str(uuid.uuid4())
    spec = echo_spec("idempotent", "once")
    with tc.Client(cluster.grpc_address) as client:
        first = client.submit(spec, request_id=request_id)
        check(first.request_id == request_id,
              f"job {first.id} came back without requestId {request_id!r} "
              f"(got {first.request_id!r})")
        second = client.submit(spec, request_id=request_id)
        check(second.id == first.id,
              f"a second submit with request id {request_id} created {second.id}, "
              f"not {first.id}")
        print(f"PASS: a repeated submit returns {first.id}")

        cluster.restart_daemon(signal.SIGKILL)
        # The channel reconnects; submit retries UNAVAILABLE with the same request id.
        third = client.submit(spec, request_id=request_id)
        check(third.id == first.id,
              f"after a restart of trainctld, a submit with request id {request_id} returned "
              f"{third.id}, not {first.id}")
        print(f"PASS: after SIGKILL and restart of trainctld, the submit returns {first.id}")

        other = echo_spec("idempotent", "another spec")
        try:
            job = client.submit(other, request_id=request_id)
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.ALREADY_EXISTS,
                  f"the request id with another spec: expected ALREADY_EXISTS, got "
                  f"{e.code().name}: {e.details()}")
        else:
            raise Failure(f"the request id with another spec was accepted: job {job.id}")
        print("PASS: the request id with another spec is ALREADY_EXISTS")

    r = cluster.cli("list", "-o", "json")
    check(r.returncode == 0, f"trainctl list failed: {r.stderr}")
    data = json.loads(r.stdout)
    jobs = data.get("jobs", []) if isinstance(data, dict) else data
    ids = [j["id"] for j in jobs if j.get("displayName") == "idempotent"]
    check(ids == [first.id], f"expected the one job {first.id} named idempotent, found {ids}")
    print("PASS: the cluster holds one job for the request id")

    # Once it ended, the job can be deleted; its request id then creates a new job.
    with tc.Client(cluster.grpc_address) as client:
        client.wait(first.id, timeout=60)
        client.delete(first.id)
        try:
            client.get(first.id, retries=0)
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.NOT_FOUND,
                  f"get after delete: expected NOT_FOUND, got {e.code().name}: {e.details()}")
        else:
            raise Failure(f"job {first.id} is still there after its delete")
        again = client.submit(spec, request_id=request_id)
        check(again.id != first.id,
              f"after its job was deleted, request id {request_id} returned the deleted job")
    print(f"PASS: {first.id} was deleted, and its request id created {again.id}")


class _Standby:
    """A stand-in for a standby trainctld: answers every call UNAVAILABLE, naming `leader` in
    the trainctl-leader trailer."""

    def __init__(self, grpc, leader):
        from concurrent import futures  # pylint: disable=import-outside-toplevel

        class Handler(grpc.GenericRpcHandler):
            def service(self, handler_call_details):
                def refuse(_request, context):
                    context.set_trailing_metadata((("trainctl-leader", leader),))
                    context.abort(grpc.StatusCode.UNAVAILABLE,
                                  f"trainctld is a standby; the leader is at {leader}")
                if handler_call_details.method.endswith("/WatchJob"):
                    return grpc.unary_stream_rpc_method_handler(refuse)
                return grpc.unary_unary_rpc_method_handler(refuse)

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers((Handler(),))
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def stop(self):
        self.server.stop(0)


def test_several_addresses(cluster, grpc, tc):
    """A client given a down address and a standby reaches the leader the standby names."""
    standby = _Standby(grpc, cluster.grpc_address)
    try:
        with tc.Client(f"127.0.0.1:1,{standby.address}") as client:
            job = client.submit(echo_spec("through-a-standby", "hi"))
            check(client.address == cluster.grpc_address,
                  f"the client talks to {client.address}, not to the leader "
                  f"{cluster.grpc_address} the standby named")
            done = client.wait(job.id, timeout=60)
            check(tc.state_name(done.state) == "SUCCEEDED",
                  f"job {job.id} ended {tc.state_name(done.state)}")
        with tc.Client([standby.address]) as client:
            check(client.get(job.id).id == job.id, "get through the standby alone failed")
    finally:
        standby.stop()
    print("PASS: a list with a down address and a standby reaches the leader")


def main():
    args = parse_args()
    missing = [b for b in BINARIES if not os.access(os.path.join(args.bin_dir, b), os.X_OK)]
    if missing:
        print(f"FAIL: not in --bin-dir {args.bin_dir}: {', '.join(missing)}", file=sys.stderr)
        return 1
    if not os.path.exists(os.path.join(args.stubs, "trainctl", "v1", "job_pb2.py")):
        print(f"FAIL: no trainctl/v1/job_pb2.py under --stubs {args.stubs} (the build's "
              "trainctl_python_stubs target writes them)", file=sys.stderr)
        return 1
    try:
        grpc, tc = import_client(args.stubs)
        with MiniCluster(args.bin_dir, agents=1, http=False) as cluster:
            print(f"cluster at {cluster.grpc_address}, files in {cluster.workdir}")
            test_pipeline(cluster, args.stubs)
            test_idempotent_submit(cluster, grpc, tc)
            test_several_addresses(cluster, grpc, tc)
    except (Failure, RuntimeError) as e:  # RuntimeError: the cluster did not come up
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
