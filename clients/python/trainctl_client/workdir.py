"""A job's working directory as Client.submit(..., workdir=DIR) ships it, as `trainctl submit
--workdir DIR` does (cli/workdir_scan.h, cli/workdir_pack.h):

    rules = IgnoreRules.parse("*.ckpt\\noutputs/\\n")
    rules.ignored("runs/a.ckpt", is_dir=False)         # True
    manifest = scan("./src", max_bytes=100 << 20)      # WorkdirError: what cannot be shipped
    with pack("./src", manifest) as archive:           # a temporary file, gone on close
        archive.digest, archive.size, archive.file     # "sha256:<hex>", bytes, the open file

scan() walks DIR and leaves out what its `.trainctlignore` (gitignore syntax, at DIR's top)
lists; it refuses a missing directory, something that is not a directory, a file or directory
it cannot read, and more than `max_bytes` of files in all (naming the 5 largest). Regular files,
directories and symbolic links (kept as links, whatever they point at) are shipped; other kinds
(sockets, devices, FIFOs) are left out and listed in Manifest.skipped_special.

pack() writes the entries as a POSIX tar archive (PAX format, Python's tarfile) that is
deterministic: the same contents give the same bytes, and so the same digest, whatever the
files' times and owners. Entries come in scan order (sorted by name within each directory, a
directory before what it holds), with mtime 0, uid/gid 0, no user or group names, directories
0755, files 0755 when any execute bit is set else 0644, links 0777 with their target. The
bytes are not those of the C++ CLI's libarchive writer (same contents, other padding), so a
directory uploaded by both is stored twice.

Only the Python standard library is needed.
"""

import hashlib
import os
import re
import stat
import tarfile
import tempfile

__all__ = ["IGNORE_FILE", "IgnoreRules", "Manifest", "PackedWorkdir", "WorkdirError", "pack",
           "scan"]

# The ignore file, read from the directory's top.
IGNORE_FILE = ".trainctlignore"
# How much of a file is read at a time while packing.
_READ_BYTES = 64 << 10


class WorkdirError(ValueError):
    """A working directory that cannot be shipped as it is; the message says why and what to
    do (make a file readable, list files in .trainctlignore)."""


# --- .trainctlignore ---------------------------------------------------------------------------

# glibc's character classes, for "[[:alpha:]]" in a bracket expression.
_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
            "lower": "a-z", "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f",
            "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "cntrl": "\\x00-\\x1f\\x7f",
            "print": "\\x20-\\x7e", "graph": "\\x21-\\x7e"}


def _bracket(pattern, i):
    """The regex of the bracket expression opening at pattern[i] ('['), and the index after it;
    None when it does not close (the '[' is then a literal character, as for fnmatch(3))."""
    j = i + 1
    out = []
    if j < len(pattern) and pattern[j] in "!^":
        out.append("^")
        j += 1
    first = True
    while j < len(pattern):
        c = pattern[j]
        if c == "]" and not first:
            return "[" + "".join(out) + "]", j + 1
        first = False
        if c == "[" and pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            if end >= 0 and pattern[j + 2:end] in _CLASSES:
                out.append(_CLASSES[pattern[j + 2:end]])
                j = end + 2
                continue
        if c == "\\" and j + 1 < len(pattern):
            j += 1
            c = pattern[j]
        out.append(c if c == "-" else re.escape(c))
        j += 1
    return None


def _segment_regex(pattern):
    """fnmatch(3) without flags, for one path segment: '*' any run of characters, '?' one,
    "[a-z]"/"[!a-z]" one of a set, '\\' takes the next character as it is."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append(".*")
            i += 1
        elif c == "?":
            out.append(".")
            i += 1
        elif c == "[":
            bracket = _bracket(pattern, i)
            if bracket is None:
                out.append(re.escape(c))
                i += 1
            else:
                out.append(bracket[0])
                i = bracket[1]
        elif c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("(?s:" + "".join(out) + r")\Z")


class _Rule:
    def __init__(self, segments, negated, dir_only):
        # A leading "**" for a pattern that matches at any depth.
        self.segments = segments
        self.regexes = [None if s == "**" else _segment_regex(s) for s in segments]
        self.negated = negated
        self.dir_only = dir_only

    def matches(self, path, i=0, j=0):
        """Whether the segments from `i` match path's from `j`."""
        if i == len(self.segments):
            return j == len(path)
        if self.segments[i] == "**":
            # Zero or more segments; a trailing "**" needs at least one (everything inside).
            if i + 1 == len(self.segments):
                return j < len(path)
            return any(self.matches(path, i + 1, k) for k in range(j, len(path) + 1))
        if j == len(path):
            return False
        return self.regexes[i].match(path[j]) is not None and self.matches(path, i + 1, j + 1)


