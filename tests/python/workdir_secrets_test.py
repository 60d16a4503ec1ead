#!/usr/bin/python3
"""Tests the Python client's shipped working directories and project secrets.

    tests/python/workdir_secrets_test.py --bin-dir build/bin --stubs build/clients/python/gen

Without a cluster:
  1. trainctl_client.workdir.IgnoreRules reads .trainctlignore as common/ignore_rules.h does
     (the cases of tests/common/ignore_rules_test.cc);
  2. pack() is deterministic (the same digest whatever the files' times), lists entries sorted,
     a directory before its contents, with normalized modes, owners and times; keeps links as
     links and leaves FIFOs out;
  3. submit(workdir=...) refuses a missing directory, a file, and more than max_workdir_mb of
     un-ignored files (naming the largest and suggesting .trainctlignore), before sending
     anything.
Then on a MiniCluster (trainctld and one trainctl-agent on loopback):
  4. a job submitted with workdir=DIR runs ["./train.sh"], which prints a data file of DIR; a
     large file .trainctlignore lists does not count against max_workdir_mb=1; the same DIR
     again gives the same digest (the project holds it: nothing is sent);
  5. set_secret, then a job with secretRefs {"TOKEN": name} prints the value; list_secrets shows
     its name and size but not the value; delete_secret removes it.

Exit status: 0 when everything passed; 1 on any failure, with the reason on stderr.
$TRAINCTL_BIN_DIR, when set, wins over --bin-dir. TRAINCTL_KEEP_TEST_DIRS=1 keeps the cluster's
files and logs, which are kept anyway after a failure.
"""

import argparse
import os
import shutil
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
# No __pycache__ folders in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

# pylint: disable=wrong-import-position
from minicluster import MiniCluster  # noqa: E402
from pipeline_test import BINARIES, Failure, check, import_client  # noqa: E402

PROJECT = "team-py"
SECRET_VALUE = "tok-5e1f9a27c3"
TRAIN_SCRIPT = '#!/bin/sh\necho "data=$(cat data/value.txt)"\n'


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


def put(root, name, content, mode=0o644):
    """Writes `content` (str or bytes) to root/name, mode `mode`."""
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)
    os.chmod(path, mode)
    return path


def test_ignore_rules(wd):
    """The cases of tests/common/ignore_rules_test.cc."""
    rules = wd.IgnoreRules.parse("# checkpoints stay on the nodes\n\n*.ckpt\n/data\nlogs/\n"
                                 "src/gen/*.py\n__pycache__/\n")
    check(len(rules) == 5, f"expected 5 rules, got {len(rules)}")
    cases = [("a.ckpt", False, True), ("runs/1/a.ckpt", False, True),
             ("a.ckpt.txt", False, False), ("data", True, True), ("data/x.bin", False, True),
             ("src/data", True, False), ("logs", True, True), ("exp/logs", True, True),
             ("exp/logs/train.log", False, True), ("logs", False, False),
             ("src/gen/a.py", False, True), ("src/gen/sub/a.py", False, False),
             ("lib/src/gen/a.py", False, False), ("pkg/__pycache__/m.pyc", False, True),
             ("train.py", False, False)]
    rules2 = wd.IgnoreRules.parse("*.bin\n!keep.bin\n\\#notes\n\\!bang\ntrailing\\ \n"
                                  "spaced   \n**/cache\nout/**\na/**/z\nbuild/\n"
                                  "!build/keep.txt\nx[0-9]?.[!c]\n")
    cases2 = [("x.bin", False, True), ("keep.bin", False, False),
              ("deep/keep.bin", False, False), ("#notes", False, True), ("!bang", False, True),
              ("trailing ", False, True), ("spaced", False, True), ("cache", True, True),
              ("x/y/cache", False, True), ("out/a/b", False, True), ("out", True, False),
              ("a/z", False, True), ("a/b/c/z", False, True), ("b/a/z", False, False),
              ("build/keep.txt", False, True), ("x1y.d", False, True), ("x1y.c", False, False),
              ("xay.d", False, False)]
    for r, table in ((rules, cases), (rules2, cases2)):
        for path, is_dir, want in table:
            got = r.ignored(path, is_dir)
            check(got == want, f"ignored({path!r}, is_dir={is_dir}): expected {want}, got {got}")
    check(not wd.IgnoreRules.parse("").ignored("anything", False), "empty rules ignore a path")
    check(len(wd.IgnoreRules.parse("# only\n\n")) == 0, "a comment made a rule")
    check(wd.IgnoreRules.parse("*.tmp\r\n").ignored("a.tmp", False), "CRLF line not read")
    print("PASS: .trainctlignore rules match the C++ reader's cases")


