"""The plan-driven I/O engine (fs/yfs_io.h) over slow storage: every source read delayed
by YOUMUFS_READ_DELAY_US. The epoch it serves is the same bytes as with one read at a
time and no delay, and exact against pyarrow; its reads overlap; stats.json reports its
depth, its reads in flight and their latency."""
import json
import os
import threading

import pytest

from datasets import expected_records, oracle, split_records, text_corpus

DELAY_US = 5000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return text_corpus(str(tmp_path_factory.mktemp("io")), "corpus", seed=11)


def _read_sampling(m, name):
    """The file's bytes, and the stats.json samples taken every 10 ms while reading."""
    samples, done = [], threading.Event()

    def sample():
        while not done.is_set():
            with open(m.p(".youmufs/stats.json")) as f:
                samples.append(json.load(f)["io"])
            done.wait(0.01)

    t = threading.Thread(target=sample)
    t.start()
    try:
        data = m.read(name)
    finally:
        done.set()
        t.join()
    return data, samples


def test_engine_overlaps_slow_reads_and_serves_the_same_bytes(corpus, mount, monkeypatch):
    with mount(corpus, "mem=64M,io_depth=1,cache=none") as m:
        one_at_a_time = m.read("epoch-0.jsonl")
    monkeypatch.setenv("YOUMUFS_READ_DELAY_US", str(DELAY_US))
    with mount(corpus, "mem=64M,cache=none") as m:
        data, samples = _read_sampling(m, "epoch-0.jsonl")
        with open(m.p(".youmufs/stats.json")) as f:
            io = json.load(f)["io"]
    assert data == one_at_a_time, "the engine changed the epoch's bytes"
    got = sorted(split_records(data, "jsonl"))
    assert got == sorted(expected_records(oracle(corpus), "jsonl", "text"))
    assert max(s["reads_in_flight"] for s in samples) >= 2, "storage reads never overlapped"
    assert io["loads_ahead"] > 0, io
    assert io["read_latency_p50_ms"] >= DELAY_US / 1000 and \
        io["read_latency_p99_ms"] >= io["read_latency_p50_ms"], io
    assert 8 <= io["depth"] <= 128 and not io["depth_fixed"], io


def test_a_fixed_depth_is_kept_and_parts_are_exact(corpus, mount, monkeypatch):
    monkeypatch.setenv("YOUMUFS_READ_DELAY_US", str(DELAY_US))
    with mount(corpus, "mem=64M,io_depth=3,cache=none") as m:
        parts = [m.read(f"epoch-1.part-{i}-of-3.jsonl") for i in range(3)]
        with open(m.p(".youmufs/stats.json")) as f:
            io = json.load(f)["io"]
    assert io["depth"] == 3 and io["depth_fixed"], io
    got = sorted(r for p in parts for r in split_records(p, "jsonl"))
    assert got == sorted(expected_records(oracle(corpus), "jsonl", "text"))


def test_io_depth_out_of_range_is_refused(corpus, mount_fails):
    p = mount_fails(corpus, "io_depth=129")
    assert b"io_depth=129" in p.stderr and b"128" in p.stderr, p.stderr


def test_loads_ahead_cover_latency_not_the_whole_store(corpus, mount):
    """On local disk the engine reads ahead what the reader is served while a few storage
    reads take their p99 latency (each reader at least 16 MiB of the epoch beyond the segments
    prefetched), not its whole share of the store of loaded pages: at mem=4G (a store of 1 GB)
    one reader of 64 KiB pages had the whole dataset read ahead, and its builds decoded cold
    copies, 0.7-0.8 x as fast. Here the corpus' 57 MB of pages would all be parked at once."""
    with mount(corpus, "mem=4G,buffer=2000,cache=none") as m:
        data = m.read("epoch-0.jsonl")
        with open(m.p(".youmufs/stats.json")) as f:
            stats = json.load(f)
    assert sorted(split_records(data, "jsonl")) == \
        sorted(expected_records(oracle(corpus), "jsonl", "text"))
    parked = stats["memory"]["kinds"]["parked_pages"]["peak"]
    assert stats["io"]["loads_ahead"] > 0, stats["io"]
    assert parked < 28 << 20, parked
