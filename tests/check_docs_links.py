#!/usr/bin/env python3
"""Checks that the documentation's links and the code's references to it resolve in the repository.

Markdown (README.md, CHANGELOG.md, docs/**/*.md and every other .md file): every relative link
`[text](path#anchor)` names a file or folder inside the repository, and every anchor is a heading
of its target page (GitHub's rule: lowercase, punctuation dropped, spaces as '-', "-1", "-2" for
repeats) or an explicit `<a id="...">`. Links with a scheme (https:, mailto:) and links inside
code are not checked.

Code comments (*.cc, *.h, *.proto, *.sh, *.py, CMakeLists.txt, *.cmake, *.yaml, *.yml): every
requirement id (R1, R22) is a heading of docs/developers/requirements.md ("R7 Error code" gives
#r7-error-code); every path ending in .md names a file of the repository (relative to the root
or to the source's folder), its `#anchor` a heading of it, and a quoted heading after it
(`docs/users/retries.md, "Separate budgets"`) a heading of that page; `README, "Heading"` a
heading of README.md.

Usage: check_docs_links.py [ROOT] (default: the repository this script is in). Prints each
problem as FILE:LINE: what is wrong; exits 1 if there is any. ctest runs it as check_docs_links.
"""
import os
import re
import sys

REQUIREMENTS = "docs/developers/requirements.md"
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
CODE_SUFFIXES = (".cc", ".h", ".proto", ".sh", ".py", ".cmake", ".yaml", ".yml")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
REQUIREMENT = re.compile(r"(?<![\w.-])R(\d+)\b")
MD_PATH = re.compile(r"(?<![\w./-])((?:\.{1,2}/)*[\w.-]+(?:/[\w.-]+)*\.md)(?![\w.])"
                     r"(#[\w-]+)?(?:,\s*(?:section\s+)?\"([^\"]+)\")?")
README_SECTION = re.compile(r"\bREADME(?:'s)?,?\s+\"([^\"]+)\"")


def skipped_dir(root, path):
    rel = os.path.relpath(path, root)
    first = rel.split(os.sep)[0]
    return first in SKIP_DIRS or first.startswith("build") or first.startswith(".")


def walk(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not skipped_dir(root, os.path.join(folder, d)))
        for name in sorted(files):
            yield os.path.join(folder, name)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def outside_fences(text):
    """Yields (line number, line) for the lines outside fenced code blocks (``` or ~~~)."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        match = re.match(r"(`{3,}|~{3,})", stripped)
        if match and (fence is None or stripped.startswith(fence)):
            fence = match.group(1) if fence is None else None
            continue
        if fence is None:
            yield number, line


def markdown_lines(text):
    """Yields (line number, line) outside fenced code blocks, with inline code blanked out.

    Indented code blocks are read as text: fence code that holds something like a link."""
    for number, line in outside_fences(text):
        yield number, re.sub(r"(`+)(?:(?!\1).)+\1", lambda m: " " * len(m.group(0)), line)


def paragraphs(lines):
    """Joins consecutive non-blank lines, so that a link whose text wraps is read whole. Yields
    (first line number, text); a table row stays a paragraph of its own."""
    start, parts = 0, []
    for number, line in lines:
        if parts and (not line.strip() or line.lstrip().startswith("|") or number != last + 1):
            yield start, " ".join(parts)
            parts = []
        if line.strip():
            if not parts:
                start = number
            parts.append(line.strip())
        last = number
    if parts:
        yield start, " ".join(parts)


class Anchors:
    """The anchors of each Markdown file, computed once."""

    def __init__(self):
        self.cache = {}

    def of(self, path):
        if path not in self.cache:
            anchors = set()
            counts = {}
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                text = ""
            for _, line in outside_fences(text):
                anchors.update(EXPLICIT_ANCHOR.findall(line))
                heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if heading:
                    base = slug(heading.group(1))
                    n = counts.get(base, 0)
                    counts[base] = n + 1
                    anchors.add(base if n == 0 else f"{base}-{n}")
            self.cache[path] = anchors
        return self.cache[path]


def inside(root, path):
    root = os.path.realpath(root)
    return os.path.realpath(path) == root or os.path.realpath(path).startswith(root + os.sep)


def check_markdown(root, path, anchors, problems):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for number, line in paragraphs(markdown_lines(text)):
        for target in LINK.findall(line):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            dest = path
            if file_part:
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not inside(root, dest):
                problems.append(f"{rel}:{number}: the link {target} leaves the repository")
                continue
            if not os.path.exists(dest):
                problems.append(f"{rel}:{number}: the link {target} names no file")
                continue
            if anchor:
                if os.path.isdir(dest) or not dest.endswith(".md"):
                    problems.append(f"{rel}:{number}: the link {target} has an anchor but "
                                    "its target is no Markdown page")
                elif anchor not in anchors.of(dest):
                    problems.append(f"{rel}:{number}: the link {target}: "
                                    f"{os.path.relpath(dest, root)} has no heading #{anchor}")


def comment_blocks_c(text):
    """Comments of C++ and proto sources as (first line, text); adjacent // lines join."""
    blocks = []
    i, n, line = 0, len(text), 1
    current, current_line, last_comment_line = [], 0, -2

    def flush():
        nonlocal current
        if current:
            blocks.append((current_line, " ".join(current)))
        current = []

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            if last_comment_line != line - 1:
                flush()
                current_line = line
            current.append(text[i + 2:end].strip())
            last_comment_line = line
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            flush()
            body = text[i + 2:end]
            blocks.append((line, " ".join(l.strip().lstrip("*").strip() for l in body.split("\n"))))
            line += body.count("\n")
            i = end + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum()
                                                          or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end + len(delim) + 2
            line += text.count("\n", i, end)
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    flush()
    return blocks


