"""Invariant 4, bounded memory: the daemon's peak resident memory (VmHWM) stays within
index + mem + a small constant, whatever readers do, on a dataset whose epoch is many times
larger than that bound (so holding decoded data without limit would be caught)."""

import json
import os
import random
import threading

import pytest

import datasets as yds

MEM = 16 << 20
CONSTANT = 64 << 20     # libfuse, thread stacks, per-thread decode buffers of ~1 MiB pages


@pytest.fixture(scope="module")
def big_dataset(ds):
    return yds.text_corpus(ds.root, "memory-160M", 0)


def _hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_peak_rss_within_budget(big_dataset, mount):
    import conftest
    conftest.require_binary()
    with open(conftest.BIN, "rb") as f:
        if b"__asan_init" in f.read():
            pytest.skip("resident memory is not meaningful under AddressSanitizer")
    with mount(big_dataset, f"mem={MEM},epochs=2,buffer=2000") as m:
        idx = json.loads(m.read(".youmufs/index.json"))
        index_bytes = idx.get("index_memory_bytes", 0) if isinstance(idx, dict) else 0
        size = m.size("epoch-0.jsonl")
        bound = index_bytes + MEM + CONSTANT
        assert size > 1.5 * bound, "dataset too small to test the memory bound"

        # 1. one sequential reader of a whole epoch
        with open(m.p("epoch-0.jsonl"), "rb", buffering=0) as f:
            n = 0
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                n += len(b)
        assert n == size
        after_seq = _hwm(m.proc.pid)

        # 2. eight concurrent readers: parts, and random offsets far apart
        errors = []

        def part(i):
            try:
                with open(m.p(f"epoch-1.part-{i}-of-4.jsonl"), "rb", buffering=0) as f:
                    while f.read(1 << 18):
                        pass
            except OSError as e:      # pragma: no cover - reported below
                errors.append(e)

        def randoms(seed):
            rng = random.Random(seed)
            try:
                with open(m.p("epoch-1.jsonl"), "rb", buffering=0) as f:
                    for _ in range(150):
                        os.pread(f.fileno(), 65536, rng.randrange(size))
            except OSError as e:      # pragma: no cover
                errors.append(e)
        threads = [threading.Thread(target=part, args=(i,)) for i in range(4)]
        threads += [threading.Thread(target=randoms, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=180)
        assert not errors, errors
        peak = _hwm(m.proc.pid)

    mib = 1 << 20
    assert after_seq <= bound, (f"peak RSS {after_seq / mib:.0f} MiB after one sequential epoch "
                                f"> index {index_bytes / mib:.1f} + mem {MEM / mib:.0f} + "
                                f"{CONSTANT / mib:.0f} MiB")
    assert peak <= bound, (f"peak RSS {peak / mib:.0f} MiB with 8 concurrent readers > index "
                           f"{index_bytes / mib:.1f} + mem {MEM / mib:.0f} + "
                           f"{CONSTANT / mib:.0f} MiB")
