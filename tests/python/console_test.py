#!/usr/bin/python3
"""Tests trainctld's web console in a real browser (headless Chromium driven by Selenium).

    tests/python/console_test.py --bin-dir build/bin --artifacts build/test-artifacts/console

It starts a MiniCluster (trainctld with its HTTP port, and two trainctl-agents on loopback),
submits a short job through the REST API, then in the browser:
  1. #/jobs: waits until the job's row shows SUCCEEDED;
  2. #/jobs/{id}: the job's state, its replica's row, an event row, its log ("hello");
  2b. a second job's timeline (exit 3, restarted in place): two run bars, failed then succeeded;
  3. #/nodes: drains node-1 with its Drain button (a reason typed inline, then confirmed), and
     waits until the page shows it DRAINING or CORDONED and GET /v1/nodes/node-1 says so too;
  4. #/queue and #/projects: each renders its table (or its empty note) and no error banner;
  5. #/usage: the first job's project shows CPU-hours above zero and a chart bar (console_usage.py);
  6. a job array's page: its counts, its elements, an element's link back (console_arrays.py).
The console must log no JavaScript error, and no refusal by trainctld's Content-Security-Policy,
on the way.

Every page's screenshot goes to --artifacts (jobs.png, job.png, timeline.png, nodes.png,
queue.png, projects.png, usage.png, array.png); after a failure also failure.png, the page's source
(page.html), the browser's console log (console.log) and the cluster's daemon logs.

Exit status: 0 when everything passed; 77 (ctest's SKIP_RETURN_CODE) when Chromium
(/usr/bin/chromium), its driver (/usr/bin/chromedriver) or Selenium (python3-selenium) is not
installed; 1 on any failure, with the reason on stderr. $TRAINCTL_BIN_DIR, when set, wins over
--bin-dir. TRAINCTL_KEEP_TEST_DIRS=1 keeps the cluster's files, which are kept anyway after a
failure.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)

from minicluster import MiniCluster, eventually  # noqa: E402  pylint: disable=wrong-import-position
from console_usage import check_usage_page  # noqa: E402  pylint: disable=wrong-import-position
from console_arrays import check_array_page  # noqa: E402  pylint: disable=wrong-import-position

EXIT_SKIP = 77
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Debian's python3-selenium, for an interpreter other than Debian's own python3 (a virtualenv
# or pyenv one): the package is pure Python.
DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"

# Deadlines, in seconds.
JOB_DEADLINE = 120.0
PAGE_DEADLINE = 30.0
NODE_DEADLINE = 60.0

# The job: one replica that prints and exits 0.
JOB_SPEC = {
    "displayName": "console-hello",
    "project": "default",
    "workerPools": [{
        "name": "chief",
        "replicaCount": 1,
        "command": ["/bin/sh", "-c", "echo hello from the console test; sleep 2"],
        "resources": {"cpu": 0.1, "memoryMb": "64"},
    }],
    "scheduling": {"stopGracePeriod": "5s", "timeout": "120s"},
}
REPLICA = "chief-0"
DRAINED_NODE = "node-1"

# The timeline's job: its replica fails with status 3 on its first run (a marker file in its
# checkpoint directory remembers it) and restartPolicy ON_FAILURE restarts it in place; its second
# run succeeds.
RESTART_SPEC = {
    "displayName": "console-restart",
    "project": "default",
    "workerPools": [{
        "name": "chief",
        "replicaCount": 1,
        "command": ["/bin/sh", "-c",
                    'f="$TRAINCTL_CHECKPOINT_DIR/failed-once"; sleep 1; '
                    'if [ -e "$f" ]; then echo second run; exit 0; fi; '
                    'touch "$f"; echo first run fails; exit 3'],
        "resources": {"cpu": 0.1, "memoryMb": "64"},
    }],
    "scheduling": {"restartPolicy": "RESTART_POLICY_ON_FAILURE", "stopGracePeriod": "5s",
                   "timeout": "120s"},
}


class Failure(Exception):
    """A check that did not hold."""


def check(cond, message):
    if not cond:
        raise Failure(message)


def skip(reason):
    print(f"SKIPPED: {reason}", file=sys.stderr)
    sys.exit(EXIT_SKIP)


def import_selenium():
    """Returns the selenium modules the test uses, or skips when Selenium is not installed."""
    try:
        import selenium  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        if os.path.isdir(os.path.join(DEBIAN_DIST_PACKAGES, "selenium")):
            sys.path.append(DEBIAN_DIST_PACKAGES)
    try:
        # pylint: disable=import-outside-toplevel
        from selenium import webdriver
        from selenium.common.exceptions import TimeoutException, WebDriverException
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError as e:
        skip(f"Selenium is not installed (apt-get install python3-selenium): {e}")
    return webdriver, Service, By, WebDriverWait, TimeoutException, WebDriverException


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin-dir", default=os.environ.get("TRAINCTL_BIN_DIR"),
                   help="directory of trainctld, trainctl-agent, trainctl-shim and trainctl")
    p.add_argument("--artifacts", default=None,
                   help="directory for screenshots and, after a failure, the page source and "
                        "the browser's console log (default: a new temporary directory)")
    args = p.parse_args()
    if os.environ.get("TRAINCTL_BIN_DIR"):
        args.bin_dir = os.environ["TRAINCTL_BIN_DIR"]
    if not args.bin_dir:
        p.error("--bin-dir is required")
    if not args.artifacts:
        args.artifacts = tempfile.mkdtemp(prefix="trainctl-console-")
    return args


# --- REST --------------------------------------------------------------------------------------

# Loopback only: no proxy from the environment applies.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def rest(base, method, path, body=None, timeout=30):
    """Calls the REST API; returns (status, decoded JSON body or None)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json"})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, {"message": raw.decode(errors="replace")}


