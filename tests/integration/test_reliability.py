"""Reliability under injected faults (issue 5). Every test injects one fault and checks what
youmufs does about it:

1. a source file changes while mounted (truncated, replaced by rename, rewritten in place,
   rewritten in place with its mtime put back, deleted): reads never return wrong bytes;
   reads that need the changed bytes fail with EIO and the daemon logs a line naming the file;
   the mount stays up (other reads correct, .youmufs/ answers) -- invariant 7;
2. 32 readers at once (threads and processes, parts of two epochs) with mem=32M: every byte
   right, and peak RSS within index + mem + the constant of test_memory.py -- invariants 2, 4;
3. readers SIGKILLed in the middle of large reads: the mount keeps serving correct bytes and
   the daemon leaks no descriptors (and, under AddressSanitizer, no file handles);
4. shutdown by SIGTERM or `fusermount3 -u`: exit status 0, no process and no mount left, no
   sanitizer (leak) report.

Only the shared helper of conftest.py mounts. The ASan variants run the same helper with
conftest.BIN pointed at the sanitizer binary (YOUMUFS_ASAN_BIN, else <repo>/build-asan/youmufs).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datasets as yds

import conftest

MIB = 1 << 20


# ---------------------------------------------------------------------------------------------
# helpers

def _is_asan(binary):
    try:
        with open(binary, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def _asan_bin():
    """The AddressSanitizer build, or None."""
    cand = os.environ.get("YOUMUFS_ASAN_BIN") or os.path.join(conftest.REPO, "build-asan",
                                                              "youmufs")
    if _is_asan(conftest.BIN):
        return conftest.BIN
    return cand if os.path.isfile(cand) and os.access(cand, os.X_OK) else None


@pytest.fixture(params=["release", "asan"])
def binary(request, monkeypatch):
    """Runs the test once with YOUMUFS_BIN and once with the ASan binary (via the one shared
    mount helper: conftest.mounted reads conftest.BIN at call time)."""
    if request.param == "asan":
        b = _asan_bin()
        if not b:
            conftest._skip_or_fail("no AddressSanitizer binary (build-asan/youmufs): "
                                   "run scripts/build.sh --asan or set YOUMUFS_ASAN_BIN")
        monkeypatch.setattr(conftest, "BIN", b)
    return request.param


def _status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/{pid}/status")


def _fds(pid):
    """The daemon's open descriptors, as {fd: target}."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return out


def _stats(m):
    return json.loads(m.read(".youmufs/stats.json"))


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _in_proc_mounts(path):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == path for line in f if len(line.split()) > 1)


