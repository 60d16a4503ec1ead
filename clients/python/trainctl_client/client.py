"""A small Python client of the trainctl job API (trainctl.v1.JobService, and SecretService
and WorkdirService for project secrets and shipped working directories) over gRPC.

    client = Client("127.0.0.1:7070")              # or "a:7070,b:7070": trainctld replicas
    job = client.submit({"displayName": "hello", "workerPools": [...]})
    job = client.wait(job.id)                      # follows WatchJob to a terminal state
    print(client.logs(job.id, job.replicas[0].name).decode())
    job = client.submit(spec, workdir="./src")     # replicas start in a copy of ./src
    client.set_secret("team-a", "wandb", "...")    # for workerPools[].secretRefs
    client.hold(job.id, "dataset not ready")       # QUEUED, not admitted until released
    client.update(job.id, priority=5)              # also queue_timeout, labels, remove_labels
    client.release(job.id); client.requeue(job.id, "node maintenance")

Specs are dicts in protobuf's JSON mapping (the shape of spec files and of
`trainctl get -o json`), or JobSpec messages. submit() sends a request id (AIP-155) and retries
a create that may not have arrived with that same id, so a retry never creates a second job.
submit(spec, workdir=DIR) first ships DIR (less what its .trainctlignore lists; see workdir.py)
as a tar archive, unless the job's project holds those bytes already, and every replica starts
in a read-only copy of it.

The generated stubs (trainctl/v1/job_pb2.py, job_pb2_grpc.py) must be importable: put the
directory that holds `trainctl/` on sys.path, or name it in $TRAINCTL_PYTHON_STUBS before this
package is imported.
"""

import random
import re
import time
import uuid

import grpc
from google.protobuf import json_format

from trainctl.v1 import job_pb2
from trainctl.v1 import job_pb2_grpc
from trainctl_client import workdir as _workdir
from trainctl_client.workdir import WorkdirError

__all__ = ["Client", "TERMINAL_STATES", "WorkdirError", "state_name"]

# The states a job never leaves.
TERMINAL_STATES = frozenset((job_pb2.JOB_STATE_SUCCEEDED, job_pb2.JOB_STATE_FAILED,
                             job_pb2.JOB_STATE_CANCELLED))

# Errors after which the same call may succeed: the server restarts, is overloaded, or the
# connection broke. A watch is simply opened again after them.
_WATCH_TRANSIENT = frozenset((grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNKNOWN,
                              grpc.StatusCode.INTERNAL, grpc.StatusCode.ABORTED,
                              grpc.StatusCode.CANCELLED, grpc.StatusCode.RESOURCE_EXHAUSTED,
                              grpc.StatusCode.DEADLINE_EXCEEDED))
# Errors after which a unary call is sent again: the request may not have reached the server.
_RETRYABLE = frozenset((grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED))

_INITIAL_BACKOFF = 0.2
_MAX_BACKOFF = 2.0
# The longest a single unary call may take.
_RPC_TIMEOUT = 30.0
# wait(): a server never reached within this long is given up on (a wrong address).
_CONNECT_TIMEOUT = 15.0
# ReadLogs chunk size.
_LOG_CHUNK = 1 << 20
# The most data one UploadWorkdir message carries.
_UPLOAD_CHUNK = 1 << 20
# An upload may take _RPC_TIMEOUT plus a second per this many bytes.
_UPLOAD_MIN_RATE = 1 << 20
# The project of a spec that names none.
_DEFAULT_PROJECT = "default"
# The trailer in which a standby trainctld names the leader's address.
_LEADER_TRAILER = "trainctl-leader"
# Redirects followed at once in a row; after that, the usual backoff.
_MAX_REDIRECTS = 3


def _address_list(address):
    """"a:7070,b:7070" (or a list of addresses) as ["a:7070", "b:7070"]."""
    items = address.split(",") if isinstance(address, str) else list(address)
    out = [a.strip() for a in items if a.strip()]
    if not out:
        raise ValueError(f"no trainctld address in {address!r}: give HOST:PORT[,HOST:PORT...]")
    return out


