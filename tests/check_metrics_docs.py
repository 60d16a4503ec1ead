#!/usr/bin/env python3
"""Checks that the metrics are documented and the deploy files use only real ones.

Every metric trainctld and trainctl-agent register (the "trainctl_..." names in
server/metrics_daemon.cc and agents/agent_metrics.cc) has a row in the tables of
docs/operators/metrics.md,
and every row names a registered metric; deploy/grafana-dashboard.json parses as JSON and
deploy/prometheus-alerts.yml as YAML with rule groups, and every metric their queries name
(less a histogram's _bucket, _sum or _count) is registered. Prints what is wrong; exits 1 if
anything is. Run from anywhere; ctest runs it as check_metrics_docs.
"""
import json
import os
import re
import sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DOCS = "docs/operators/metrics.md"
NAME = re.compile(r"\btrainctl_[a-z0-9_]+\b")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def base(name):
    return re.sub(r"_(bucket|sum|count)$", "", name)


def main():
    problems = []
    registered = set()
    for source in ("server/metrics_daemon.cc", "agents/agent_metrics.cc"):
        registered |= set(re.findall(r'"(trainctl_[a-z0-9_]+)"', read(source)))
    page = read(DOCS)
    documented = set(re.findall(r"^\| `(trainctl_[a-z0-9_]+)` \|", page, re.M))
    for name in sorted(registered - documented):
        problems.append(f"{DOCS}: no row for {name} in the metrics tables")
    for name in sorted(documented - registered):
        problems.append(f"{DOCS}: the metrics tables list {name}, which nothing registers")

    used = {}
    try:
        dashboard = json.loads(read("deploy/grafana-dashboard.json"))
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                for name in NAME.findall(target["expr"]):
                    used.setdefault(base(name), "deploy/grafana-dashboard.json")
    except (ValueError, KeyError) as e:
        problems.append(f"deploy/grafana-dashboard.json: {e}")
    try:
        rules = yaml.safe_load(read("deploy/prometheus-alerts.yml"))
        for group in rules["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule or "expr" not in rule:
                    problems.append(f"deploy/prometheus-alerts.yml: a rule without alert or expr: {rule}")
                    continue
                for name in NAME.findall(str(rule["expr"])):
                    used.setdefault(base(name), "deploy/prometheus-alerts.yml")
    except (yaml.YAMLError, KeyError, TypeError) as e:
        problems.append(f"deploy/prometheus-alerts.yml: {e}")
    for name, where in sorted(used.items()):
        if name not in registered:
            problems.append(f"{where}: uses {name}, which nothing registers")

    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
