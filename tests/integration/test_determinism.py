"""Invariants 2 and 5, determinism and freshness: the bytes of epoch k depend only on the dataset,
the options and k (not on read order, memory budget, or which process serves them); different
seeds and epochs give different orders; shuffle=none is the natural order, shuffle=page never is.
"""

import os
import random

import pytest

from datasets import BASIC, BASIC_NONL, check_rowid_jsonl, expected_records, parse_jsonl_rowid


def _rows(data, column="text"):
    return [r for r, _v, _rec in parse_jsonl_rowid(data, column)]


def _read_backwards(m, name, chunk):
    size = m.size(name)
    parts = []
    with open(m.p(name), "rb", buffering=0) as f:
        fd = f.fileno()
        end = size
        while end > 0:
            start = max(0, end - chunk)
            b = os.pread(fd, end - start, start)
            assert len(b) == end - start, f"short pread at {start}: {len(b)} of {end - start}"
            parts.append(b)
            end = start
    return b"".join(reversed(parts))


def test_two_mounts_byte_identical(ds, mount):
    """Two separate mounts, files read in different orders and patterns: identical bytes."""
    path = ds.path(BASIC)
    opts = "epochs=3,rowid,seed=7"
    names = ["epoch-0.jsonl", "epoch-1.jsonl", "epoch-2.jsonl"]
    with mount(path, opts) as a:
        first = {n: a.read(n) for n in names}
    with mount(path, opts) as b:
        second = {}
        second["epoch-2.jsonl"] = _read_backwards(b, "epoch-2.jsonl", 7777)
        second["epoch-0.jsonl"] = b.read("epoch-0.jsonl", chunk=4096)
        second["epoch-1.jsonl"] = b.read("epoch-1.jsonl", chunk=131072)
    for n in names:
        assert first[n] == second[n], f"{n}: two mounts with the same options differ"
        problem = check_rowid_jsonl(first[n], ds.oracle(BASIC), "text")
        assert not problem, f"{n}: {problem}"


def test_seeds_differ(ds, cat):
    path = ds.path(BASIC)
    s1 = cat(path, "epoch-0.jsonl", "rowid,seed=1").stdout
    s2 = cat(path, "epoch-0.jsonl", "rowid,seed=2").stdout
    for s in (s1, s2):
        problem = check_rowid_jsonl(s, ds.oracle(BASIC), "text")
        assert not problem, problem
    assert _rows(s1) != _rows(s2), "seed=1 and seed=2 give the same order"


def test_epochs_differ(ds, cat):
    path = ds.path(BASIC)
    orders = []
    for k in range(4):
        data = cat(path, f"epoch-{k}.jsonl", "rowid,seed=3").stdout
        problem = check_rowid_jsonl(data, ds.oracle(BASIC), "text")
        assert not problem, f"epoch-{k}: {problem}"
        orders.append(tuple(_rows(data)))
    assert len(set(orders)) == 4, "some epochs have the same order"


def test_default_seed_is_zero(ds, cat):
    path = ds.path(BASIC)
    assert cat(path, "epoch-1.jsonl").stdout == cat(path, "epoch-1.jsonl", "seed=0").stdout


@pytest.mark.parametrize("fmt,ext,spec", [("jsonl", "jsonl", BASIC), ("text", "txt", BASIC_NONL),
                                          ("len32", "len32", BASIC)])
def test_shuffle_none_is_natural_order(fmt, ext, spec, ds, mount, cat):
    """shuffle=none: the file is exactly pyarrow's non-null values in dataset order."""
    path = ds.path(spec)
    want = b"".join(expected_records(ds.oracle(spec), fmt, spec.column))
    with mount(path, f"shuffle=none,format={fmt},epochs=2") as m:
        got0 = m.read(f"epoch-0.{ext}")
        got1 = m.read(f"epoch-1.{ext}")
    assert got0 == want, f"shuffle=none epoch-0 is not the natural order ({len(got0)} vs {len(want)} bytes)"
    assert got1 == want, "shuffle=none epoch-1 is not the natural order"
    assert cat(path, f"epoch-0.{ext}", f"shuffle=none,format={fmt}").stdout == want


def test_shuffle_none_rowid(ds, cat):
    data = cat(ds.path(BASIC), "epoch-0.jsonl", "shuffle=none,rowid").stdout
    assert data == b"".join(expected_records(ds.oracle(BASIC), "jsonl", "text", rowid=True))


