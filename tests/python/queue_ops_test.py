#!/usr/bin/python3
"""Tests the Python client's queue operations and dependencies on a real cluster.

    tests/python/queue_ops_test.py --bin-dir build/bin --stubs build/clients/python/gen

Without a cluster: update() with no change raises ValueError before sending anything.
Then on a MiniCluster (trainctld and one trainctl-agent on loopback):
  1. job A runs `sleep 60`; job B, submitted with dependsOn afterok A, stays QUEUED and its
     dependencies say A has not ended;
  2. hold(B, reason) holds it, naming the caller; a second hold is FAILED_PRECONDITION;
     update(B, priority, queue_timeout, labels) changes it; release(B) lets it go;
  3. requeue(A) is accepted for the running job; requeue(B), still QUEUED, is refused;
  4. cancelling A leaves B's afterok never met: B (dependencyPolicy FAIL) ends FAILED.

Exit status: 0 when everything passed; 1 on any failure, with the reason on stderr.
$TRAINCTL_BIN_DIR, when set, wins over --bin-dir.
"""

import os
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

# pylint: disable=wrong-import-position
from minicluster import MiniCluster, eventually  # noqa: E402
from pipeline_test import BINARIES, Failure, check, import_client, parse_args  # noqa: E402

PROJECT = "team-queue"


def job_spec(name, command, depends_on=None):
    spec = {"displayName": name, "project": PROJECT,
            "workerPools": [{"name": "chief", "replicaCount": 1, "command": command,
                             "resources": {"cpu": 0.1, "memoryMb": 32}}]}
    if depends_on:
        spec["dependsOn"] = depends_on
    return spec


def expect_error(grpc, code, call, what):
    try:
        call()
    except grpc.RpcError as e:
        check(e.code() == code, f"{what}: expected {code.name}, got {e.code().name}: {e.details()}")
        return
    raise Failure(f"{what}: expected {code.name}, it was accepted")


def test_offline(tc):
    client = tc.Client("127.0.0.1:1")
    try:
        client.update("j-1")
    except ValueError as e:
        check("at least one change" in str(e), f"update() without a change said {e}")
    else:
        raise Failure("update() without a change was sent")
    print("PASS: update() needs a change")


def test_queue_ops(cluster, grpc, tc, job_pb2):
    client = tc.Client(cluster.grpc_address)
    a = client.submit(job_spec("a", ["sleep", "60"]))
    b = client.submit(job_spec("b", ["true"],
                               [{"job": a.id, "condition": "DEPENDENCY_CONDITION_SUCCEEDED"}]))
    check(b.state == job_pb2.JOB_STATE_QUEUED, f"job {b.id} is {b.state}, not QUEUED")
    check(len(b.dependencies) == 1 and b.dependencies[0].job == a.id
          and not b.dependencies[0].met, f"job {b.id}'s dependencies: {b.dependencies}")
    print(f"PASS: {b.id} waits for {a.id}")

    held = client.hold(b.id, "dataset not ready")
    check(held.held and held.hold_reason == "dataset not ready", f"hold returned {held}")
    expect_error(grpc, grpc.StatusCode.FAILED_PRECONDITION,
                 lambda: client.hold(b.id, retries=0), "a second hold")
    updated = client.update(b.id, priority=7, queue_timeout=3600, labels={"team": "vision"})
    check(updated.priority == 7 and updated.spec.labels["team"] == "vision"
          and updated.spec.scheduling.queue_timeout.seconds == 3600, f"update returned {updated}")
    released = client.release(b.id)
    check(not released.held, f"release returned {released}")
    print(f"PASS: {b.id} held, updated and released")

    check(eventually(lambda: client.get(a.id).state == job_pb2.JOB_STATE_RUNNING, timeout=30),
          f"job {a.id} did not start")
    requeued = client.requeue(a.id, "testing requeue")
    check(requeued.id == a.id, f"requeue returned {requeued}")
    expect_error(grpc, grpc.StatusCode.FAILED_PRECONDITION,
                 lambda: client.requeue(b.id, retries=0), "requeue of a QUEUED job")
    print(f"PASS: {a.id} requeued; {b.id}, queued, cannot be")

    client.cancel(a.id)
    check(eventually(lambda: client.get(b.id).state == job_pb2.JOB_STATE_FAILED, timeout=60),
          f"job {b.id} did not fail once {a.id} was cancelled: {client.get(b.id)}")
    print(f"PASS: {b.id} failed once {a.id} could no longer succeed")


def main():
    args = parse_args()
    missing = [b for b in BINARIES if not os.access(os.path.join(args.bin_dir, b), os.X_OK)]
    if missing:
        print(f"FAIL: not in --bin-dir {args.bin_dir}: {', '.join(missing)}", file=sys.stderr)
        return 1
    try:
        grpc, tc = import_client(args.stubs)
        # pylint: disable=import-outside-toplevel
        from trainctl.v1 import job_pb2
        test_offline(tc)
        with MiniCluster(args.bin_dir, agents=1, http=False) as cluster:
            print(f"cluster at {cluster.grpc_address}, files in {cluster.workdir}")
            test_queue_ops(cluster, grpc, tc, job_pb2)
    except (Failure, RuntimeError) as e:  # RuntimeError: the cluster did not come up
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
