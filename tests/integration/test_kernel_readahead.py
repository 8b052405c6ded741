"""kernel_readahead= (fs/yfs_bdi.h): once the mount answers, its backing device's readahead
window is the option's (default 256K), so the kernel asks for larger reads; 0 leaves the
kernel's 128K. The window never changes the bytes. Writing the window needs root: the tests
that read it back run as root (CI does)."""
import json
import os
import subprocess
import tempfile
import time

import pytest

import conftest
from datasets import text_corpus

PREFIX = 24 << 20  # bytes of the epoch read through each mount


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return text_corpus(str(tmp_path_factory.mktemp("ra")), "corpus", seed=5)


def _window_kb(mnt):
    st = os.stat(mnt)
    with open(f"/sys/class/bdi/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/read_ahead_kb") as f:
        return int(f.read())


def _read_prefix(m, name):
    """The first PREFIX bytes of the file in 1 MiB reads, and the mean read request the
    daemon served for them."""
    with open(m.p(".youmufs/stats.json")) as f:
        before = json.load(f)
    out = bytearray()
    with open(m.p(name), "rb") as f:
        while len(out) < PREFIX:
            b = f.read(1 << 20)
            if not b:
                break
            out += b
    with open(m.p(".youmufs/stats.json")) as f:
        after = json.load(f)
    requests = after["read_requests"] - before["read_requests"]
    served = after["bytes_served"] - before["bytes_served"]
    return bytes(out[:PREFIX]), served / max(requests, 1)


def _require_root():
    if os.geteuid() != 0:
        pytest.skip("the readahead window is written in /sys/class/bdi, which needs root")


def test_default_window_is_256k_and_reads_grow_to_it_with_the_same_bytes(corpus, mount):
    _require_root()
    with mount(corpus, "mem=64M,cache=none") as m:
        assert _window_kb(m.p("")) == 256
        wide, wide_request = _read_prefix(m, "epoch-0.jsonl")
    with mount(corpus, "mem=64M,cache=none,kernel_readahead=0") as m:
        time.sleep(0.5)  # nothing should change it: give a wrong write the time to land
        assert _window_kb(m.p("")) == 128, "kernel_readahead=0 changed the kernel's window"
        narrow, narrow_request = _read_prefix(m, "epoch-0.jsonl")
    assert len(wide) == PREFIX and wide == narrow, "the readahead window changed the bytes"
    assert narrow_request <= 128 << 10, narrow_request
    assert 128 << 10 < wide_request <= 256 << 10, \
        f"mean request {wide_request:.0f} bytes with a 256 KiB window (128 KiB: {narrow_request:.0f})"


def test_window_follows_the_option(corpus, mount):
    _require_root()
    with mount(corpus, "mem=64M,cache=none,kernel_readahead=1M") as m:
        assert _window_kb(m.p("")) == 1024
        _, request = _read_prefix(m, "epoch-0.jsonl")
        assert 256 << 10 < request <= 1 << 20, request


def test_unmount_right_after_a_daemon_mount_succeeds(corpus):
    """Setting the window never holds the mount point: `youmufs DATA MNT && fusermount3 -u MNT`
    unmounts at the first try, every time (a stat of the mount point in flight made the
    unmount fail with EBUSY now and then). The window is set all the same."""
    _require_root()
    conftest.require_fuse()
    ATTEMPTS = 30  # the old race failed about one unmount in 100 here
    work = tempfile.mkdtemp(prefix="yfs-ra-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    failures = []
    try:
        for attempt in range(ATTEMPTS):
            p = subprocess.run([conftest.BIN, "-o", "mem=64M,cache=none", corpus, mnt],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                               env=conftest._env())
            assert p.returncode == 0, p.stdout.decode(errors="replace")
            if attempt == 0:
                assert _window_kb(mnt) == 256, "the window was not set before the mount served"
            u = subprocess.run(["fusermount3", "-u", mnt], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=30)
            if u.returncode != 0:
                failures.append(u.stdout.decode(errors="replace").strip())
                subprocess.run(["fusermount3", "-uz", mnt], timeout=30)
            for _ in range(100):  # the daemon leaves once unmounted; a lazy unmount may linger
                if not os.path.ismount(mnt):
                    break
                time.sleep(0.05)
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", mnt], timeout=30)
    assert not failures, f"{len(failures)} of {ATTEMPTS} unmounts right after the mount failed: {failures[0]}"
    os.rmdir(mnt)
    os.rmdir(work)