@pytest.mark.parametrize("opts", ["", "seed=1", "seed=12345", "buffer=1", "buffer=100",
                                  "buffer=1000000", "shuffle=page"])
def test_shuffle_page_is_not_natural_order(opts, ds, cat):
    path = ds.path(BASIC)
    natural = [r for r, _ in ds.oracle(BASIC)]
    for k in (0, 1, 5):
        data = cat(path, f"epoch-{k}.jsonl", ",".join(filter(None, [opts, "rowid"]))).stdout
        rows = _rows(data)
        assert sorted(rows) == natural, f"epoch-{k} {opts}: not a permutation of the rows"
        assert rows != natural, f"epoch-{k} {opts}: shuffle=page gave the natural order"
        assert rows != natural[::-1], f"epoch-{k} {opts}: reversed natural order"


def test_page_shuffle_moves_pages(ds, cat):
    """With buffer=1 every segment is about one page, so the order comes from the page
    permutation: it must put later rows before earlier ones many times."""
    data = cat(ds.path(BASIC), "epoch-0.jsonl", "rowid,buffer=1").stdout
    rows = _rows(data)
    descents = sum(1 for a, b in zip(rows, rows[1:]) if b < a)
    assert descents >= 10, f"only {descents} descents: pages do not look permuted"


def test_cat_equals_mount(ds, mount, cat):
    """`youmufs cat` writes the same bytes as the mounted file, for epochs (listed or not), parts
    and formats."""
    path = ds.path(BASIC)
    cases = [
        ("seed=5,epochs=2,rowid,buffer=300", ["epoch-0.jsonl", "epoch-1.jsonl", "epoch-9.jsonl",
                                   "epoch-1.part-2-of-3.jsonl"]),
        ("seed=5,format=len32,buffer=200", ["epoch-0.len32", "epoch-3.part-0-of-8.len32"]),
    ]
    for opts, names in cases:
        with mount(path, opts) as m:
            mounted = {n: m.read(n) for n in names}
        for n in names:
            assert mounted[n], f"{n} is empty"
            assert cat(path, n, opts).stdout == mounted[n], f"{opts} {n}: cat differs from mount"


def test_memory_budget_does_not_change_bytes(ds, mount, cat):
    """Correctness never depends on memory: mem=1M and the default give the same bytes."""
    path = ds.path(BASIC)
    small = cat(path, "epoch-1.jsonl", "rowid,mem=1M,buffer=300").stdout
    large = cat(path, "epoch-1.jsonl", "rowid,mem=512M,buffer=300").stdout
    assert small == large, "mem=1M and mem=512M give different epoch bytes"
    with mount(path, "rowid,mem=1M,buffer=300,epochs=2") as m:
        # random-order reads under a tiny budget
        size = m.size("epoch-1.jsonl")
        rng = random.Random(1)
        cuts = sorted(rng.sample(range(1, size), 40))
        spans = list(zip([0] + cuts, cuts + [size]))
        rng.shuffle(spans)
        got = {}
        with open(m.p("epoch-1.jsonl"), "rb", buffering=0) as f:
            for a, b in spans:
                got[a] = os.pread(f.fileno(), b - a, a)
        mounted = b"".join(got[a] for a in sorted(got))
    assert mounted == small, "mounted epoch under mem=1M with random reads differs from cat"


def test_repeated_options_equal_combined(ds, cat):
    """-o a -o b means the same as -o a,b."""
    path = ds.path(BASIC)
    combined = cat(path, "epoch-0.len32", "format=len32,seed=9").stdout
    repeated = cat(path, "epoch-0.len32", None,
                   extra=["-o", "format=len32", "-o", "seed=9"]).stdout
    assert combined and combined == repeated


def test_thread_count_does_not_change_bytes(ds, mount, cat):
    """threads=1 and threads=8 (and the mount's multi-threaded FUSE loop) give the same bytes."""
    path = ds.path(BASIC)
    one = cat(path, "epoch-2.jsonl", "rowid,buffer=300,threads=1").stdout
    eight = cat(path, "epoch-2.jsonl", "rowid,buffer=300,threads=8").stdout
    assert one == eight, "threads=1 and threads=8 give different bytes"
    with mount(path, "rowid,buffer=300,threads=3") as m:
        assert m.read("epoch-2.jsonl", chunk=5000) == one