def _procs_naming(path):
    """pids of processes (other than us) whose command line mentions `path` (the mountpoint is
    unique to one mount, so this finds exactly that mount's daemon, never someone else's)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if path.encode() in cmd:
            out.append(int(d))
    return out


# ---------------------------------------------------------------------------------------------
# 1. sources changing while mounted

ROWS_AB = 2000          # two large files
ROWS_C = 300            # the small file that changes: only some segments need it
OPTS_CHANGE = "epochs=2,buffer=100,mem=4M"
STEP = 16384


def _change_dataset(root):
    """a.parquet, b.parquet (large) and c.parquet (small). Uncompressed PLAIN pages, so a
    length-preserving edit of c's bytes changes its values while it still decodes: a reader
    that does not notice the change would serve wrong bytes, not fail."""
    os.makedirs(root)
    rng = random.Random(5)
    words = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega".split()
    for name, rows, page in (("a", ROWS_AB, 4096), ("b", ROWS_AB, 4096), ("c", ROWS_C, 16384)):
        vals = [f"{name}{i:05d} " + " ".join(rng.choice(words) for _ in range(rng.randint(5, 40)))
                for i in range(rows)]
        pq.write_table(pa.table({"text": pa.array(vals)}), os.path.join(root, f"{name}.parquet"),
                       compression="none", use_dictionary=False, data_page_size=page,
                       write_batch_size=16, row_group_size=1000, write_statistics=False)
    return root


def _footer_start(data):
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


def _edit_values(path):
    """Length-preserving edit of the values of `path` (not its footer): same size, different
    data. Checks with pyarrow that the values really changed."""
    before = pq.read_table(path).column("text").to_pylist()
    data = bytearray(open(path, "rb").read())
    end = _footer_start(data)
    body = bytes(data[:end])
    for w in (b"alpha", b"gamma", b"omega", b"sigma"):
        body = body.replace(w, w.upper())
    data[:end] = body
    with open(path, "r+b") as f:       # in place: same inode, same size
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    after = pq.read_table(path).column("text").to_pylist()
    assert after != before and len(after) == len(before), "the edit did not change the values"


def _scan(m, name, ref):
    """Read `name` front to back in STEP-sized preads, skipping a STEP after an EIO. Every byte
    returned must equal `ref` at its offset. Returns (bytes_ok, eio_count)."""
    size = m.size(name)
    assert size == len(ref), f"{name}: st_size {size} != {len(ref)}"
    ok = eio = 0
    with open(m.p(name), "rb", buffering=0) as f:
        off = 0
        while off < size:
            try:
                got = os.pread(f.fileno(), STEP, off)
            except OSError as e:
                assert e.errno == errno.EIO, f"{name} @ {off}: expected EIO, got {e!r}"
                eio += 1
                off = (off // STEP + 1) * STEP
                continue
            assert got, f"{name}: read returned 0 bytes at offset {off} < st_size {size}"
            want = ref[off:off + len(got)]
            if got != want:
                i = next(k for k in range(len(got)) if got[k] != want[k])
                pytest.fail(f"{name}: WRONG BYTES at offset {off + i} after a source change: "
                            f"got {got[i:i + 60]!r}, want {want[i:i + 60]!r}")
            ok += len(got)
            off += len(got)
    return ok, eio


def _truncate(c):
    os.truncate(c, os.path.getsize(c) // 2)


def _replace(c):
    """A new, valid file of different content renamed over c (new inode)."""
    tmp = c + ".new"
    pq.write_table(pa.table({"text": pa.array([f"NEWVALUE {i}" for i in range(ROWS_C)])}), tmp,
                   compression="none", use_dictionary=False)
    os.rename(tmp, c)


def _rewrite(c):
    """Same size, same inode, new mtime (set explicitly: coarse clocks cannot hide it)."""
    st = os.stat(c)
    _edit_values(c)
    os.utime(c, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert os.stat(c).st_size == st.st_size


def _rewrite_keep_mtime(c):
    """Same size, same inode, and the old mtime put back, as `cp -p`, `rsync -t --inplace` or
    tar extraction over an existing file do. Only st_ctime (which no one can set) moves."""
    st = os.stat(c)
    _edit_values(c)
    os.utime(c, ns=(st.st_atime_ns, st.st_mtime_ns))
    st2 = os.stat(c)
    assert (st2.st_size, st2.st_mtime_ns, st2.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    assert st2.st_ctime_ns != st.st_ctime_ns


def _delete(c):
    os.unlink(c)


# kind -> (mutation, the changed bytes are gone from the daemon's descriptor)
CHANGES = {
    "truncated": (_truncate, True),
    "rewritten_in_place": (_rewrite, True),
    "rewritten_in_place_mtime_restored": (_rewrite_keep_mtime, True),
    "replaced_by_rename": (_replace, False),
    "deleted": (_delete, False),
}


@pytest.mark.parametrize("kind", list(CHANGES))
def test_source_change_while_mounted(kind, tmp_path, mount, cat):
    """Truncated / rewritten in place: the indexed bytes are gone, so reads needing c.parquet
    must fail with EIO (and log a line naming it); reads not needing it stay correct.
    Replaced by rename / deleted: the daemon's open descriptor still holds the very inode it
    indexed, unchanged, so serving those old bytes is correct (they are the epoch as defined at
    mount; EIO would be allowed too). In every case: never a wrong byte, and the mount stays up.
    """
    mutate, gone = CHANGES[kind]
    d = _change_dataset(str(tmp_path / "ds"))
    c = os.path.join(d, "c.parquet")
    names = ["epoch-0.jsonl", "epoch-1.jsonl", "epoch-0.part-1-of-3.jsonl"]
    refs = {n: cat(d, n, OPTS_CHANGE).stdout for n in names}       # before the change
    with mount(d, OPTS_CHANGE) as m:
        sizes = {n: m.size(n) for n in names}       # nothing read through the mount yet
        mutate(c)
        results = {n: _scan(m, n, refs[n]) for n in names}
        # the mount is still up and answers
        assert m.proc.poll() is None, "the daemon exited after a source change"
        stats = _stats(m)
        idx = json.loads(m.read(".youmufs/index.json"))
        assert idx["files"] == 3
        assert {n: m.size(n) for n in names} == sizes
        assert sorted(os.listdir(m.path)) == [".youmufs", "epoch-0.jsonl", "epoch-1.jsonl"]
        time.sleep(0.2)
        log = m.stderr()
    eio = sum(e for _, e in results.values())
    ok = sum(o for o, _ in results.values())
    print(f"\n{kind}: {ok} bytes read correctly, {eio} reads failed with EIO; "
          f"read_errors={stats.get('read_errors')}")
    assert ok > 0, f"{kind}: no read succeeded: reads that do not need c.parquet must still work"
    if gone:
        assert eio > 0, (f"{kind}: c.parquet changed after mount, yet every read succeeded (with "
                         f"the old bytes? they are no longer on disk): expected EIO")
    if eio:
        assert stats.get("read_errors", 0) > 0, f"stats.json read_errors not counted: {stats}"
        lines = [ln for ln in log.splitlines() if "c.parquet" in ln]
        assert lines, f"{kind}: reads failed with EIO but no log line names c.parquet:\n{log}"
    else:
        # every byte was the indexed content of the old inode, as checked by _scan
        assert "NEWVALUE" not in log


# ---------------------------------------------------------------------------------------------
# datasets for the load tests

MEM = 32 << 20
CONSTANT = 64 << 20         # the allowance of test_memory.py


@pytest.fixture(scope="module")
def big_dataset(ds):
    return yds.text_corpus(ds.root, "reliability-160M", 1)


def _ref_hashes(dataset, names, options):
    """sha256 and length of each name, from `youmufs cat` (no mount involved)."""
    def one(n):
        out = conftest.run_cat(dataset, n, options).stdout
        return n, (_sha(out), len(out))
    with ThreadPoolExecutor(2) as ex:
        return dict(ex.map(one, names))


# ---------------------------------------------------------------------------------------------
# 2. 32 readers at once

READER_PY = r"""
import hashlib, os, sys
path, chunk = sys.argv[1], int(sys.argv[2])
h, n = hashlib.sha256(), 0
fd = os.open(path, os.O_RDONLY)
while True:
    b = os.read(fd, chunk)
    if not b:
        break
    h.update(b); n += len(b)