# --- The browser -------------------------------------------------------------------------------

class Browser:
    """Headless Chromium through chromedriver, with the helpers the checks need."""

    def __init__(self, artifacts):
        (webdriver, service_cls, self.By, self.WebDriverWait, self.TimeoutException,
         self.WebDriverException) = import_selenium()
        self.artifacts = artifacts
        self.profile = tempfile.mkdtemp(prefix="trainctl-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                    "--no-proxy-server", "--disable-dev-shm-usage", "--no-first-run",
                    "--disable-extensions", "--disable-background-networking",
                    f"--user-data-dir={self.profile}"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        log_path = os.path.join(artifacts, "chromedriver.log")
        try:
            service = service_cls(executable_path=CHROMEDRIVER, log_path=log_path)
        except TypeError:  # Selenium 4.11 and later name it log_output.
            service = service_cls(executable_path=CHROMEDRIVER, log_output=log_path)
        try:
            self.driver = webdriver.Chrome(service=service, options=options)
        except BaseException:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        self.driver.set_page_load_timeout(PAGE_DEADLINE)
        self.console = []   # every browser log entry read so far

    def quit(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def open(self, url):
        """Loads url; reloads it (twice at most) when Chromium dropped its scripts' requests on a
        change of the host's network (net::ERR_NETWORK_CHANGED: tests beside it change interfaces)."""
        seen = len(self.read_console())
        self.driver.get(url)
        for _ in range(2):
            if not any("ERR_NETWORK_CHANGED" in e.get("message", "")
                       for e in self.read_console()[seen:]):
                return
            seen = len(self.console)
            self.driver.refresh()

    def find(self, testid):
        """The element with that data-testid, or None."""
        found = self.driver.find_elements(self.By.CSS_SELECTOR, f'[data-testid="{testid}"]')
        return found[0] if found else None

    def find_all(self, testid):
        return self.driver.find_elements(self.By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def click(self, testid, what=None):
        """Clicks the element with that data-testid, finding it again if the page re-rendered
        it in between."""
        def clicked():
            el = self.find(testid)
            if el is None:
                return False
            el.click()
            return True
        self.wait(what or f'a clickable "{testid}"', clicked)

    def type(self, testid, text):
        """Types into the element with that data-testid, as click() finds it."""
        def typed():
            el = self.find(testid)
            if el is None:
                return False
            el.send_keys(text)
            return True
        self.wait(f'an input "{testid}"', typed)

    def text(self, testid):
        el = self.find(testid)
        return el.text.strip() if el is not None else None

    def wait(self, what, cond, timeout=PAGE_DEADLINE, last=None):
        """Polls cond() until it is true; raises Failure naming `what` (and last()) if not."""
        def attempt(_):
            try:
                return cond()
            except self.WebDriverException:
                # The page re-rendered the element between finding and reading it.
                return False
        try:
            return self.WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(attempt)
        except self.TimeoutException:
            seen = ""
            if last is not None:
                try:
                    seen = f"; last seen: {last()!r}"
                except self.WebDriverException as e:
                    seen = f"; could not read the page: {e}"
            raise Failure(f"timed out after {timeout:.0f}s waiting for {what}{seen}") from None

    def banner(self):
        """The error banner's text while it is shown, else ''."""
        el = self.find("error-banner")
        if el is None or not el.is_displayed():
            return ""
        return self.text("error-text") or el.text.strip()

    def expect_no_banner(self, page):
        text = self.banner()
        check(not text, f"{page} shows an error banner: {text}")

    def screenshot(self, name):
        self.driver.save_screenshot(os.path.join(self.artifacts, name))

    def read_console(self):
        try:
            self.console.extend(self.driver.get_log("browser"))
        except self.WebDriverException:
            pass
        return self.console

    def js_errors(self):
        """Uncaught JavaScript errors and Content-Security-Policy refusals the console logged
        (failed requests are not counted)."""
        return [e for e in self.read_console()
                if e.get("level") == "SEVERE" and e.get("source") in ("javascript", "security")]

    def save_failure(self):
        """Saves what a reader of the failure needs: screenshot, page source, console log."""
        try:
            self.screenshot("failure.png")
        except self.WebDriverException as e:
            print(f"could not save a screenshot: {e}", file=sys.stderr)
        try:
            with open(os.path.join(self.artifacts, "page.html"), "w", encoding="utf-8") as f:
                f.write(self.driver.page_source)
        except self.WebDriverException as e:
            print(f"could not save the page source: {e}", file=sys.stderr)
        with open(os.path.join(self.artifacts, "console.log"), "w", encoding="utf-8") as f:
            for e in self.read_console():
                f.write(f"{e.get('timestamp', '')} {e.get('level', '')} {e.get('source', '')} "
                        f"{e.get('message', '')}\n")


# --- The checks ----------------------------------------------------------------------------------

def submit_job(base):
    status, job = rest(base, "POST", "/v1/jobs", {"spec": JOB_SPEC})
    check(status == 200 and isinstance(job, dict) and job.get("id"),
          f"POST /v1/jobs answered {status}: {job}")
    return job["id"]


def check_jobs_page(b, base, job_id):
    b.open(base + "/#/jobs")
    b.wait("the jobs table", lambda: b.find("jobs-table") is not None or b.banner())
    b.expect_no_banner("#/jobs")
    b.wait(f"the row of job {job_id} to show SUCCEEDED",
           lambda: b.text(f"job-state-{job_id}") == "SUCCEEDED", timeout=JOB_DEADLINE,
           last=lambda: (b.text(f"job-row-{job_id}"), b.banner(),
                         rest(base, "GET", f"/v1/jobs/{job_id}")[1]))
    row = b.text(f"job-row-{job_id}") or ""
    check("console-hello" in row and "default" in row,
          f"the row of job {job_id} lacks its name or project: {row!r}")
    b.expect_no_banner("#/jobs")
    b.screenshot("jobs.png")


def check_job_page(b, base, job_id):
    # Through the row's link, as a user would.
    b.click(f"job-link-{job_id}", f"the link to job {job_id}")
    b.wait(f"the page of job {job_id}", lambda: b.text("job-id") == job_id or b.banner(),
           last=lambda: b.driver.current_url)
    b.expect_no_banner(f"#/jobs/{job_id}")
    b.wait("the job's state SUCCEEDED", lambda: b.text("job-state") == "SUCCEEDED",
           last=lambda: b.text("job-state"))
    b.wait(f"the row of replica {REPLICA}", lambda: b.find(f"replica-row-{REPLICA}") is not None,
           last=lambda: b.text("job-replicas"))
    check(b.text(f"replica-state-{REPLICA}") == "SUCCEEDED",
          f"replica {REPLICA} shows {b.text(f'replica-state-{REPLICA}')!r}, not SUCCEEDED")
    check(b.text(f"replica-exit-{REPLICA}") == "0",
          f"replica {REPLICA} shows exit {b.text(f'replica-exit-{REPLICA}')!r}, not 0")
    b.wait("at least one event row", lambda: len(b.find_all("event-row")) > 0,
           last=lambda: b.text("job-events"))
    b.wait(f"the log of {REPLICA} to hold \"hello\"", lambda: "hello" in (b.text("log-view") or ""),
           last=lambda: (b.text("log-view"), b.text("log-status")))
    check(b.find("job-error") is None, f"a succeeded job shows an error: {b.text('job-error')}")
    b.expect_no_banner(f"#/jobs/{job_id}")
    b.screenshot("job.png")


def check_timeline(b, base):
    """A replica that fails once and is restarted in place: the job page's timeline shows its
    row with two run bars, the first failed with its class, the second succeeded."""
    status, job = rest(base, "POST", "/v1/jobs", {"spec": RESTART_SPEC})
    check(status == 200 and isinstance(job, dict) and job.get("id"),
          f"POST /v1/jobs (the restarting job) answered {status}: {job}")
    job_id = job["id"]
    b.open(base + f"/#/jobs/{job_id}")
    b.wait(f"the page of {job_id} to show SUCCEEDED", lambda: b.text("job-state") == "SUCCEEDED",
           timeout=JOB_DEADLINE,
           last=lambda: (b.text("job-state"), b.banner(),
                         rest(base, "GET", f"/v1/jobs/{job_id}")[1]))
    _, got = rest(base, "GET", f"/v1/jobs/{job_id}")
    replicas = got.get("replicas") or [{}]
    check(len(got.get("attempts") or []) == 1 and replicas[0].get("restartCount") == 1,
          f"{job_id} was not restarted in place exactly once: {got}")

    def runs():
        return b.driver.find_elements(
            b.By.CSS_SELECTOR,
            f'[data-testid="timeline-row-{REPLICA}"] [data-testid^="timeline-run-{REPLICA}-"]')

    def outcomes():
        return [(r.get_attribute("data-testid"), r.get_attribute("data-outcome"),
                 r.get_attribute("data-class")) for r in runs()]

    want = [(f"timeline-run-{REPLICA}-1", "failed", "USER_ERROR"),
            (f"timeline-run-{REPLICA}-2", "succeeded", None)]
    b.wait(f"the timeline row of {REPLICA} to show a failed run, then a succeeded one",
           lambda: outcomes() == want, last=lambda: (outcomes(), b.text("job-timeline")))
    row = b.find(f"timeline-row-{REPLICA}")
    check(row.get_attribute("data-runs") == "2",
          f"the timeline row of {REPLICA} counts {row.get_attribute('data-runs')!r} runs, not 2")
    tip = b.driver.execute_script(
        "return arguments[0].querySelector('title').textContent;", runs()[0])
    check("exited with status 3" in tip and "node-" in tip,
          f"the first run's tooltip lacks its exit or node: {tip!r}")
    check(b.find("timeline-note") is None or not b.find("timeline-note").is_displayed(),
          f"the timeline shows a note for one replica: {b.text('timeline-note')!r}")
    b.expect_no_banner(f"#/jobs/{job_id}")
    b.screenshot("timeline.png")


def check_job_delete(b, base, job_id):
    """Deletes the job that ended from its page: the page goes back to the list, which no longer
    shows it, and trainctld no longer knows it."""
    b.open(base + f"/#/jobs/{job_id}")
    b.wait(f"the page of job {job_id}", lambda: b.text("job-state") == "SUCCEEDED" or b.banner(),
           last=lambda: b.driver.current_url)
    b.click("job-delete", "the Delete button")
    b.click("job-delete-confirm", "the delete's confirm button")
    b.wait("the jobs list after the delete",
           lambda: b.driver.current_url.endswith("#/jobs") and b.find("jobs-table") is not None,
           last=lambda: (b.driver.current_url, b.banner()))
    b.wait(f"the row of job {job_id} to go", lambda: b.find(f"job-row-{job_id}") is None,
           last=lambda: b.text(f"job-row-{job_id}"))
    status, body = rest(base, "GET", f"/v1/jobs/{job_id}")
    check(status == 404, f"GET /v1/jobs/{job_id} after its delete answered {status}: {body}")
    b.expect_no_banner("#/jobs")


def check_nodes_page(b, base):
    node = DRAINED_NODE
    b.open(base + "/#/nodes")
    b.wait(f"the row of {node}", lambda: b.find(f"node-row-{node}") is not None or b.banner(),
           last=lambda: b.text("nodes-body"))
    b.expect_no_banner("#/nodes")
    b.wait(f"{node} to show READY", lambda: b.text(f"node-state-{node}") == "READY",
           last=lambda: b.text(f"node-state-{node}"))
    b.click(f"drain-{node}", f"the Drain button of {node}")
    b.type(f"drain-reason-{node}", "console test: kernel upgrade")
    b.click(f"drain-confirm-{node}", f"the drain's confirm button of {node}")
    b.wait(f"{node} to show DRAINING or CORDONED in the page",
           lambda: b.text(f"node-state-{node}") in ("DRAINING", "CORDONED"),
           timeout=NODE_DEADLINE,
           last=lambda: (b.text(f"node-state-{node}"), b.text(f"drain-error-{node}"), b.banner()))

    deadline = time.monotonic() + NODE_DEADLINE
    while True:
        status, got = rest(base, "GET", f"/v1/nodes/{node}")
        state = (got or {}).get("state")
        if status == 200 and state in ("NODE_STATE_DRAINING", "NODE_STATE_CORDONED"):
            break
        if time.monotonic() >= deadline:
            raise Failure(f"GET /v1/nodes/{node} does not show it DRAINING or CORDONED after "
                          f"the drain: {status} {got}")
        time.sleep(0.2)
    b.expect_no_banner("#/nodes")
    b.screenshot("nodes.png")


def check_queue_page(b, base):
    b.open(base + "/#/queue")
    b.wait("the queue to render",
           lambda: (b.find("queue-table") is not None or b.find("queue-empty") is not None
                    or b.banner()),
           last=lambda: b.text("queue-body"))
    b.expect_no_banner("#/queue")
    b.screenshot("queue.png")


def check_projects_page(b, base):
    b.open(base + "/#/projects")
    b.wait("the projects to render",
           lambda: (b.find("projects-table") is not None or b.find("projects-empty") is not None
                    or b.banner()),
           last=lambda: b.text("projects-body"))
    b.expect_no_banner("#/projects")
    b.expect_no_banner("#/projects")
    b.screenshot("projects.png")


def check_preemption(b, base, cluster):
    """A lender that reclaims its quota preempts a borrower's job: the queue and the waiting job's
    page name the job it preempts, the victim's page says by whom and until when. One node of 4
    cores is left (the nodes page drained the other): the lender owns 4, the borrower borrows 3."""
    for args in (("lender", "--cpu", "4", "--cohort", "console", "--reclaim", "any"),
                 ("borrower", "--cpu", "0", "--cohort", "console", "--borrow-cpu", "4")):
        done = cluster.cli("quota", "set", *args)
        check(done.returncode == 0, f"quota set {args[0]} failed: {done.stderr}")
    # The borrower ignores the notice's signal, so its preemption stays under way for the grace.
    victim_spec = {
        "displayName": "console-borrower", "project": "borrower",
        "workerPools": [{"name": name, "replicaCount": 1,
                         "command": ["/bin/sh", "-c", "trap '' USR1; while :; do sleep 0.2; done"],
                         "resources": {"cpu": 1.5, "memoryMb": "64"}} for name in ("chief", "worker")],
        "scheduling": {"stopGracePeriod": "1s", "preemptionSignal": "SIGUSR1",
                       "preemptionGracePeriod": "600s"},
    }
    status, victim = rest(base, "POST", "/v1/jobs", {"spec": victim_spec})
    check(status == 200, f"POST /v1/jobs (the borrower) answered {status}: {victim}")
    victim_id = victim["id"]
    check(eventually(lambda: rest(base, "GET", f"/v1/jobs/{victim_id}")[1].get("state") ==
                     "JOB_STATE_RUNNING", timeout=JOB_DEADLINE),
          f"the borrower's job {victim_id} never ran: "
          f"{rest(base, 'GET', f'/v1/jobs/{victim_id}')[1].get('queueReason')}")
    urgent_spec = {
        "displayName": "console-lender", "project": "lender",
        "workerPools": [{"name": "chief", "replicaCount": 1, "command": ["/bin/true"],
                         "resources": {"cpu": 2, "memoryMb": "64"}}],
    }
    status, urgent = rest(base, "POST", "/v1/jobs", {"spec": urgent_spec})
    check(status == 200, f"POST /v1/jobs (the lender) answered {status}: {urgent}")
    urgent_id = urgent["id"]

    b.open(base + "/#/queue")
    b.wait(f"the queue row of {urgent_id} to name the job it preempts",
           lambda: victim_id in (b.text(f"queue-row-{urgent_id}") or "") and
           "PREEMPTING" in (b.text(f"queue-row-{urgent_id}") or ""),
           last=lambda: b.text("queue-body"))
    b.screenshot("queue-preempting.png")
    b.open(base + f"/#/jobs/{urgent_id}")
    b.wait(f"the page of {urgent_id} to show Preempting {victim_id}",
           lambda: b.text("job-preempting") == victim_id, last=lambda: b.text("job-summary"))
    b.open(base + f"/#/jobs/{victim_id}")
    b.wait(f"the page of {victim_id} to show the preemption under way",
           lambda: (b.text("job-preempted") or "").startswith(f"by {urgent_id} ("),
           last=lambda: b.text("job-summary"))
    check("checkpoint and stop by" in (b.text("job-preempted") or ""),
          f"the preemption shows no deadline: {b.text('job-preempted')!r}")
    b.expect_no_banner(f"#/jobs/{victim_id}")
    b.screenshot("job-preempted.png")
    # Cancelling the victim ends its preemption: the lender's job runs and succeeds.
    status, body = rest(base, "POST", f"/v1/jobs/{victim_id}:cancel", {})
    check(status == 200, f"cancelling {victim_id} answered {status}: {body}")
    check(eventually(lambda: rest(base, "GET", f"/v1/jobs/{urgent_id}")[1].get("state") ==
                     "JOB_STATE_SUCCEEDED", timeout=JOB_DEADLINE),
          f"the lender's job {urgent_id} did not succeed once {victim_id} was cancelled")


def save_cluster_logs(cluster, artifacts):
    for path in [cluster.daemon_log()] + [cluster.agent_log(i) for i in range(cluster.agents)]:
        if os.path.exists(path):
            shutil.copy(path, os.path.join(artifacts, os.path.basename(path)))


def main():
    args = parse_args()
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            skip(f"{path} is not installed (apt-get install {package})")
    import_selenium()
    os.makedirs(args.artifacts, exist_ok=True)
    # Selenium reaches chromedriver on loopback: no proxy of the environment applies.
    os.environ["no_proxy"] = os.environ["NO_PROXY"] = ",".join(
        filter(None, [os.environ.get("no_proxy", ""), "127.0.0.1", "localhost"]))

    cluster = MiniCluster(args.bin_dir, agents=2, http=True)
    browser = None
    step = "starting the cluster"
    try:
        cluster.start()
        check(cluster.http_url, "the cluster has no HTTP address (trainctld --http-listen)")
        base = cluster.http_url.rstrip("/")
        step = "submitting the job"
        job_id = submit_job(base)
        print(f"submitted {job_id}; console at {base}/")
        step = "starting Chromium"
        browser = Browser(args.artifacts)
        for step, fn, fn_args in (("#/jobs", check_jobs_page, (browser, base, job_id)),
                                  ("#/jobs/" + job_id, check_job_page, (browser, base, job_id)),
                                  ("the job timeline", check_timeline, (browser, base)),
                                  ("#/nodes", check_nodes_page, (browser, base)),
                                  ("#/queue", check_queue_page, (browser, base)),
                                  ("#/projects", check_projects_page, (browser, base)),
                                  ("preemption", check_preemption, (browser, base, cluster)),
                                  ("#/usage", check_usage_page, (browser, base, "default")),
                                  ("a job array's page", check_array_page, (browser, base, rest)),
                                  ("deleting the job", check_job_delete,
                                   (browser, base, job_id))):
            fn(*fn_args)
            print(f"ok: {step}")
        step = "the browser's console log"
        errors = browser.js_errors()
        check(not errors, "the console logged JavaScript errors:\n" +
              "\n".join(e.get("message", "") for e in errors))
    except Exception as e:  # pylint: disable=broad-except
        cluster.keep_workdir = True
        if browser is not None:
            browser.save_failure()
        save_cluster_logs(cluster, args.artifacts)
        if isinstance(e, Failure):
            print(f"FAILED at {step}: {e}", file=sys.stderr)
        else:
            traceback.print_exc()
            print(f"FAILED at {step}: {type(e).__name__}: {e}", file=sys.stderr)
        print(f"artifacts in {args.artifacts}", file=sys.stderr)
        return 1
    finally:
        if browser is not None:
            try:
                browser.quit()
            except Exception as e:  # pylint: disable=broad-except
                print(f"could not stop the browser: {e}", file=sys.stderr)
        cluster.stop()
    print(f"PASSED; screenshots in {args.artifacts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