def _trim_trailing_spaces(line):
    end = len(line)
    while end > 0 and line[end - 1] == " " and not (end >= 2 and line[end - 2] == "\\"):
        end -= 1
    return line[:end]


class IgnoreRules:
    """The rules of a .trainctlignore, in gitignore's syntax (as common/ignore_rules.h reads it):

      - blank lines and lines starting with '#' say nothing; "\\#" and "\\!" start a pattern
        with those characters; trailing spaces are dropped unless escaped ("\\ ");
      - "!pattern" takes back a path an earlier pattern left out; the last match decides;
      - "pattern/" matches directories only;
      - a pattern with a '/' at its start or in its middle is relative to the directory's top;
        one without matches a name at any depth;
      - '*', '?' and "[a-z]" match within one path segment; "**/" any leading directories,
        "/**" everything inside, "/**/" zero or more directories between;
      - a path inside a left-out directory stays out whatever later patterns say.
    """

    def __init__(self, rules=()):
        self._rules = list(rules)

    @classmethod
    def parse(cls, text):
        """The rules of a .trainctlignore's text."""
        rules = []
        for raw in text.split("\n"):
            line = _trim_trailing_spaces(raw[:-1] if raw.endswith("\r") else raw)
            if not line or line[0] == "#":
                continue
            negated = False
            if line[0] == "!":
                negated = True
                line = line[1:]
            elif len(line) >= 2 and line[0] == "\\" and line[1] in "#!":
                line = line[1:]
            dir_only = line.endswith("/")
            if dir_only:
                line = line[:-1]
            if not line:
                continue
            anchored = "/" in line
            if line[0] == "/":
                line = line[1:]
            segments = [] if anchored else ["**"]
            segments += [s for s in line.split("/") if s]
            rules.append(_Rule(segments, negated, dir_only))
        return cls(rules)

    def __len__(self):
        return len(self._rules)

    def _decide(self, path, is_dir):
        ignored = False
        for rule in self._rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.matches(path):
                ignored = not rule.negated
        return ignored

    def ignored(self, path, is_dir):
        """Whether `path` (relative to the directory, '/'-separated) stays out; `is_dir` when it
        is a directory."""
        segments = [s for s in path.split("/") if s]
        # A directory above it that is left out takes it along.
        for n in range(1, len(segments)):
            if self._decide(segments[:n], True):
                return True
        return self._decide(segments, is_dir)


# --- Scan --------------------------------------------------------------------------------------

class Entry:
    """One thing to ship. kind: "file", "dir" or "symlink"; path: relative, '/'-separated;
    size: a file's bytes; mode: its permission bits; target: a link's target as written."""

    __slots__ = ("path", "kind", "size", "mode", "target")

    def __init__(self, path, kind, size=0, mode=0, target=""):
        self.path, self.kind, self.size, self.mode, self.target = path, kind, size, mode, target

    def __repr__(self):
        return f"Entry({self.path!r}, {self.kind!r}, size={self.size})"


class Manifest:
    """What scan() found: entries (in packing order), total_bytes (of the files), ignored (how
    many paths .trainctlignore left out) and skipped_special (paths of sockets, devices, FIFOs)."""

    def __init__(self):
        self.entries = []
        self.total_bytes = 0
        self.ignored = 0
        self.skipped_special = []


def _mib(n):
    return f"{(n * 10 // (1 << 20)) / 10:g} MiB"


def _reason(e):
    return e.strerror or str(e)


def _walk(root, rel, rules, out):
    path = os.path.join(root, rel) if rel else root
    try:
        names = os.listdir(path)
    except OSError as e:
        raise WorkdirError(f"workdir: cannot read directory {path}: {_reason(e)}") from e
    # Byte order, as the C++ CLI sorts.
    for name in sorted(names, key=os.fsencode):
        child = f"{rel}/{name}" if rel else name
        full = os.path.join(root, child)
        try:
            st = os.lstat(full)
        except OSError as e:
            raise WorkdirError(f"workdir: cannot read {full}: {_reason(e)}") from e
        is_dir = stat.S_ISDIR(st.st_mode)
        if rules.ignored(child, is_dir):
            out.ignored += 1
            continue
        mode = stat.S_IMODE(st.st_mode)
        if is_dir:
            out.entries.append(Entry(child, "dir", mode=mode))
            _walk(root, child, rules, out)
        elif stat.S_ISREG(st.st_mode):
            # Readable now: a file the user cannot read is named before any upload.
            try:
                os.close(os.open(full, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK))
            except OSError as e:
                raise WorkdirError(f"workdir: cannot read {full}: {_reason(e)}; make it readable "
                                   f"or list it in {IGNORE_FILE}") from e
            out.entries.append(Entry(child, "file", size=st.st_size, mode=mode))
            out.total_bytes += st.st_size
        elif stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(full)
            except OSError as e:
                raise WorkdirError(f"workdir: cannot read link {full}: {_reason(e)}") from e
            out.entries.append(Entry(child, "symlink", mode=mode, target=target))
        else:
            out.skipped_special.append(child)


