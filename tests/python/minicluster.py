"""An in-machine trainctl cluster for Python tests.

MiniCluster starts a real trainctld and real trainctl-agents as separate processes on loopback,
each node with its own work dir, and runs the real `trainctl` CLI against them:

    with MiniCluster("build/bin", agents=2) as c:
        out = c.cli("submit", "-f", "examples/hello.yaml")
        ...
        c.restart_daemon()            # SIGKILL, then the same data dir and ports

Every agent gets host check thresholds of 0 GB and --health-check-interval 0, so the checks
pass on any CI disk, and runs replicas as root. Every wait polls with a deadline; nothing sleeps
"long enough". stop() ends every process the cluster started, by PID, and stops the replicas
left behind by the agents. The work dir holds each process's log (trainctld.log, agent-0.log,
...); a temporary one is removed by stop() unless TRAINCTL_KEEP_TEST_DIRS is set or the `with`
block raised.

Only the Python standard library is needed: the cluster is driven through the CLI.
"""

import fcntl
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

__all__ = ["MiniCluster", "eventually"]

# How long a start, a restart or a node waits for before the cluster gives up.
START_TIMEOUT = 30.0
# How long a process gets after SIGTERM before SIGKILL.
STOP_GRACE = 15.0


PORT_UNIT = 128
PORT_LOCK_DIR = "/tmp/trainctl-test-ports"