def comment_blocks_hash(text):
    """Comments of shell, Python and CMake files as (first line, text); adjacent lines join."""
    blocks = []
    current, current_line, last = [], 0, -2
    for number, line in enumerate(text.split("\n"), 1):
        quote = None
        comment = None
        for k, c in enumerate(line):
            if quote:
                if c == "\\":
                    continue
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#" and (k == 0 or line[k - 1] not in "${\\'\""):
                comment = line[k + 1:].strip()
                break
        if comment is None:
            continue
        if last != number - 1 and current:
            blocks.append((current_line, " ".join(current)))
            current = []
        if not current:
            current_line = number
        current.append(comment)
        last = number
    if current:
        blocks.append((current_line, " ".join(current)))
    return blocks


def check_code(root, path, anchors, requirement_anchors, problems):
    rel = os.path.relpath(path, root)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        return
    c_like = path.endswith((".cc", ".h", ".proto"))
    blocks = comment_blocks_c(text) if c_like else comment_blocks_hash(text)
    readme = os.path.join(root, "README.md")
    for line, comment in blocks:
        for number in REQUIREMENT.findall(comment):
            if not any(a == f"r{number}" or a.startswith(f"r{number}-")
                       for a in requirement_anchors):
                problems.append(f"{rel}:{line}: R{number} is no requirement of {REQUIREMENTS}")
        for target, anchor, section in MD_PATH.findall(comment):
            candidates = [os.path.normpath(os.path.join(root, target)),
                          os.path.normpath(os.path.join(os.path.dirname(path), target))]
            dest = next((c for c in candidates if inside(root, c) and os.path.isfile(c)), None)
            if dest is None:
                problems.append(f"{rel}:{line}: {target} is not a file of the repository")
                continue
            if anchor and anchor[1:] not in anchors.of(dest):
                problems.append(f"{rel}:{line}: {target} has no heading {anchor}")
            if section and slug(section) not in anchors.of(dest):
                problems.append(f"{rel}:{line}: {target} has no heading \"{section}\"")
        for section in README_SECTION.findall(comment):
            if slug(section) not in anchors.of(readme):
                problems.append(f"{rel}:{line}: README.md has no heading \"{section}\" "
                                "(name the page of docs/ that has it)")


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    anchors = Anchors()
    problems = []
    pages = [os.path.join(root, p) for p in ("README.md", "CHANGELOG.md")]
    pages += [p for p in walk(root) if p.endswith(".md") and p not in pages]
    for page in pages:
        if os.path.isfile(page):
            check_markdown(root, page, anchors, problems)
        elif page.endswith("README.md"):
            problems.append("README.md: missing")
    requirements = os.path.join(root, REQUIREMENTS)
    requirement_anchors = anchors.of(requirements) if os.path.isfile(requirements) else set()
    for path in walk(root):
        name = os.path.basename(path)
        if name.endswith(CODE_SUFFIXES) or name == "CMakeLists.txt":
            check_code(root, path, anchors, requirement_anchors, problems)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
