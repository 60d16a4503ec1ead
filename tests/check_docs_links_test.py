#!/usr/bin/env python3
"""Shows that check_docs_links.py passes a sound tree and fails on each kind of break.

Each case writes a small repository to a temporary directory (a README, a docs page, the
requirements page, a C++ source and a shell script), breaks one thing on purpose, runs the
check on it, and expects exit 1 with a line naming the break; the sound tree must pass with exit
0. Exits 1 if any case does not behave. ctest runs it as check_docs_links_fails_on_breaks.
"""
import os
import subprocess
import sys
import tempfile

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_docs_links.py")

SOUND = {
    "README.md": "# demo\n\nSee [the guide](docs/guide.md#section-one), [docs](docs/) and "
                 "[the web](https://example.com/x.md).\n\n## Two commands\n\n"
                 "```sh\necho [not a link](nowhere.md)\n```\n",
    "CHANGELOG.md": "# Changelog\n\n## 2026-11-21: first\n\n"
                    "Back to [the README](README.md#demo).\n",
    "docs/guide.md": "# Guide\n\n## Section one\n\n## Section one\n\n"
                     "Also [the second one](#section-one-1), [a note](#note) and "
                     "[R7](developers/requirements.md#r7-error-code).\n\n"
                     "<a id=\"note\"></a>Note.\n    Indented: [the guide](guide.md).\n",
    "docs/developers/requirements.md": "# Requirements\n\n### R1 Queue\n\n### R7 Error code\n",
    "src/core.cc": "// The queue (R1) and the error code (R7): docs/guide.md, \"Section\n"
                   "// one\", and docs/guide.md#section-one; README, \"Two commands\".\n"
                   "const char* kText = \"R9 and DESIGN.md in a string are not comments\";\n"
                   "/* R7 in a block comment */ int x = 1;  // trailing R1\n",
    "tools/run.sh": "#!/bin/sh\n# Runs it (R1; docs/developers/requirements.md).\n"
                    "echo \"${#}\" '# R99 in a string'\n",
}

BREAKS = [
    ("a link to a missing page", "README.md", "[gone](docs/missing.md)",
     "docs/missing.md names no file"),
    ("a link to a missing anchor", "docs/guide.md", "[gone](#nope)", "has no heading #nope"),
    ("a link to another page's missing anchor", "CHANGELOG.md", "[x](docs/guide.md#section-two)",
     "has no heading #section-two"),
    ("a link out of the repository", "docs/guide.md", "[x](../../outside.md)",
     "leaves the repository"),
    ("a dangling requirement id", "src/core.cc", "// See R12.", "R12 is no requirement"),
    ("a dangling requirement id in a script", "tools/run.sh", "# R30 too", "R30 is no requirement"),
    ("a design document outside the repository", "src/core.cc", "// DESIGN.md's table",
     "DESIGN.md is not a file of the repository"),
    ("a missing heading of a cited page", "src/core.cc", "// docs/guide.md, \"Section nine\"",
     "has no heading \"Section nine\""),
    ("a missing anchor of a cited page", "tools/run.sh", "# docs/guide.md#nine",
     "has no heading #nine"),
    ("a broken link whose text wraps", "docs/guide.md", "A [wrapped\nlink](#gone-three) here.",
     "has no heading #gone-three"),
    ("a broken link in an indented list item", "docs/guide.md", "- a\n    [b](#gone-too)",
     "has no heading #gone-too"),
    ("a README section that moved", "src/core.cc", "// (README, \"Metrics\")",
     "README.md has no heading \"Metrics\""),
]


def write(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)


def run(files):
    with tempfile.TemporaryDirectory() as root:
        write(root, files)
        result = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        return result.returncode, result.stdout + result.stderr


def main():
    failures = []
    code, out = run(SOUND)
    if code != 0:
        failures.append(f"the sound tree failed the check (exit {code}):\n{out}")
    for name, path, line, expected in BREAKS:
        files = dict(SOUND)
        files[path] = files[path] + "\n" + line + "\n"
        code, out = run(files)
        if code != 1 or expected not in out:
            failures.append(f"{name}: expected exit 1 and \"{expected}\", got exit {code}:\n{out}")
        else:
            print(f"ok: {name}: {out.strip().splitlines()[0]}")
    files = dict(SOUND)
    del files["docs/developers/requirements.md"]
    code, out = run(files)
    if code != 1 or "R1 is no requirement" not in out:
        failures.append("without the requirements page: expected R1 to dangle, "
                        f"got exit {code}:\n{out}")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
