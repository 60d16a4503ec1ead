"""The usage page's check for console_test.py (#/usage): after jobs ran, a project's row shows
non-zero CPU-hours and the chart draws at least one bar.

    check_usage_page(browser, base, "default")

`browser` is console_test.Browser; its wait() raises console_test's Failure when a condition
does not hold in time, so this module raises nothing of its own.
"""


def check_usage_page(b, base, project):
    """Opens #/usage (the last 24 hours by hour, CPU-hours) through its nav link and waits until
    `project`'s row shows CPU-seconds above zero, its CPU-hours cell a number above zero, and the
    chart at least one bar of that project; then switches the range to 7 days and waits for the
    chart again."""
    b.open(base + "/#/jobs")
    b.click("nav-usage", "the Usage link of the nav bar")
    b.wait("the usage page to render",
           lambda: (b.find("usage-table") is not None or b.find("usage-empty") is not None
                    or b.banner()),
           last=lambda: (b.driver.current_url, b.text("usage-body")))
    b.expect_no_banner("#/usage")

    def cpu_seconds():
        row = b.find(f"usage-row-{project}")
        return float(row.get_attribute("data-cpu-seconds") or 0) if row is not None else 0.0

    def cpu_hours():
        try:
            return float(b.text(f"usage-cpu-{project}") or "0")
        except ValueError:
            return 0.0

    def bars():
        return b.driver.find_elements(
            b.By.CSS_SELECTOR, f'[data-testid="usage-bar"][data-project="{project}"]')

    # The page reloads its data every few seconds: the rows of runs that ended are written by
    # the reconcile turn that ends them, so they show at the latest on the next reload.
    b.wait(f"the usage row of project {project} with CPU-hours above zero",
           lambda: cpu_seconds() > 0 and cpu_hours() > 0, timeout=60,
           last=lambda: (b.text("usage-body"), b.banner()))
    b.wait(f"a bar of project {project} in the usage chart", lambda: len(bars()) > 0,
           last=lambda: b.text("usage-chart-box"))
    b.screenshot("usage.png")

    # Another range: the chart is drawn again from per-day requests and still has the bar.
    b.driver.execute_script(
        "const s = arguments[0]; s.value = '7d'; s.dispatchEvent(new Event('change'));",
        b.find("usage-range"))
    b.wait("the usage page to switch to 7 days",
           lambda: "range=7d" in b.driver.current_url
           and len(b.find_all("usage-bucket")) == 7 and len(bars()) > 0,
           last=lambda: (b.driver.current_url, len(b.find_all("usage-bucket")), b.banner()))
    b.expect_no_banner("#/usage")