print(h.hexdigest(), n)
"""


def test_32_mixed_readers_mem32m(big_dataset, mount):
    """16 threads and 16 processes (python readers and sha256sum) read the 32 parts
    epoch-{0,1}.part-{0..15}-of-16 at once: every part equals `youmufs cat`, and the daemon's
    peak RSS stays within index + mem + 64 MiB."""
    opts = f"mem={MEM},epochs=2"
    names = [f"epoch-{e}.part-{i}-of-16.jsonl" for e in (0, 1) for i in range(16)]
    refs = _ref_hashes(big_dataset, names, opts)
    asan = _is_asan(conftest.BIN)
    results, errors = {}, []
    with mount(big_dataset, opts) as m:
        idx = json.loads(m.read(".youmufs/index.json"))
        index_bytes = idx.get("index_memory_bytes", 0)
        bound = index_bytes + MEM + CONSTANT
        epoch = m.size("epoch-0.jsonl")
        assert epoch > 1.5 * bound, "dataset too small to test the memory bound"
        start = threading.Barrier(17)

        def thread_reader(i, name):
            rng = random.Random(i)
            h, n = hashlib.sha256(), 0
            try:
                with open(m.p(name), "rb", buffering=0) as f:
                    start.wait(timeout=60)
                    while True:
                        b = f.read(rng.choice([4096, 65536, 131072, 1 << 20, 3 << 20]))
                        if not b:
                            break
                        h.update(b)
                        n += len(b)
                results[name] = (h.hexdigest(), n)
            except Exception as e:      # noqa: BLE001 - reported below
                errors.append(f"{name}: {e!r}")

        procs = {}
        threads = []
        for k, name in enumerate(names):
            if k % 2 == 0:
                threads.append(threading.Thread(target=thread_reader, args=(k, name)))
            elif k % 4 == 1:
                procs[name] = subprocess.Popen(
                    [sys.executable, "-c", READER_PY, m.p(name), str([65536, 1 << 20][k % 8 // 4])],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            else:
                procs[name] = subprocess.Popen(["sha256sum", m.p(name)], stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE)
        for t in threads:
            t.start()
        start.wait(timeout=60)
        for t in threads:
            t.join(timeout=200)
        for name, p in procs.items():
            try:
                out, err = p.communicate(timeout=200)
            except subprocess.TimeoutExpired:
                p.kill()
                errors.append(f"{name}: reader process hung")
                continue
            if p.returncode != 0:
                errors.append(f"{name}: {p.args[0]} exit {p.returncode}: {err.decode()[-300:]}")
                continue
            fields = out.split()
            if fields[0] and len(fields) >= 2 and fields[1].isdigit():
                results[name] = (fields[0].decode(), int(fields[1]))
            else:                              # sha256sum: "<hash>  <path>"
                results[name] = (fields[0].decode(), m.size(name))
        peak = _status(m.proc.pid, "VmHWM") * 1024
        stats = _stats(m)
        print(f"\n32 readers: peak RSS {peak / MIB:.1f} MiB, bound {bound / MIB:.1f} MiB; {stats}")
    assert not errors, errors
    wrong = [n for n in names if results.get(n) != refs[n]]
    assert not wrong, f"{len(wrong)} of 32 parts differ from `youmufs cat`: {wrong[:4]}"
    assert stats.get("read_errors", 0) == 0, stats
    if not asan:
        assert peak <= bound, (f"peak RSS {peak / MIB:.0f} MiB with 32 readers > index "
                               f"{index_bytes / MIB:.1f} + mem {MEM / MIB:.0f} + "
                               f"{CONSTANT / MIB:.0f} MiB")


# ---------------------------------------------------------------------------------------------
# 3. readers killed mid-read

# Reads the file over and over (so it is always mid-read when killed), in
# requests of argv[2] bytes: 128 KiB like cat, or 64 MiB.
PY_READER = r"""
import os, sys
while True:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    while os.read(fd, int(sys.argv[2])):
        pass
    os.close(fd)
