#!/usr/bin/env python3
"""Checks that every Catch2 test name can be run by ctest.

catch_discover_tests passes each test's name to the test binary as its test spec (escaping ',' and
brackets), but CMake cuts a name at ';', its list separator: a TEST_CASE whose name holds one is
registered in ctest under the part before it, which matches no test, and passes without running. Prints each such name with its file and line; exits 1 if there is one. Run from
anywhere; ctest runs it as check_test_names.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# TEST_CASE("name" or TEST_CASE( "name", possibly with the name on the next line.
TEST_CASE = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"', re.S)


def main():
    bad = []
    for folder in ("tests", "bench"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(files):
                if not name.endswith(".cc"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for m in TEST_CASE.finditer(text):
                    if ";" in m.group(1):
                        line = text.count("\n", 0, m.start()) + 1
                        bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {m.group(1)}")
    for b in bad:
        print(f"{b}\n  a test name with ';' never runs under ctest: use ',' or words")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