def state_name(state):
    """"SUCCEEDED" for JOB_STATE_SUCCEEDED, and so on."""
    return job_pb2.JobState.Name(state).removeprefix("JOB_STATE_")


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)?")
_DURATION_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration_json(text):
    """"5m", "1h30m" or 300 (a spec file's durations) as the JSON mapping's "300s".

    Anything else comes back unchanged, for the JSON parser to refuse with the field's name.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str) or not text:
        return text
    total_ms = 0.0
    pos = 0
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        # A bare number counts as seconds, alone only.
        if m is None or (m.group(2) is None and (pos > 0 or m.end() < len(text))):
            return text  # not ours to judge: the JSON parser names the field
        total_ms += float(m.group(1)) * _DURATION_UNIT_MS[m.group(2) or "s"]
        pos = m.end()
    ms = round(total_ms)
    return f"{ms // 1000}.{ms % 1000:03d}s"


def _spec_json(value, descriptor):
    """A copy of a spec dict with every Duration written as the JSON mapping wants it.

    Spec files, as `trainctl submit` reads them, write durations as "30s", "500ms", "5m" or
    "1h30m"; protobuf's JSON mapping takes seconds alone ("300s").
    """
    if not isinstance(value, dict):
        return value
    fields = {}
    for field in descriptor.fields:
        fields[field.name] = field
        fields[field.json_name] = field
    out = {}
    for key, item in value.items():
        field = fields.get(key)
        message = field.message_type if field is not None else None
        if message is None or message.GetOptions().map_entry:
            out[key] = item
        elif message.full_name == "google.protobuf.Duration":
            out[key] = _duration_json(item)
        elif isinstance(item, list):
            out[key] = [_spec_json(i, message) for i in item]
        else:
            out[key] = _spec_json(item, message)
    return out


def _upload_requests(project, archive):
    """The UploadWorkdir messages of a packed archive: the first names the project, digest and
    size, and each carries up to 1 MiB of the archive, in order. Read by offset, so that the
    messages of an abandoned try never move those of the next."""
    offset = 0
    while True:
        data = archive.read_at(offset, _UPLOAD_CHUNK)
        if not data:
            return
        if offset == 0:
            yield job_pb2.UploadWorkdirRequest(project=project, digest=archive.digest,
                                               size_bytes=archive.size, data=data)
        else:
            yield job_pb2.UploadWorkdirRequest(data=data)
        offset += len(data)


def _backoff(attempt):
    """Seconds to pause before retry number `attempt` (0, 1, ...): exponential, jittered."""
    delay = min(_INITIAL_BACKOFF * (2 ** min(attempt, 16)), _MAX_BACKOFF)
    return delay * random.uniform(0.8, 1.2)


class Client:
    """A connection to trainctld.

    address: "HOST:PORT", or several ("a:7070,b:7070", or a list): trainctld replicas sharing
    one database, one leading. A standby answers every call UNAVAILABLE naming the leader; the
    client then sends the call there at once (also to a leader not in the list), and an address
    that cannot be reached moves it to the next one. `address` is the one in use. ca_file: PEM
    CA certificates the server's certificate must chain to (each server's certificate must name
    the address it is reached by); the connection is TLS when given, plaintext (for a server on
    loopback) otherwise. token: a bearer token, sent as `authorization: Bearer TOKEN` with
    every call.
    """

    def __init__(self, address, token=None, ca_file=None):
        self.addresses = _address_list(address)
        # gRPC's own reconnect backoff grows to minutes; keep it in step with ours, so that a
        # restarted server is seen again within seconds of coming back.
        self._options = [("grpc.initial_reconnect_backoff_ms", int(_INITIAL_BACKOFF * 1000)),
                         ("grpc.min_reconnect_backoff_ms", int(_INITIAL_BACKOFF * 1000)),
                         ("grpc.max_reconnect_backoff_ms", int(_MAX_BACKOFF * 1000))]
        self._credentials = None
        if ca_file:
            with open(ca_file, "rb") as f:
                self._credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._channels = {}
        self._redirects = 0
        self._use(self.addresses[0])

    def _use(self, address):
        """Sends the next calls to `address`, on its channel (made at its first use)."""
        channel = self._channels.get(address)
        if channel is None:
            if self._credentials is not None:
                channel = grpc.secure_channel(address, self._credentials, options=self._options)
            else:
                channel = grpc.insecure_channel(address, options=self._options)
            self._channels[address] = channel
        self.address = address
        self._jobs = job_pb2_grpc.JobServiceStub(channel)
        self._secrets = job_pb2_grpc.SecretServiceStub(channel)
        self._workdirs = job_pb2_grpc.WorkdirServiceStub(channel)

    def _follow(self, error):
        """After `error` from a call to self.address: True to send it again at once.

        A standby's UNAVAILABLE names the leader in its trailer: the client moves there (True,
        a few times in a row at most). Otherwise, with several addresses, an UNAVAILABLE moves
        the client to the next address (False: the caller backs off first).
        """
        if error.code() != grpc.StatusCode.UNAVAILABLE:
            return False
        leader = None
        trailers = getattr(error, "trailing_metadata", None)
        for key, value in (trailers() if trailers is not None else None) or ():
            if key == _LEADER_TRAILER:
                leader = value
        if leader and leader != self.address:
            self._use(leader)
            self._redirects += 1
            if self._redirects <= _MAX_REDIRECTS:
                return True
        self._redirects = 0
        if len(self.addresses) > 1 and not leader:
            at = self.addresses.index(self.address) if self.address in self.addresses else -1
            self._use(self.addresses[(at + 1) % len(self.addresses)])
        return False

    def close(self):
        for channel in self._channels.values():
            channel.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    # --- Calls ---------------------------------------------------------------------------------

    def _unary(self, method, request, retries, service="_jobs"):
        """Calls `method` (its name) of `service` (the attribute of its stub: _jobs, _secrets,
        _workdirs), sending it again on UNAVAILABLE or DEADLINE_EXCEEDED, and at once to the
        leader a standby names."""
        return self._retrying(
            lambda: getattr(getattr(self, service), method)(request, metadata=self._metadata,
                                                            timeout=_RPC_TIMEOUT), retries)

    def _retrying(self, call, retries):
        """call()'s result: call() makes one try on the stubs of self.address; it is tried again
        as _unary says."""
        attempt = 0
        while True:
            try:
                result = call()
                self._redirects = 0
                return result
            except grpc.RpcError as e:
                if self._follow(e):
                    continue
                if e.code() not in _RETRYABLE or attempt >= retries:
                    raise
            time.sleep(_backoff(attempt))
            attempt += 1

    def submit(self, spec, request_id=None, retries=5, workdir=None, max_workdir_mb=100):
        """Creates a job from `spec` (a JSON-mapping dict or a JobSpec); returns the Job.

        A dict may write durations as spec files do ("5m", "1h30m", "500ms"). A dict that is no
        JobSpec raises google.protobuf.json_format.ParseError, naming the field.

        workdir: a directory to ship with the job (as upload_workdir() does, in the spec's
        project, "default" when it names none); the job's spec.workdir is then its digest, and
        every replica starts in a read-only copy of it. At most `max_workdir_mb` MiB of files
        (1..10240), less what its .trainctlignore lists. WorkdirError, before anything is sent,
        for a directory that cannot be shipped: missing, not a directory, a file that cannot be
        read, or too large (naming the largest files). A JobSpec given is not changed.

        The request carries `request_id` (a new UUID when None). A create that failed with
        UNAVAILABLE or DEADLINE_EXCEEDED may still have created the job, so it is sent again
        with the same id, up to `retries` times: the server answers a repeat with the job the
        first one created. Other errors (INVALID_ARGUMENT for a bad spec, ALREADY_EXISTS for
        the id of another spec) raise grpc.RpcError at once.
        """
        if isinstance(spec, job_pb2.JobSpec):
            message = spec
        else:
            message = json_format.ParseDict(_spec_json(spec, job_pb2.JobSpec.DESCRIPTOR),
                                            job_pb2.JobSpec())
        if workdir is not None:
            shipped = self.upload_workdir(workdir, message.project or _DEFAULT_PROJECT,
                                          max_workdir_mb=max_workdir_mb, retries=retries)
            copy = job_pb2.JobSpec()
            copy.CopyFrom(message)
            copy.workdir = shipped.digest
            message = copy
        request = job_pb2.CreateJobRequest(spec=message,
                                           request_id=request_id or str(uuid.uuid4()))
        return self._unary("CreateJob", request, retries)

    def get(self, job_id, retries=5):
        """The Job with this id (grpc.RpcError NOT_FOUND when there is none)."""
        return self._unary("GetJob", job_pb2.GetJobRequest(id=job_id), retries)

    def cancel(self, job_id, retries=5):
        """Cancels the job (idempotent); returns it as the cancel left it."""
        return self._unary("CancelJob", job_pb2.CancelJobRequest(id=job_id), retries)

    def resize(self, job_id, retries=5):
        """Grows a shrunk elastic job back toward its spec's size: its gang restarts now with
        every removed replica there is room for. grpc.RpcError FAILED_PRECONDITION, saying why,
        when it cannot grow now."""
        return self._unary("ResizeJob", job_pb2.ResizeJobRequest(id=job_id), retries)

    def hold(self, job_id, reason="", retries=5):
        """Keeps a QUEUED job from being admitted until release(); it holds back no job behind
        it. `reason` (at most 1024 characters) is shown with the job. Returns the job, held.
        grpc.RpcError FAILED_PRECONDITION for a job that is not QUEUED or is held already."""
        return self._unary("HoldJob", job_pb2.HoldJobRequest(id=job_id, reason=reason), retries)

    def release(self, job_id, retries=5):
        """Lets a held job be admitted again; its queueTimeout counts afresh from now. Returns the
        job. grpc.RpcError FAILED_PRECONDITION for a job that is not held."""
        return self._unary("ReleaseJob", job_pb2.ReleaseJobRequest(id=job_id), retries)

    def update(self, job_id, priority=None, queue_timeout=None, labels=None, remove_labels=(),
               retries=5):
        """Changes a QUEUED job: its priority (-1000..1000), its scheduling.queueTimeout (a
        datetime.timedelta, or seconds as a number), labels to set (a dict) and label keys to
        remove. Arguments left at None (or empty) are left unchanged; at least one change is
        needed (ValueError otherwise). Returns the job as changed. grpc.RpcError
        FAILED_PRECONDITION for a job that is not QUEUED, INVALID_ARGUMENT naming the field."""
        request = job_pb2.UpdateJobRequest(id=job_id, labels=dict(labels or {}),
                                           remove_labels=list(remove_labels or ()))
        if priority is not None:
            request.priority = int(priority)
        if queue_timeout is not None:
            seconds = (queue_timeout.total_seconds() if hasattr(queue_timeout, "total_seconds")
                       else float(queue_timeout))
            request.queue_timeout.FromNanoseconds(int(round(seconds * 1e9)))
        if (priority is None and queue_timeout is None and not request.labels
                and not request.remove_labels):
            raise ValueError("update needs at least one change: priority, queue_timeout, labels "
                             "or remove_labels")
        return self._unary("UpdateJob", request, retries)

    def requeue(self, job_id, reason="", retries=5):
        """Sends a PENDING or RUNNING job back to the queue as a preemption with no preemptor:
        its replicas get the preemption notice (carrying `reason`) to checkpoint, the attempt
        ends charged to no budget, and it waits in its own place. Returns the job.
        grpc.RpcError FAILED_PRECONDITION for a job in another state."""
        return self._unary("RequeueJob", job_pb2.RequeueJobRequest(id=job_id, reason=reason),
                           retries)

    def delete(self, job_id, retries=5):
        """Deletes a job that ended, with its attempts, runs and events.

        grpc.RpcError FAILED_PRECONDITION while the job is live (cancel it first). A retry
        after a reply that was lost may find the job gone already: NOT_FOUND.
        """
        self._unary("DeleteJob", job_pb2.DeleteJobRequest(id=job_id), retries)

    # --- Working directories -------------------------------------------------------------------

    def upload_workdir(self, directory, project=_DEFAULT_PROJECT, max_workdir_mb=100,
                       retries=5):
        """Ships `directory` to the project for jobs to run in; returns the Workdir (its digest,
        "sha256:<hex>", is what JobSpec.workdir takes). submit(spec, workdir=DIR) calls it.

        The directory is scanned (leaving out what its .trainctlignore lists, in gitignore
        syntax), packed deterministically into a tar archive in a temporary file and hashed.
        When the project holds that digest already (GetWorkdir), nothing is sent and the held
        Workdir comes back; otherwise the archive is streamed (UploadWorkdir, 1 MiB a message),
        and streamed again from its start on UNAVAILABLE or DEADLINE_EXCEEDED, up to `retries`
        times. WorkdirError, before anything is sent, for a missing directory, one that is not a
        directory, a file or directory that cannot be read, or more than `max_workdir_mb` MiB
        (1..10240) of files, naming the 5 largest; ValueError for a bad max_workdir_mb;
        grpc.RpcError for a refusal (INVALID_ARGUMENT: larger than trainctld's --max-workdir-mb).
        """
        if isinstance(max_workdir_mb, bool) or not isinstance(max_workdir_mb, int) or \
                not 1 <= max_workdir_mb <= 10240:
            raise ValueError(f"max_workdir_mb: a whole number of MiB, 1..10240, not "
                             f"{max_workdir_mb!r}")
        manifest = _workdir.scan(directory, max_workdir_mb << 20)
        with _workdir.pack(directory, manifest) as archive:
            try:
                return self._unary("GetWorkdir", job_pb2.GetWorkdirRequest(
                    project=project, digest=archive.digest), retries, service="_workdirs")
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.NOT_FOUND:
                    raise
            timeout = _RPC_TIMEOUT + archive.size / _UPLOAD_MIN_RATE
            return self._retrying(
                lambda: self._workdirs.UploadWorkdir(_upload_requests(project, archive),
                                                     metadata=self._metadata, timeout=timeout),
                retries)

    # --- Project secrets -----------------------------------------------------------------------

    def set_secret(self, project, name, value, retries=5):
        """Creates or replaces the project's secret `name` (1..253 of [A-Za-z0-9_.-], starting
        with a letter or digit) with `value` (1 byte..64 KiB of UTF-8 without NUL), for jobs to
        name in workerPools[].secretRefs; returns the Secret (name and size, never the value).
        grpc.RpcError INVALID_ARGUMENT for a bad name or value, PERMISSION_DENIED for a caller
        who may not manage the project's secrets."""
        return self._unary("SetSecret", job_pb2.SetSecretRequest(
            project=project, name=name, value=value), retries, service="_secrets")

    def list_secrets(self, project, retries=5):
        """The project's secrets (Secret messages: name, size_bytes, update_time; no value), by
        name."""
        response = self._unary("ListSecrets", job_pb2.ListSecretsRequest(project=project),
                               retries, service="_secrets")
        return list(response.secrets)

    def delete_secret(self, project, name, retries=5):
        """Deletes the project's secret; returns it as it was. grpc.RpcError NOT_FOUND when the
        project has no such secret (also for a retry after a reply that was lost). Jobs that
        name it fail their next launch with an error naming it."""
        return self._unary("DeleteSecret", job_pb2.DeleteSecretRequest(project=project, name=name),
                           retries, service="_secrets")

    # --- Watching and logs ---------------------------------------------------------------------

    def wait(self, job_id, timeout=None):
        """Follows WatchJob until the job is SUCCEEDED, FAILED or CANCELLED; returns that Job.

        A watch that breaks (a server restart) is opened again with backoff. Raises
        TimeoutError once `timeout` seconds (None: no limit) have passed, and grpc.RpcError
        for a rejection (NOT_FOUND...) or a server never reached within 15 seconds.
        """
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout
        request = job_pb2.WatchJobRequest(id=job_id)
        last = None
        attempt = 0
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(self._timeout_message(job_id, timeout, last))
            stream = self._jobs.WatchJob(request, metadata=self._metadata, timeout=remaining)
            try:
                for job in stream:
                    last = job
                    attempt = 0
                    if job.state in TERMINAL_STATES:
                        # The server ends the stream anyway; do not wait for it.
                        stream.cancel()
                        return job
            except grpc.RpcError as e:
                if self._follow(e):
                    continue  # a standby named the leader: watch there at once
                code = e.code()
                if code == grpc.StatusCode.DEADLINE_EXCEEDED and deadline is not None and \
                        time.monotonic() >= deadline - 0.05:
                    raise TimeoutError(self._timeout_message(job_id, timeout, last)) from e
                if code not in _WATCH_TRANSIENT:
                    raise
                if last is None and code == grpc.StatusCode.UNAVAILABLE and \
                        time.monotonic() - start >= _CONNECT_TIMEOUT:
                    raise
            # The stream broke or ended before the job did: watch again.
            pause = _backoff(attempt)
            attempt += 1
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)

    @staticmethod
    def _timeout_message(job_id, timeout, last):
        what = f"timed out after {timeout}s waiting for job {job_id}"
        if last is not None:
            what += f" (last state {state_name(last.state)})"
        return what

    def logs(self, job_id, replica, attempt=0, restart=None, follow=False, retries=5):
        """A replica's captured stdout+stderr, read from its node in chunks.

        attempt: the attempt number (0: the current one). restart: the restart within the
        attempt (None: the latest run). Reads until the server says the run ended and every byte
        was returned; for a run still going, returns what there is so far, or with `follow`
        keeps reading until the run ends.
        """
        request = job_pb2.ReadLogsRequest(job_id=job_id, replica=replica, offset=0,
                                          max_bytes=_LOG_CHUNK, attempt=attempt)
        if restart is not None:
            request.restart = restart
        data = bytearray()
        idle = 0
        while True:
            response = self._unary("ReadLogs", request, retries)
            data += response.data
            request.offset = response.next_offset
            if response.complete:
                return bytes(data)
            if response.data:
                idle = 0
                continue
            if not follow:
                return bytes(data)
            time.sleep(_backoff(idle))
            idle += 1