"""


def _kill_readers_mid_read(m, name, rounds, delays):
    """Start two readers of `name` (128 KiB and 64 MiB requests, reading it over and over),
    SIGKILL both after a delay. Returns how many were killed while still reading."""
    killed = 0
    for r in range(rounds):
        ps = [subprocess.Popen([sys.executable, "-c", PY_READER, m.p(name), str(128 << 10)]),
              subprocess.Popen([sys.executable, "-c", PY_READER, m.p(name), str(64 << 20)])]
        time.sleep(delays[r % len(delays)])
        for p in ps:
            if p.poll() is None:
                killed += 1
            p.send_signal(signal.SIGKILL)
        for p in ps:
            p.wait(timeout=30)
    return killed


def _settle_fds(pid, baseline, timeout=10.0):
    """The kernel releases a killed reader's file asynchronously: wait for the fd count."""
    deadline = time.monotonic() + timeout
    while True:
        now = _fds(pid)
        if len(now) <= len(baseline) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def test_readers_killed_mid_read(big_dataset, mount):
    opts = f"mem={MEM},epochs=3"
    refs = _ref_hashes(big_dataset, ["epoch-2.jsonl"], opts)
    with mount(big_dataset, opts) as m:
        pid = m.proc.pid
        base_depth = _stats(m)["io"]["depth"]
        base_fds = _fds(pid)
        base_threads = _status(pid, "Threads")
        killed = _kill_readers_mid_read(m, "epoch-0.jsonl", 4, [0.05, 0.3, 0.8, 0.15])
        killed += _kill_readers_mid_read(m, "epoch-1.part-1-of-2.jsonl", 2, [0.1, 0.5])
        assert killed >= 6, f"only {killed} readers were still reading when killed"
        # the mount still works and is right
        h = hashlib.sha256()
        n = 0
        with open(m.p("epoch-2.jsonl"), "rb", buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                h.update(b)
                n += len(b)
        assert (h.hexdigest(), n) == refs["epoch-2.jsonl"], "epoch-2 wrong after killed readers"
        stats = _stats(m)
        fds = _settle_fds(pid, base_fds)
        threads = _status(pid, "Threads")
    assert stats.get("read_errors", 0) == 0, stats
    assert len(fds) <= len(base_fds), (f"daemon descriptors {len(base_fds)} -> {len(fds)} after "
                                       f"killed readers: new {set(fds.values()) - set(base_fds.values())}")
    # the I/O engine starts a thread per unit of its depth, which grows while builds wait for
    # storage (under ASan and a loaded machine, from 8 to 32): those are not leaked
    grown = stats["io"]["depth"] - base_depth
    assert threads <= base_threads + 16 + grown, (f"daemon threads {base_threads} -> {threads}, "
                                                  f"I/O depth {base_depth} -> {base_depth + grown}")


@pytest.fixture(scope="module")
def small_dataset(ds):
    """~24 MB epoch: big enough that a read takes a while under ASan."""
    d = os.path.join(ds.root, "reliability-24M")
    if not os.path.isdir(d):
        rng = random.Random(2)
        base = " ".join(rng.choice("lorem ipsum dolor sit amet consectetur adipiscing elit".split())
                        for _ in range(200000))
        os.makedirs(d + ".tmp", exist_ok=True)
        for f in range(2):
            vals = [base[(o := rng.randrange(len(base) - 2000)):o + rng.randint(100, 1100)]
                    for _ in range(20000)]
            pq.write_table(pa.table({"text": pa.array(vals)}), f"{d}.tmp/p{f}.parquet",
                           compression="zstd", row_group_size=5000)
        os.rename(d + ".tmp", d)
    return d


def test_killed_readers_leak_no_handles_asan(small_dataset, mount, monkeypatch):
    """Under AddressSanitizer: readers killed mid-read, then unmount. A file handle whose release
    never came would be unreachable memory at exit, i.e. a LeakSanitizer report, which the mount
    helper turns into a failure."""
    b = _asan_bin()
    if not b:
        conftest._skip_or_fail("no AddressSanitizer binary (build-asan/youmufs)")
    monkeypatch.setattr(conftest, "BIN", b)
    opts = "mem=16M,epochs=2"
    refs = _ref_hashes(small_dataset, ["epoch-1.jsonl"], opts)
    with mount(small_dataset, opts) as m:
        base_fds = _fds(m.proc.pid)
        killed = _kill_readers_mid_read(m, "epoch-0.jsonl", 3, [0.1, 0.4, 0.02])
        assert killed >= 3, f"only {killed} readers were still reading when killed"
        data = m.read("epoch-1.jsonl")
        assert (_sha(data), len(data)) == refs["epoch-1.jsonl"]
        fds = _settle_fds(m.proc.pid, base_fds)
        assert len(fds) <= len(base_fds), f"descriptors {len(base_fds)} -> {len(fds)}"


# ---------------------------------------------------------------------------------------------
# 4. clean shutdown

def _wait_exit(proc, timeout=conftest.EXIT_TIMEOUT):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"daemon still running {timeout} s after shutdown was asked for")


