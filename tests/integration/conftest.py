"""Fixtures and the one shared mount helper for the youmufs integration tests.

    python3 -m pytest tests/integration -q

Environment:
    YOUMUFS_BIN       binary to test (default: <repo>/build/youmufs)
    YOUMUFS_REQUIRE=1 fail instead of skip when the binary or FUSE is missing (for CI)

Fixtures:
    ds          per-session dataset cache: ds.path(spec), ds.oracle(spec)
    mount       mount(dataset, options) -> context manager yielding a Mount (see `mounted`)
    mount_fails mount_fails(dataset, options) -> CompletedProcess of a mount expected to fail
    cat         cat(dataset, name, options, check=True) -> CompletedProcess of `youmufs cat`
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import datasets as yds  # noqa: E402  (tests/integration/datasets.py, not Hugging Face's)

assert os.path.dirname(os.path.abspath(yds.__file__)) == HERE, yds.__file__

REPO = os.path.dirname(os.path.dirname(HERE))
# The parquet-testing corpus (apache/parquet-testing data/): shared/ beside the repository, as
# CI has it, or where YOUMUFS_PARQUET_TESTING says. The one place tests look for it.
PARQUET_TESTING = os.path.abspath(os.environ.get("YOUMUFS_PARQUET_TESTING") or
                                  os.path.join(REPO, "..", "shared", "parquet-testing", "data"))
BIN = os.environ.get("YOUMUFS_BIN") or os.path.join(REPO, "build", "youmufs")
REQUIRE = os.environ.get("YOUMUFS_REQUIRE") == "1"

MOUNT_TIMEOUT = 30.0      # seconds until the mount must be ready
EXIT_TIMEOUT = 15.0       # seconds for the daemon to exit after unmount
WATCHDOG = 240.0          # a mount living longer than this is killed: a hang fails, never blocks
CAT_TIMEOUT = 120.0

SANITIZER_PATTERNS = re.compile(
    rb"ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:|"
    rb"SUMMARY: (Address|UndefinedBehavior|Thread)Sanitizer")


def _fuse_problem():
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse does not exist (no FUSE in this kernel/container)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse is not readable and writable by this user"
    if not shutil.which("fusermount3"):
        return "fusermount3 is not on PATH (install fuse3)"
    return None


def _bin_problem():
    if not os.path.isfile(BIN):
        return f"youmufs binary not found at {BIN} (build it, or set YOUMUFS_BIN)"
    if not os.access(BIN, os.X_OK):
        return f"{BIN} is not executable"
    return None


FUSE_PROBLEM = _fuse_problem()
BIN_PROBLEM = _bin_problem()


def _skip_or_fail(reason):
    if REQUIRE:
        pytest.fail(reason + " (YOUMUFS_REQUIRE=1)", pytrace=False)
    pytest.skip(reason)


def require_binary():
    if BIN_PROBLEM:
        _skip_or_fail(BIN_PROBLEM)


def require_fuse():
    require_binary()
    if FUSE_PROBLEM:
        _skip_or_fail("mounted tests skipped: " + FUSE_PROBLEM)


# ---------------------------------------------------------------------------------------------
# reporting: never skip silently

def pytest_report_header(config):
    return [f"youmufs binary: {BIN} ({BIN_PROBLEM or 'ok'})",
            f"FUSE: {FUSE_PROBLEM or 'ok (/dev/fuse, fusermount3)'}"]


def pytest_configure(config):
    for problem in (BIN_PROBLEM, FUSE_PROBLEM):
        if problem:
            sys.stderr.write(f"\n*** youmufs integration tests: {problem}: "
                             f"the affected tests will be SKIPPED ***\n")


def pytest_terminal_summary(terminalreporter):
    problems = [p for p in (BIN_PROBLEM, FUSE_PROBLEM) if p]
    if problems:
        terminalreporter.write_sep("!", "youmufs integration tests skipped", red=True)
        for p in problems:
            terminalreporter.write_line(f"  reason: {p}")


# ---------------------------------------------------------------------------------------------
# options and processes

def option_args(options) -> list:
    """options: None, a string "a=1,b", a dict, or a list of "k=v"/"flag" strings (one -o)."""
    if not options:
        return []
    if isinstance(options, str):
        return ["-o", options]
    if isinstance(options, dict):
        options = [k if v is True else f"{k}={v}" for k, v in options.items()]
    return ["-o", ",".join(options)]


def _env(extra=None):
    env = dict(os.environ)
    env.update(extra or {})
    # Keep any persistent index cache of youmufs inside the session's tmp dir.
    env["XDG_CACHE_HOME"] = _SESSION_CACHE
    # handle_abort: a failed assert() in the daemon prints its stack to the stderr a failing
    # test shows, not the assertion's line alone.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:handle_abort=1")
    return env


_SESSION_CACHE = tempfile.mkdtemp(prefix="yfs-xdg-cache-")


def sanitizer_report(stderr: bytes):
    m = SANITIZER_PATTERNS.search(stderr or b"")
    if not m:
        return None
    start = max(0, m.start() - 200)
    return stderr[start:start + 3000].decode("utf-8", "replace")


def _describe_rc(rc):
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def run_cat(dataset, name, options=None, check=True, timeout=CAT_TIMEOUT, extra=(), env=None):
    """`youmufs cat [-o OPTIONS] DATASET NAME`. Fails the test on a signal, a sanitizer report,
    a timeout, or (with check=True) a non-zero exit. env: variables to add (an S3 server's)."""
    require_binary()
    args = [BIN, "cat", *option_args(options), *extra, str(dataset), name]
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout, env=_env(env))
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{' '.join(args)}` did not finish within {timeout} s (hang)")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0:
        pytest.fail(f"`{' '.join(args)}` {_describe_rc(p.returncode)}; stderr:\n{err[-3000:]}")
    rep = sanitizer_report(p.stderr)
    if rep:
        pytest.fail(f"`{' '.join(args)}`: sanitizer report:\n{rep}")
    if check and p.returncode != 0:
        pytest.fail(f"`{' '.join(args)}` {_describe_rc(p.returncode)}; stderr:\n{err[-3000:]}")
    return p


def _unmount(mnt):
    """fusermount3 -u, then -uz. Returns a description of what failed, or ''."""
    notes = []
    for attempt in range(3):
        if not os.path.ismount(mnt):
            return "; ".join(notes)
        p = subprocess.run(["fusermount3", "-u", mnt], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
        if p.returncode == 0:
            return "; ".join(notes)
        notes.append(f"fusermount3 -u: {p.stdout.decode(errors='replace').strip()}")
        time.sleep(0.2 * (attempt + 1))
    p = subprocess.run(["fusermount3", "-uz", mnt], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=30)
    if p.returncode != 0:
        notes.append(f"fusermount3 -uz: {p.stdout.decode(errors='replace').strip()}")
    return "; ".join(notes)


class Mount:
    """A live mount: .path is the mountpoint; helpers read files below it."""

    def __init__(self, path, proc, stderr_path, args):
        self.path = path
        self.proc = proc
        self.stderr_path = stderr_path
        self.args = args

    def p(self, name):
        return os.path.join(self.path, name)

    def read(self, name, chunk=1 << 20):
        """Sequential read of the whole file with read(2) calls of `chunk` bytes."""
        out = []
        with open(self.p(name), "rb", buffering=0) as f:
            while True:
                b = f.read(chunk)
                if not b:
                    break
                out.append(b)
        return b"".join(out)

    def size(self, name):
        return os.stat(self.p(name)).st_size

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


@contextlib.contextmanager
def mounted(dataset, options=None, extra_args=(), timeout=MOUNT_TIMEOUT, env=None):
    """Mount `dataset` with `youmufs -f` under a fresh temporary directory and yield a Mount.

    Teardown always unmounts (fusermount3 -u, then -uz), waits for the daemon to exit (kills it
    after EXIT_TIMEOUT), and fails the test if the daemon crashed: non-zero exit, a signal, or a
    sanitizer report on its stderr. A watchdog kills a daemon that outlives WATCHDOG seconds, so a
    hung filesystem fails the test instead of blocking the suite.
    """
    require_fuse()
    workdir = tempfile.mkdtemp(prefix="yfs-mnt-")
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(mnt)
    stderr_path = os.path.join(workdir, "stderr.log")
    args = [BIN, "-f", *option_args(options), *extra_args, str(dataset), mnt]
    errf = open(stderr_path, "wb")
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                            env=_env(env), start_new_session=True)
    errf.close()
    m = Mount(mnt, proc, stderr_path, args)
    fired = []

    def watchdog():
        fired.append(True)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        subprocess.run(["fusermount3", "-uz", mnt], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    timer = threading.Timer(WATCHDOG, watchdog)
    timer.daemon = True
    timer.start()

    body_error = None
    problems = []
    ready = False       # a daemon that exits before the mount is ready is reported by the body
    try:
        deadline = time.monotonic() + timeout
        while not os.path.ismount(mnt):
            rc = proc.poll()
            if rc is not None:
                pytest.fail(f"`{' '.join(args)}` {_describe_rc(rc)} before the mount was ready; "
                            f"stderr:\n{m.stderr()[-3000:]}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"`{' '.join(args)}`: not mounted after {timeout} s; "
                            f"stderr:\n{m.stderr()[-3000:]}", pytrace=False)
            time.sleep(0.02)
        ready = True
        yield m
    except BaseException as e:  # noqa: B902 - re-raised below, after teardown
        body_error = e
    finally:
        note = _unmount(mnt)
        if note:
            problems.append("unmount: " + note)
        killed = bool(fired)
        try:
            rc = proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            killed = True
            rc = proc.wait(timeout=10)
            problems.append(f"daemon did not exit within {EXIT_TIMEOUT} s after unmount; killed")
        timer.cancel()
        if fired:
            problems.append(f"watchdog: the mount was still in use after {WATCHDOG} s (hang?); "
                            f"daemon killed")
        if rc != 0 and not killed and ready:
            problems.append(f"daemon {_describe_rc(rc)} (crashed or failed)")
        with open(stderr_path, "rb") as f:
            err = f.read()
        rep = sanitizer_report(err)
        if rep:
            problems.append("sanitizer report:\n" + rep)
        if os.path.ismount(mnt):
            problems.append("still mounted after teardown")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        if problems:
            msg = (f"mount `{' '.join(args)}`: " + "; ".join(problems) +
                   f"\n--- daemon stderr (tail) ---\n{err[-8000:].decode('utf-8', 'replace')}")
            if body_error is not None and not isinstance(body_error, pytest.skip.Exception):
                raise AssertionError(msg + f"\n--- and the test itself failed: {body_error!r}") \
                    from body_error
            pytest.fail(msg, pytrace=False)
        if body_error is not None:
            raise body_error


def expect_mount_failure(dataset, options=None, timeout=MOUNT_TIMEOUT, env=None):
    """Run `youmufs [-o ...] DATASET MOUNTPOINT` (daemon mode, no -f) where it must fail before
    mounting. Returns the CompletedProcess; fails the test on a hang, a signal, a sanitizer
    report, or a mount that succeeded (which is unmounted again)."""
    require_fuse()
    workdir = tempfile.mkdtemp(prefix="yfs-badmnt-")
    mnt = os.path.join(workdir, "mnt")
    os.mkdir(mnt)
    args = [BIN, *option_args(options), str(dataset), mnt]
    try:
        try:
            p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=timeout, env=_env(env))
        except subprocess.TimeoutExpired:
            pytest.fail(f"`{' '.join(args)}` did not exit within {timeout} s (hang)")
        err = p.stderr.decode("utf-8", "replace")
        if os.path.ismount(mnt):
            pytest.fail(f"`{' '.join(args)}` mounted (exit {p.returncode}) but should have "
                        f"refused; stderr:\n{err[-2000:]}")
        if p.returncode < 0:
            pytest.fail(f"`{' '.join(args)}` {_describe_rc(p.returncode)}; stderr:\n{err[-3000:]}")
        rep = sanitizer_report(p.stderr)
        if rep:
            pytest.fail(f"`{' '.join(args)}`: sanitizer report:\n{rep}")
        return p
    finally:
        if os.path.ismount(mnt):
            _unmount(mnt)
        if not os.path.ismount(mnt):
            shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# fixtures

class DatasetCache:
    """Generates each Spec once per session; caches the oracle too."""

    def __init__(self, root):
        self.root = root
        self._oracles = {}

    def path(self, spec: yds.Spec) -> str:
        d = os.path.join(self.root, spec.name)
        if not os.path.isdir(d):
            tmp = d + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            yds.write_dataset(spec, tmp)
            os.rename(tmp, d)
        return d

    def oracle(self, spec: yds.Spec) -> list:
        if spec not in self._oracles:
            self._oracles[spec] = yds.oracle(self.path(spec), spec.column)
        return self._oracles[spec]


@pytest.fixture(scope="session")
def ds(tmp_path_factory):
    return DatasetCache(str(tmp_path_factory.mktemp("datasets")))


@pytest.fixture
def mount():
    return mounted


@pytest.fixture
def mount_fails():
    return expect_mount_failure


@pytest.fixture
def cat():
    return run_cat


def assert_errno(fn, expected, what):
    """Call fn(); it must raise OSError with errno `expected`."""
    try:
        fn()
    except OSError as e:
        assert e.errno == expected, (f"{what}: expected {errno.errorcode[expected]}, "
                                     f"got {errno.errorcode.get(e.errno, e.errno)} ({e})")
    else:
        pytest.fail(f"{what}: expected {errno.errorcode[expected]}, but it succeeded")


@pytest.fixture
def expect_errno():
    return assert_errno