def scan(directory, max_bytes):
    """The Manifest of what `directory` ships; WorkdirError for a missing directory, one that
    is not a directory, an unreadable .trainctlignore, file or directory, or more than
    `max_bytes` of files in all (naming the 5 largest and suggesting .trainctlignore)."""
    directory = os.fspath(directory)
    try:
        st = os.stat(directory)
    except OSError as e:
        raise WorkdirError(f"workdir {directory}: {_reason(e)}") from e
    if not stat.S_ISDIR(st.st_mode):
        raise WorkdirError(f"workdir {directory} is not a directory")
    rules = IgnoreRules()
    ignore_path = os.path.join(directory, IGNORE_FILE)
    if os.path.exists(ignore_path):
        try:
            with open(ignore_path, encoding="utf-8", errors="surrogateescape") as f:
                rules = IgnoreRules.parse(f.read())
        except OSError as e:
            raise WorkdirError(f"workdir: cannot read {ignore_path}: {_reason(e)}") from e
    out = Manifest()
    _walk(directory, "", rules, out)
    if out.total_bytes > max_bytes:
        files = sorted((e for e in out.entries if e.kind == "file"),
                       key=lambda e: (-e.size, os.fsencode(e.path)))
        largest = ", ".join(f"{e.path} ({_mib(e.size)})" for e in files[:5])
        raise WorkdirError(
            f"workdir {directory} holds {_mib(out.total_bytes)}, more than the "
            f"{_mib(max_bytes)} a job may ship; the largest files: {largest}. List what the job "
            f"does not need in {os.path.join(directory, IGNORE_FILE)} (gitignore syntax)")
    return out


# --- Pack --------------------------------------------------------------------------------------

class _HashingWriter:
    """What tarfile writes to: the file, with every byte hashed and counted on its way."""

    def __init__(self, file):
        self.file = file
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data):
        self.file.write(data)
        self.hash.update(data)
        self.size += len(data)
        return len(data)

    def tell(self):
        return self.size


class PackedWorkdir:
    """A packed archive: digest ("sha256:<64 hex>"), size (bytes), files (how many regular
    files), and file: the open temporary file that holds it, removed by close()."""

    def __init__(self, file, digest, size, files):
        self.file, self.digest, self.size, self.files = file, digest, size, files

    def read_at(self, offset, n):
        """Up to `n` bytes from `offset`, whoever else reads the file meanwhile."""
        return os.pread(self.file.fileno(), n, offset)

    def close(self):
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False


def _tarinfo(entry):
    info = tarfile.TarInfo(entry.path)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if entry.kind == "dir":
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    elif entry.kind == "symlink":
        info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, entry.target
    else:
        info.type, info.size = tarfile.REGTYPE, entry.size
        info.mode = 0o755 if entry.mode & 0o111 else 0o644
    return info


def _add_file(tar, directory, entry):
    full = os.path.join(directory, entry.path)
    try:
        fd = os.open(full, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NOCTTY |
                     os.O_NONBLOCK)
    except OSError as e:
        raise WorkdirError(f"workdir: cannot read {full}: {_reason(e)}") from e
    with os.fdopen(fd, "rb", buffering=_READ_BYTES) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WorkdirError(f"workdir: {full} is no longer a regular file; try again")
        if st.st_size != entry.size:
            raise WorkdirError(f"workdir: {full} changed while packing ({entry.size} bytes, now "
                               f"{st.st_size}); try again when it is not being written")
        try:
            tar.addfile(_tarinfo(entry), f)
            grew = f.read(1)
        except OSError as e:
            # tarfile's "unexpected end of data": the file shrank.
            raise WorkdirError(f"workdir: cannot read {full} ({_reason(e)}); try again when it "
                               "is not being written") from e
        if grew:
            raise WorkdirError(f"workdir: {full} grew while packing; try again when it is not "
                               "being written")


def pack(directory, manifest):
    """The PackedWorkdir of `manifest`'s entries, read beneath `directory`, in a temporary file
    (in $TMPDIR); WorkdirError for a file that cannot be read or changed since the scan."""
    directory = os.fspath(directory)
    file = tempfile.TemporaryFile()
    try:
        out = _HashingWriter(file)
        files = 0
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT,
                          encoding="utf-8", errors="surrogateescape") as tar:
            for entry in manifest.entries:
                if entry.kind == "file":
                    _add_file(tar, directory, entry)
                    files += 1
                else:
                    tar.addfile(_tarinfo(entry))
        file.flush()
        return PackedWorkdir(file, "sha256:" + out.hash.hexdigest(), out.size, files)
    except BaseException:
        file.close()
        raise