@pytest.mark.parametrize("how", ["sigterm", "fusermount_u"])
def test_clean_shutdown(how, binary, ds, mount):
    """SIGTERM to the daemon, or `fusermount3 -u`: the daemon exits with status 0, nothing is
    left mounted, no process of that mount remains, no sanitizer or leak report."""
    from datasets import BASIC
    path = ds.path(BASIC)
    with mount(path, "epochs=2,mem=8M") as m:
        pid = m.proc.pid
        # some state to tear down: segments built, plans of two epochs, a closed handle
        m.read("epoch-0.jsonl")
        with open(m.p("epoch-1.part-0-of-2.jsonl"), "rb") as f:
            f.read(5000)
        _stats(m)
        time.sleep(0.2)
        if how == "sigterm":
            os.kill(pid, signal.SIGTERM)
        else:
            p = subprocess.run(["fusermount3", "-u", m.path], capture_output=True, timeout=30)
            assert p.returncode == 0, f"fusermount3 -u: {p.stderr.decode()}"
        rc = _wait_exit(m.proc)
        deadline = time.monotonic() + 5
        while (os.path.ismount(m.path) or _in_proc_mounts(m.path)) and time.monotonic() < deadline:
            time.sleep(0.05)
        left_mounted = os.path.ismount(m.path) or _in_proc_mounts(m.path)
        procs = _procs_naming(m.path)
        err = m.stderr()
    rep = conftest.sanitizer_report(err.encode())
    assert not rep, f"{how} ({binary}): sanitizer report:\n{rep}"
    assert not left_mounted, f"{how}: {m.path} still mounted after the daemon exited"
    assert not procs, f"{how}: processes of the mount remain: {procs}"
    assert not os.path.exists(f"/proc/{pid}"), f"{how}: daemon pid {pid} still exists"
    assert rc == 0, f"{how} ({binary}): daemon exit status {rc}, expected 0; stderr:\n{err[-2000:]}"


def test_sigterm_with_open_reader(ds, mount):
    """SIGTERM while a reader holds an open file in the middle of an epoch: the daemon still
    exits (no hang), the mount is gone, the reader gets an error rather than wrong data or a
    hang, and nothing of the mount remains."""
    from datasets import BASIC
    path = ds.path(BASIC)
    with mount(path, "epochs=2") as m:
        pid = m.proc.pid
        f = open(m.p("epoch-0.jsonl"), "rb", buffering=0)
        try:
            first = f.read(4096)
            assert first
            os.kill(pid, signal.SIGTERM)
            _wait_exit(m.proc)
            try:
                f.read(1 << 20)     # served from the page cache, or ENOTCONN
            except OSError as e:
                assert e.errno in (errno.ENOTCONN, errno.EIO, errno.ECONNABORTED), e
        finally:
            try:
                f.close()       # FUSE flush on a dead connection: not our concern
            except OSError as e:
                assert e.errno in (errno.ENOTCONN, errno.ECONNABORTED), e
        deadline = time.monotonic() + 5
        while (os.path.ismount(m.path) or _in_proc_mounts(m.path)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.ismount(m.path) and not _in_proc_mounts(m.path), \
            "still mounted after SIGTERM"
        assert not _procs_naming(m.path)