def test_pack(wd, client_module, tmp):
    """Deterministic archives: order, modes, owners and times normalized; links kept; FIFOs out."""
    src = os.path.join(tmp, "pack")
    put(src, "b.txt", "b")
    put(src, "a/run.sh", "#!/bin/sh\n", 0o700)
    put(src, "a/x.txt", "x", 0o600)
    put(src, "a.txt", "a")
    os.symlink("a/x.txt", os.path.join(src, "link"))
    os.mkfifo(os.path.join(src, "fifo"))

    def packed():
        manifest = wd.scan(src, 1 << 20)
        with wd.pack(src, manifest) as archive:
            data = archive.read_at(0, archive.size)
            check(len(data) == archive.size, "the archive is shorter than its size")
            return manifest, archive.digest, data

    manifest, digest, data = packed()
    check(manifest.skipped_special == ["fifo"],
          f"expected the FIFO left out, got {manifest.skipped_special}")
    for path in ("a", "a/run.sh", "b.txt"):
        os.utime(os.path.join(src, path), (12345, 67890))
    _, again, _ = packed()
    check(again == digest, f"new mtimes changed the digest: {digest} then {again}")
    check(digest.startswith("sha256:") and len(digest) == 71, f"bad digest {digest}")

    path = os.path.join(tmp, "pack.tar")
    with open(path, "wb") as f:
        f.write(data)
    with tarfile.open(path) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    check(names == ["a", "a/run.sh", "a/x.txt", "a.txt", "b.txt", "link"],
          f"unexpected archive order {names}")
    modes = {m.name: m.mode for m in members}
    check(modes == {"a": 0o755, "a/run.sh": 0o755, "a/x.txt": 0o644, "a.txt": 0o644,
                    "b.txt": 0o644, "link": 0o777}, f"unexpected modes {modes}")
    for m in members:
        check((m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", ""),
              f"{m.name}: not normalized: mtime {m.mtime} uid {m.uid} gid {m.gid} "
              f"uname {m.uname!r} gname {m.gname!r}")
    link = members[-1]
    check(link.issym() and link.linkname == "a/x.txt", f"link: {link.type} {link.linkname!r}")

    # The upload's messages: the first names the project, digest and size; none over 1 MiB.
    put(src, "big.bin", os.urandom((2 << 20) + 1))
    with wd.pack(src, wd.scan(src, 3 << 20)) as archive:
        messages = list(client_module._upload_requests("p", archive))
        sizes = [len(m.data) for m in messages]
        check(sizes == [1 << 20, 1 << 20, archive.size - (2 << 20)],
              f"a {archive.size}-byte archive went in messages of {sizes} bytes")
        head = messages[0]
        check((head.project, head.digest, head.size_bytes) == ("p", archive.digest, archive.size),
              f"the first message names {head.project!r} {head.digest!r} {head.size_bytes}")
        check(all(not (m.project or m.digest or m.size_bytes) for m in messages[1:]),
              "a later message repeats the project, digest or size")
    print(f"PASS: pack() is deterministic ({digest[:19]}...) and normalized")


def test_refusals(cluster_address, tc, tmp):
    """What cannot be shipped is refused with WorkdirError, naming it, before anything is sent."""
    spec = {"displayName": "refused", "workerPools": [{
        "name": "main", "replicaCount": 1, "command": ["./train.sh"],
        "resources": {"cpu": 0.1, "memoryMb": 32}}]}
    big = os.path.join(tmp, "big")
    put(big, "train.sh", TRAIN_SCRIPT, 0o755)
    put(big, "data/value.txt", "big")
    put(big, "weights.bin", b"\0" * (2 << 20))
    put(big, "old.ckpt", b"\0" * (3 << 20))
    put(big, ".trainctlignore", "*.ckpt\n")
    # Nothing listens here: a refusal before any call, or the test would see UNAVAILABLE.
    with tc.Client(cluster_address) as client:
        for where, want in ((os.path.join(tmp, "nowhere"), "nowhere"),
                            (os.path.join(big, "train.sh"), "is not a directory"),
                            (big, "weights.bin (2 MiB)")):
            try:
                client.submit(spec, workdir=where, max_workdir_mb=1, retries=0)
            except tc.WorkdirError as e:
                check(want in str(e), f"workdir={where}: {want!r} not in the error: {e}")
                if where == big:
                    check(".trainctlignore" in str(e) and "old.ckpt" not in str(e),
                          f"the error does not suggest .trainctlignore, or names an ignored "
                          f"file: {e}")
                    check(isinstance(e, ValueError), "WorkdirError is no ValueError")
            else:
                raise Failure(f"workdir={where} was not refused")
        if os.geteuid() != 0:
            os.chmod(os.path.join(big, "weights.bin"), 0)
            try:
                client.submit(spec, workdir=big, max_workdir_mb=10, retries=0)
            except tc.WorkdirError as e:
                check("weights.bin" in str(e), f"the unreadable file is not named: {e}")
            else:
                raise Failure("an unreadable file was not refused")
    print("PASS: a missing directory, a file and too many MiB are refused, naming them")


def job_log(client, tc, job, timeout=90):
    done = client.wait(job.id, timeout=timeout)
    log = client.logs(job.id, done.replicas[0].name).decode(errors="replace")
    check(tc.state_name(done.state) == "SUCCEEDED",
          f"job {job.id} ended {tc.state_name(done.state)}: {done.error}\nlog: {log}")
    return done, log


def test_workdir_job(cluster, tc, tmp):
    """A job runs ./train.sh from its shipped directory; an ignored big file is not counted."""
    src = os.path.join(tmp, "src")
    put(src, "train.sh", TRAIN_SCRIPT, 0o755)
    put(src, "data/value.txt", "shipped-7c2e")
    put(src, "old.ckpt", b"x" * (3 << 20))
    put(src, "outputs/run.log", "left behind")
    put(src, ".trainctlignore", "# not shipped\n*.ckpt\noutputs/\n")
    spec = {"displayName": "shipped", "workerPools": [{
        "name": "main", "replicaCount": 1, "command": ["./train.sh"],
        "resources": {"cpu": 0.1, "memoryMb": 32}}]}
    with tc.Client(cluster.grpc_address) as client:
        job = client.submit(spec, workdir=src, max_workdir_mb=1)
        check(job.spec.workdir.startswith("sha256:"),
              f"job {job.id} has no workdir digest: {job.spec.workdir!r}")
        _, log = job_log(client, tc, job)
        check("data=shipped-7c2e" in log, f"job {job.id}'s log lacks the data file: {log!r}")
        # The node's copy holds what was shipped, and not what .trainctlignore lists.
        tree = os.path.join(cluster.agent_work_dir(0), "workdirs", job.id)
        check(os.path.isfile(os.path.join(tree, "train.sh")), f"no train.sh in {tree}")
        check(not os.path.exists(os.path.join(tree, "old.ckpt")) and
              not os.path.exists(os.path.join(tree, "outputs")),
              f"ignored files reached the node: {sorted(os.listdir(tree))}")
        print(f"PASS: job {job.id} ran ./train.sh from its workdir: {log.strip()!r}")

        # The same bytes again: the project holds them (GetWorkdir: nothing is sent, so the
        # answer is no deduplicated upload), and the job gets the same digest.
        held = client.upload_workdir(src, max_workdir_mb=1)
        check(held.digest == job.spec.workdir and not held.deduplicated,
              f"the same directory gave {held}, not the held {job.spec.workdir}")
        again = client.submit(spec, workdir=src, max_workdir_mb=1)
        check(again.spec.workdir == job.spec.workdir,
              f"a resubmit got workdir {again.spec.workdir}, not {job.spec.workdir}")
        job_log(client, tc, again)
    print("PASS: the same directory again has the same digest")

    # Several MiB go in several messages, each at most 1 MiB; the project keeps them once.
    large = os.path.join(tmp, "large")
    put(large, "blob.bin", os.urandom((2 << 20) + 12345))
    put(large, "train.sh", "#!/bin/sh\nwc -c < blob.bin\n", 0o755)
    with tc.Client(cluster.grpc_address) as client:
        first = client.upload_workdir(large, project=PROJECT, max_workdir_mb=3)
        check(first.project == PROJECT and first.size_bytes > (2 << 20) and
              not first.deduplicated, f"the upload of {large} gave {first}")
        again = client.upload_workdir(large, project=PROJECT, max_workdir_mb=3)
        check((again.digest, again.upload_time) == (first.digest, first.upload_time),
              f"the same large directory gave {again}, not the held {first}")
        job = client.submit({"displayName": "large", "project": PROJECT, "workerPools": [{
            "name": "main", "replicaCount": 1, "command": ["./train.sh"],
            "resources": {"cpu": 0.1, "memoryMb": 32}}]}, workdir=large, max_workdir_mb=3)
        check(job.spec.workdir == first.digest, f"job {job.id} got {job.spec.workdir}")
        _, log = job_log(client, tc, job)
        check(log.strip() == str((2 << 20) + 12345), f"job {job.id} saw blob.bin as {log!r}")
    print(f"PASS: {first.size_bytes} bytes uploaded in 1 MiB messages, unpacked whole")


def test_secrets(cluster, grpc, tc):
    """A secret reaches the replica's environment, and no read; a deleted one is gone."""
    with tc.Client(cluster.grpc_address) as client:
        secret = client.set_secret(PROJECT, "api-token", SECRET_VALUE)
        check(secret.name == "api-token" and secret.size_bytes == len(SECRET_VALUE),
              f"set_secret returned {secret}")
        listed = client.list_secrets(PROJECT)
        check([(s.name, s.size_bytes) for s in listed] == [("api-token", len(SECRET_VALUE))],
              f"list_secrets: {listed}")
        check(all(SECRET_VALUE not in str(s) for s in listed + [secret]),
              "a read returned the secret's value")
        print("PASS: set_secret and list_secrets show the name and size, not the value")

        spec = {"displayName": "uses-a-secret", "project": PROJECT, "workerPools": [{
            "name": "main", "replicaCount": 1, "command": ["/bin/sh", "-c", 'echo "token=$TOKEN"'],
            "secretRefs": {"TOKEN": "api-token"}, "resources": {"cpu": 0.1, "memoryMb": 32}}]}
        job = client.submit(spec)
        done, log = job_log(client, tc, job)
        check(f"token={SECRET_VALUE}" in log, f"job {job.id}'s log lacks the secret: {log!r}")
        check(SECRET_VALUE not in str(done), f"job {job.id} as read holds the secret's value")
        print(f"PASS: job {job.id} saw the secret in $TOKEN")

        deleted = client.delete_secret(PROJECT, "api-token")
        check(deleted.name == "api-token", f"delete_secret returned {deleted}")
        check(client.list_secrets(PROJECT) == [], "the secret is listed after its delete")
        try:
            client.delete_secret(PROJECT, "api-token", retries=0)
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.NOT_FOUND,
                  f"a second delete: expected NOT_FOUND, got {e.code().name}: {e.details()}")
        else:
            raise Failure("a deleted secret was deleted again")
        try:
            client.submit(spec, retries=0)
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and "api-token" in e.details(),
                  f"a submit naming the deleted secret: {e.code().name}: {e.details()}")
        else:
            raise Failure("a job naming a deleted secret was accepted")
    print("PASS: delete_secret removed it; a job naming it is refused")


def main():
    args = parse_args()
    missing = [b for b in BINARIES if not os.access(os.path.join(args.bin_dir, b), os.X_OK)]
    if missing:
        print(f"FAIL: not in --bin-dir {args.bin_dir}: {', '.join(missing)}", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="trainctl-py-workdir-")
    ok = False
    try:
        grpc, tc = import_client(args.stubs)
        # pylint: disable=import-outside-toplevel
        from trainctl_client import client as client_module, workdir as wd
        test_ignore_rules(wd)
        test_pack(wd, client_module, tmp)
        test_refusals("127.0.0.1:1", tc, tmp)
        with MiniCluster(args.bin_dir, agents=1, http=False) as cluster:
            print(f"cluster at {cluster.grpc_address}, files in {cluster.workdir}")
            test_workdir_job(cluster, tc, tmp)
            test_secrets(cluster, grpc, tc)
        ok = True
    except (Failure, RuntimeError) as e:  # RuntimeError: the cluster did not come up
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        if ok or not os.environ.get("TRAINCTL_KEEP_TEST_DIRS"):
            shutil.rmtree(tmp, ignore_errors=True)
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
