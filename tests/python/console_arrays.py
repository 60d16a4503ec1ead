"""The job array's check for console_test.py: a job array of 3 one-replica elements, submitted
through the REST API, ends SUCCEEDED; its page counts its elements and lists them; an element's
page links back to its array.

    check_array_page(browser, base, rest)

`browser` is console_test.Browser and `rest` console_test.rest; the browser's wait() raises
console_test's Failure when a condition does not hold in time, and `check` here raises
AssertionError with what was seen.
"""

from minicluster import eventually

# How long the 3 elements (one at a time) may take to run.
ARRAY_DEADLINE = 120.0

ARRAY_SPEC = {
    "displayName": "console-sweep",
    "project": "default",
    "array": {"indices": "0-2", "parallelism": 1},
    "workerPools": [{
        "name": "chief",
        "replicaCount": 1,
        "command": ["/bin/true"],
        "resources": {"cpu": 0.1, "memoryMb": "64"},
    }],
}


def check(cond, message):
    """Raises AssertionError with `message` unless `cond`."""
    if not cond:
        raise AssertionError(message)


def check_array_page(b, base, rest):
    """Submits ARRAY_SPEC, waits for it to succeed, then checks its page and an element's."""
    status, array = rest(base, "POST", "/v1/jobs", {"spec": ARRAY_SPEC})
    check(status == 200 and isinstance(array, dict) and array.get("id"),
          f"POST /v1/jobs (an array) answered {status}: {array}")
    array_id = array["id"]
    check(eventually(lambda: rest(base, "GET", f"/v1/jobs/{array_id}")[1].get("state") ==
                     "JOB_STATE_SUCCEEDED", timeout=ARRAY_DEADLINE),
          f"array {array_id} did not succeed: {rest(base, 'GET', f'/v1/jobs/{array_id}')[1]}")
    b.open(f"{base}/#/jobs/{array_id}")
    b.wait(f"the page of array {array_id}", lambda: b.text("job-id") == array_id or b.banner())
    b.expect_no_banner(f"#/jobs/{array_id}")
    b.wait("the array's counts", lambda: "3 succeeded" in (b.text("job-array-counts") or ""),
           last=lambda: b.text("job-array-counts"))
    b.wait("its elements listed", lambda: all(f"{array_id}-{i}" in (b.text("job-elements") or "")
                                              for i in range(3)),
           last=lambda: b.text("job-elements"))
    b.open(f"{base}/#/jobs/{array_id}-1")
    b.wait(f"the page of element {array_id}-1", lambda: b.text("job-element-array") == array_id
           or b.banner(), last=lambda: b.text("job-element"))
    b.expect_no_banner(f"#/jobs/{array_id}-1")
    b.screenshot("array.png")