def take_port_block(size):
    """A block of at least `size` ports for one cluster's --port-range, as (flocked fds, "LO-HI").

    The same blocks as tests/integration/port_block.h: whole units of 128 ports from 10000 up,
    outside the host's ephemeral range (a port the kernel hands out on its own could be taken by
    another process's connection), each held with an flock on /tmp/trainctl-test-ports/<first
    port>, so clusters of tests running at the same time never share a port.
    """
    eph_lo, eph_hi = 32768, 60999
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            eph_lo, eph_hi = (int(v) for v in f.read().split())
    except (OSError, ValueError):
        pass
    units = [lo for lo in range(10000, 65536 - PORT_UNIT + 1, PORT_UNIT)
             if lo + PORT_UNIT - 1 < eph_lo or lo > eph_hi]
    need = -(-size // PORT_UNIT)
    os.makedirs(PORT_LOCK_DIR, exist_ok=True)
    try:
        os.chmod(PORT_LOCK_DIR, 0o1777)
    except OSError:
        pass
    start = random.randrange(len(units))
    for k in range(len(units)):
        first = (start + k) % len(units)
        run = units[first:first + need]
        if len(run) < need or run[-1] - run[0] != (need - 1) * PORT_UNIT:
            continue
        fds = []
        for lo in run:
            fd = os.open(os.path.join(PORT_LOCK_DIR, str(lo)), os.O_RDONLY | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                break
            fds.append(fd)
        if len(fds) == need:
            return fds, f"{run[0]}-{run[0] + need * PORT_UNIT - 1}"
        for fd in fds:
            os.close(fd)
    raise RuntimeError(f"no free block of {size} ports outside the ephemeral range")


def eventually(cond, timeout=20.0, interval=0.02):
    """Polls cond() until it returns a true value or `timeout` seconds pass.

    Returns the last value cond() returned (false when the deadline passed).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _tail(path, lines=30):
    return "\n".join(_read(path).splitlines()[-lines:])


class _Process:
    """A child process with stdout and stderr appended to a log file."""

    def __init__(self, argv, log_path):
        self.argv = list(argv)
        self.log_path = log_path
        with open(log_path, "ab") as log:
            # Its own session, so that signals meant for the test never reach it and the other
            # way round.
            self.popen = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self):
        return self.popen.pid

    def running(self):
        return self.popen.poll() is None

    def signal(self, sig):
        if self.running():
            self.popen.send_signal(sig)

    def wait(self, timeout):
        """Waits up to `timeout` seconds; returns the exit status, or None if still running."""
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace=STOP_GRACE):
        """SIGTERM, then SIGKILL after `grace` seconds; returns the exit status."""
        if not self.running():
            return self.popen.returncode
        self.signal(signal.SIGTERM)
        status = self.wait(grace)
        if status is None:
            self.signal(signal.SIGKILL)
            status = self.wait(10)
        return status


class MiniCluster:
    """trainctld plus `agents` trainctl-agents (node-0, node-1, ...) on 127.0.0.1."""

    def __init__(self, bin_dir, agents=1, cpus=4, memory_mb=4096, http=True,
                 workdir=None, daemon_args=(), agent_args=()):
        self.bin_dir = os.path.abspath(bin_dir)
        self.agents = agents
        self.cpus = cpus
        self.memory_mb = memory_mb
        self.http = http
        self.daemon_args = list(daemon_args)
        self.agent_args = list(agent_args)
        self._own_workdir = workdir is None
        if workdir is None:
            workdir = tempfile.mkdtemp(prefix="trainctl-py-")
        else:
            os.makedirs(workdir, exist_ok=True)
        self.workdir = os.path.abspath(workdir)
        # Replicas that run as other users pass through it to their agent's work dir.
        os.chmod(self.workdir, 0o711)
        self.data_dir = os.path.join(self.workdir, "scheduler")
        self.node_names = [f"node-{i}" for i in range(agents)]
        # Set by a `with` block that raised: the files stay for whoever reads the failure.
        self.keep_workdir = bool(os.environ.get("TRAINCTL_KEEP_TEST_DIRS"))
        self.grpc_address = None
        self.http_url = None
        self._http_address = None
        # trainctld's --port-range, held until stop() (see take_port_block).
        self._port_locks, self._port_range = take_port_block(512)
        # Agents' --state-dir on a tmpfs, unique to this cluster.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else self.workdir
        self._state_prefix = os.path.join(
            shm, f"{os.path.basename(self.workdir)}-{secrets.token_hex(3)}")
        self._daemon = None
        self._agents = []
        self._cli_counter = 0

    # --- Paths ---------------------------------------------------------------------------------

    def _bin(self, name):
        return os.path.join(self.bin_dir, name)

    def agent_work_dir(self, i):
        return os.path.join(self.workdir, self.node_names[i])

    def agent_state_dir(self, i):
        return f"{self._state_prefix}-{self.node_names[i]}"

    def daemon_log(self):
        return os.path.join(self.workdir, "trainctld.log")

    def agent_log(self, i):
        return os.path.join(self.workdir, f"agent-{i}.log")

    # --- Lifecycle -----------------------------------------------------------------------------

    def start(self):
        """Starts trainctld and every agent; returns once every node is connected and READY."""
        try:
            self._start_daemon()
            for i in range(self.agents):
                self._start_agent(i)
            self.wait_for_nodes()
        except BaseException:
            self.keep_workdir = True
            self.stop()
            raise
        return self

    def stop(self):
        """Stops every process the cluster started, by PID, and the agents' replicas."""
        for agent in self._agents:
            agent.stop()
        # Replicas outlive their agents (each has its trainctl-shim): stop them the way an
        # operator retiring the hosts would.
        for i in range(len(self._agents)):
            self._run([self._bin("trainctl-agent"), "--stop-replicas",
                       "--work-dir", self.agent_work_dir(i),
                       "--state-dir", self.agent_state_dir(i), "--stop-grace", "0s"],
                      timeout=60)
            shutil.rmtree(self.agent_state_dir(i), ignore_errors=True)
        self._agents = []
        if self._daemon is not None:
            self._daemon.stop()
            self._daemon = None
        for fd in self._port_locks:
            os.close(fd)
        self._port_locks = []
        if self.keep_workdir:
            print(f"cluster files kept in {self.workdir}", file=sys.stderr)
        elif self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def restart_daemon(self, sig=signal.SIGKILL):
        """Ends trainctld with `sig` and starts it again on the same data dir and ports.

        Returns once it serves again and every agent has reconnected.
        """
        if self._daemon is None:
            raise RuntimeError("trainctld is not running")
        self._daemon.signal(sig)
        status = self._daemon.wait(20)
        if status is None:
            raise RuntimeError(f"trainctld (pid {self._daemon.pid}) did not exit on "
                               f"signal {sig}")
        self._daemon = None
        self._start_daemon()
        self.wait_for_nodes()

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.keep_workdir = True
        self.stop()
        return False

    def _start_daemon(self):
        addr_file = os.path.join(self.data_dir, "trainctld.addr")
        http_file = os.path.join(self.data_dir, "trainctld.http-addr")
        for path in (addr_file, http_file):
            if os.path.exists(path):
                os.remove(path)
        # The first start picks free ports; a restart reuses them so that agents and clients
        # find the daemon again.
        argv = [self._bin("trainctld"), "--data-dir", self.data_dir,
                "--listen", self.grpc_address or "127.0.0.1:0",
                "--heartbeat-interval", "500ms", "--log-level", "debug",
                "--port-range", self._port_range]
        # Without http, no port at all: the default 127.0.0.1:7080 would collide between clusters.
        argv += ["--http-listen", (self._http_address or "127.0.0.1:0") if self.http else "off"]
        argv += self.daemon_args
        self._daemon = _Process(argv, self.daemon_log())

        def written():
            if not self._daemon.running():
                raise RuntimeError(
                    f"trainctld exited with status {self._daemon.popen.returncode}:\n"
                    f"{_tail(self.daemon_log())}")
            # Both files are written by rename: once one exists, it is whole.
            return os.path.exists(addr_file) and (
                not self.http or os.path.exists(http_file))

        if not eventually(written, START_TIMEOUT):
            raise RuntimeError(f"trainctld wrote no address file in {START_TIMEOUT:.0f}s:\n"
                               f"{_tail(self.daemon_log())}")
        self.grpc_address = _read(addr_file).strip()
        if self.http:
            self._http_address = _read(http_file).strip()
            self.http_url = f"http://{self._http_address}"

    def _start_agent(self, i):
        name = self.node_names[i]
        argv = [self._bin("trainctl-agent"), "--scheduler", self.grpc_address,
                "--node", name, "--work-dir", self.agent_work_dir(i),
                "--address", "127.0.0.1", "--cpus", str(self.cpus),
                "--memory-mb", str(self.memory_mb), "--gpus", "0", "--log-level", "debug",
                # Any CI disk passes; the periodic checks are off.
                "--check-disk-root-gb", "0", "--check-disk-shm-gb", "0",
                "--check-disk-cache-gb", "0", "--health-check-interval", "0",
                "--state-dir", self.agent_state_dir(i),
                "--default-run-as-user", "root", "--allow-root-replicas"]
        argv += self.agent_args
        self._agents.append(_Process(argv, self.agent_log(i)))

    # --- Nodes ---------------------------------------------------------------------------------

    def nodes(self):
        """The nodes as `trainctl nodes -o json` prints them (a list of dicts), or None."""
        r = self.cli("nodes", "-o", "json")
        if r.returncode != 0:
            return None
        try:
            data = json.loads(r.stdout)
        except ValueError:
            return None
        if isinstance(data, dict):
            data = data.get("nodes", [])
        return data

    def wait_for_nodes(self, timeout=START_TIMEOUT):
        """Waits until every node of the cluster is connected and READY."""
        last = []

        def ready():
            for i, agent in enumerate(self._agents):
                if not agent.running():
                    raise RuntimeError(
                        f"trainctl-agent {self.node_names[i]} exited with status "
                        f"{agent.popen.returncode}:\n{_tail(self.agent_log(i))}")
            nodes = self.nodes()
            if nodes is None:
                return False
            last[:] = nodes
            up = {n.get("name") for n in nodes
                  if n.get("connected") and n.get("state") in ("NODE_STATE_READY", "READY")}
            return up.issuperset(self.node_names)

        if not eventually(ready, timeout, interval=0.1):
            raise RuntimeError(f"nodes not READY within {timeout:.0f}s; last seen: "
                               f"{json.dumps(last)}\n--- trainctld.log ---\n"
                               f"{_tail(self.daemon_log())}")

    # --- CLI -----------------------------------------------------------------------------------

    def cli(self, *args, timeout=60):
        """Runs `trainctl --server ADDR ARGS...`; returns the CompletedProcess (text mode)."""
        argv = [self._bin("trainctl"), "--server", self.grpc_address, *map(str, args)]
        return self._run(argv, timeout=timeout)

    def _run(self, argv, timeout=60):
        try:
            return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            # subprocess.run killed it (by its PID) and reaped it. Its output comes as bytes.
            def text(b):
                return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
            return subprocess.CompletedProcess(
                argv, -1, text(e.stdout), text(e.stderr) + f"\ntimed out after {timeout}s")
