"""The mount root: exactly epoch-0..epoch-<epochs-1> with the format's extension, plus the
directory .youmufs; unlisted epochs are reachable by name; other names are ENOENT. Daemon mode:
exit status 0 means the mount is ready."""

import errno
import glob
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

import conftest
from datasets import BASIC, BASIC_NONL, check_rowid_jsonl, oracle


@pytest.mark.parametrize("opts,spec,expected", [
    (None, BASIC, ["epoch-0.jsonl"]),
    ("epochs=3", BASIC, ["epoch-0.jsonl", "epoch-1.jsonl", "epoch-2.jsonl"]),
    ("epochs=2,format=text", BASIC_NONL, ["epoch-0.txt", "epoch-1.txt"]),
    ("format=len32,epochs=12", BASIC, [f"epoch-{k}.len32" for k in range(12)]),
    ("format=jsonl,rowid,epochs=1", BASIC, ["epoch-0.jsonl"]),
])
def test_root_listing(opts, spec, expected, ds, mount):
    with mount(ds.path(spec), opts) as m:
        listed = os.listdir(m.path)
        assert sorted(listed) == sorted(expected + [".youmufs"]), f"root lists {sorted(listed)}"
        for name in expected:
            st = os.stat(m.p(name))
            assert stat.S_ISREG(st.st_mode), f"{name} is not a regular file"
            assert st.st_size > 0, f"{name} has st_size 0"
        st = os.stat(m.p(".youmufs"))
        assert stat.S_ISDIR(st.st_mode), ".youmufs is not a directory"
        inner = set(os.listdir(m.p(".youmufs")))
        assert {"index.json", "stats.json"} <= inner, f".youmufs lists {sorted(inner)}"
        for n in ("index.json", "stats.json"):
            assert stat.S_ISREG(os.stat(m.p(".youmufs/" + n)).st_mode)
        # scandir agrees with stat
        for e in os.scandir(m.path):
            assert e.is_dir() == (e.name == ".youmufs"), e.name


def test_unlisted_epochs_and_unknown_names(ds, mount, expect_errno):
    with mount(ds.path(BASIC), "rowid,epochs=1") as m:
        for k in (1, 7, 123):
            name = f"epoch-{k}.jsonl"
            assert os.path.isfile(m.p(name)), f"{name} not reachable by name"
            problem = check_rowid_jsonl(m.read(name), ds.oracle(BASIC), "text")
            assert not problem, f"{name}: {problem}"
        for name in ("epoch-0.txt", "epoch-0.len32", "epoch-x.jsonl", "epoch--1.jsonl",
                     "epoch-.jsonl", "epoch-0.jsonl.bak", "epoch-0", "nothing.jsonl",
                     ".youmufs/nothing.json", "epoch-0.jsonl/x"):
            want = errno.ENOTDIR if name.endswith("/x") else errno.ENOENT
            expect_errno(lambda: os.stat(m.p(name)), want, f"stat {name}")
        assert sorted(os.listdir(m.path)) == [".youmufs", "epoch-0.jsonl"]


def test_daemon_mode_ready_on_exit(ds):
    """Without -f, exit status 0 means the mount is ready (no polling needed)."""
    conftest.require_fuse()
    work = tempfile.mkdtemp(prefix="yfs-daemon-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    try:
        p = subprocess.run([conftest.BIN, "-o", "rowid", ds.path(BASIC), mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                           env=conftest._env())
        assert p.returncode == 0, f"daemon-mode mount failed: {p.stderr.decode(errors='replace')}"
        assert os.path.ismount(mnt), "exit status 0 but the mount is not ready"
        data = open(os.path.join(mnt, "epoch-0.jsonl"), "rb").read()
        problem = check_rowid_jsonl(data, ds.oracle(BASIC), "text")
        assert not problem, problem
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", mnt], timeout=30)
        for _ in range(50):
            if not os.path.ismount(mnt):
                break
            time.sleep(0.1)
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-uz", mnt], timeout=30)
    os.rmdir(mnt)
    os.rmdir(work)


def test_directory_symlinks_each_directory_once(ds, mount, tmp_path):
    """Symlink loops (a directory linking to itself, to an ancestor, two directories outside the
    dataset linking to each other) and a second link to a directory already listed: every
    directory is listed once, with a warning naming the path skipped; a symlink to a directory
    outside the dataset is followed. The epoch holds each file's records exactly once, in the
    row order of a loop-free tree with the same paths (pyarrow's reading of it)."""
    src = sorted(glob.glob(os.path.join(ds.path(BASIC), "*.parquet")))
    layout = ["a/inner/part-002.parquet", "a/part-000.parquet", "a/part-001.parquet",
              "x/part-003.parquet", "x/q/part-004.parquet"]
    d, out, mirror = tmp_path / "ds", tmp_path / "out", tmp_path / "mirror"
    for i, rel in enumerate(layout):
        real = rel.replace("x/q/", "out/q/").replace("x/", "out/p/")
        for root, name in ((tmp_path, real if real.startswith("out/") else "ds/" + rel),
                           (mirror, rel)):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src[i % len(src)], root / name)
    os.symlink(".", d / "self")                  # a directory linking to itself
    os.symlink("..", d / "a" / "inner" / "up")   # a -> inner -> a
    os.symlink("a", d / "b")                     # a second link to a
    os.symlink(out / "p", d / "x")               # outside the dataset: followed ...
    os.symlink("../q", out / "p" / "q")          # ... where p and q link to each other
    os.symlink("../p", out / "q" / "p")
    t0 = time.monotonic()
    with mount(d, "rowid") as m:
        took = time.monotonic() - t0
        data = m.read("epoch-0.jsonl")
        log = m.stderr()
    problem = check_rowid_jsonl(data, oracle(str(mirror)), "text")
    assert not problem, f"{problem}\nstderr:\n{log}"
    assert took < 10, f"mount took {took:.1f} s"
    for skipped, listed in (("/self", "/ds"), ("/a/inner/up", "/a"), ("/b", "/a"),
                            ("/x/q/p", "/x")):
        assert re.search(rf"warning: \S*{re.escape(skipped)} is \S*{re.escape(listed)} again",
                         log), f"no warning for {skipped}:\n{log}"
