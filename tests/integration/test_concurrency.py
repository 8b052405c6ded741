"""Concurrent readers: 8 threads and 8 processes reading different epochs and parts of one mount
at the same time each get exactly the bytes a lone sequential reader gets (invariant 2), and the
epochs are exact (invariant 1)."""

import os
import random
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

from datasets import BASIC, check_rowid_jsonl

OPTS = "rowid,epochs=4,buffer=400,mem=8M"
NAMES = ["epoch-0.jsonl", "epoch-1.jsonl", "epoch-2.jsonl", "epoch-3.jsonl",
         "epoch-0.part-0-of-3.jsonl", "epoch-0.part-2-of-3.jsonl", "epoch-5.part-1-of-2.jsonl",
         "epoch-6.jsonl"]


def _references(ds, cat):
    """What a lone sequential reader gets, from `youmufs cat` (no mount involved)."""
    return {n: cat(ds.path(BASIC), n, OPTS).stdout for n in NAMES}


def test_eight_threads_different_files(ds, mount, cat):
    refs = _references(ds, cat)
    for n in NAMES:
        if ".part-" not in n:
            problem = check_rowid_jsonl(refs[n], ds.oracle(BASIC), "text")
            assert not problem, f"{n}: {problem}"
    with mount(ds.path(BASIC), OPTS) as m:
        barrier = threading.Barrier(len(NAMES))

        def reader(i, name):
            rng = random.Random(i)
            size = os.stat(m.p(name)).st_size
            out = bytearray()
            with open(m.p(name), "rb", buffering=0) as f:
                barrier.wait(timeout=60)
                while True:
                    b = os.pread(f.fileno(), rng.choice([1000, 4096, 65536, 131072, 300000]),
                                 len(out))
                    if not b:
                        break
                    out += b
            return name, size, bytes(out)

        for _round in range(2):
            with ThreadPoolExecutor(len(NAMES)) as ex:
                results = list(ex.map(lambda a: reader(*a), enumerate(NAMES)))
            for name, size, data in results:
                assert size == len(data), f"{name}: st_size {size} != {len(data)} bytes read"
                assert data == refs[name], f"{name}: concurrent read differs from lone read"


def test_eight_threads_one_file_interleaved(ds, mount, cat):
    """8 threads share one descriptor and read interleaved 64 KiB stripes of the same epoch."""
    ref = cat(ds.path(BASIC), "epoch-2.jsonl", OPTS).stdout
    stripe = 65536
    with mount(ds.path(BASIC), OPTS) as m:
        with open(m.p("epoch-2.jsonl"), "rb", buffering=0) as f:
            fd = f.fileno()
            nstripes = (len(ref) + stripe - 1) // stripe
            got = [None] * nstripes

            def worker(t):
                for s in range(t, nstripes, 8):
                    got[s] = os.pread(fd, stripe, s * stripe)
            threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
                assert not t.is_alive(), "a reader thread hung"
    assert b"".join(got) == ref


def test_eight_processes(ds, mount, cat):
    """8 processes (dd, cat, head) read different files and the same file at once."""
    refs = _references(ds, cat)
    with mount(ds.path(BASIC), OPTS) as m:
        procs = []
        for i, name in enumerate(NAMES):
            if i % 3 == 0:
                cmd = ["cat", m.p(name)]
            elif i % 3 == 1:
                cmd = ["dd", f"if={m.p(name)}", "bs=65536", "status=none"]
            else:
                cmd = ["dd", f"if={m.p(name)}", "bs=4096", "status=none"]
            procs.append((name, subprocess.Popen(cmd, stdout=subprocess.PIPE)))
        # and three more readers of the same file
        for bs in ("1000", "131072", "1M"):
            procs.append(("epoch-1.jsonl", subprocess.Popen(
                ["dd", f"if={m.p('epoch-1.jsonl')}", f"bs={bs}", "status=none"],
                stdout=subprocess.PIPE)))
        for name, p in procs:
            out, _ = p.communicate(timeout=120)
            assert p.returncode == 0, f"reader of {name} failed"
            assert out == refs[name], f"{name}: concurrent process read differs from lone read"


def test_concurrent_cold_start_cats(ds, tmp_path):
    """8 `youmufs cat` processes start at once on a dataset never seen before (cold index cache,
    so they may all build and write a persistent cache at the same time): all identical and
    exact; then once more with the cache warm."""
    import shutil
    import conftest
    conftest.require_binary()
    d = tmp_path / "cold"
    shutil.copytree(ds.path(BASIC), d)
    args = [conftest.BIN, "cat", "-o", "rowid,seed=11", str(d), "epoch-0.jsonl"]
    for _round in range(2):
        procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=conftest._env()) for _ in range(8)]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, f"concurrent cat failed: {err.decode(errors='replace')}"
            outs.append(out)
        assert all(o == outs[0] for o in outs), "concurrent cold-start cats disagree"
        problem = check_rowid_jsonl(outs[0], ds.oracle(BASIC), "text")
        assert not problem, problem
