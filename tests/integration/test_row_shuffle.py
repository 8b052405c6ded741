"""shuffle=row, the fully random baseline: every invariant holds (exact records, determinism,
exact sizes and seeks, parts that partition the epoch), the order is a shuffle of the whole
dataset rather than of a neighbourhood, and stats.json shows what it costs (a page read per
record, or nearly)."""

import json
import os
import random

import pytest

import datasets as yds
from datasets import (ALL_FEATURES, BASIC, check_rowid_jsonl, expected_records, multiset_diff,
                      parse_jsonl_rowid, split_records)

MATRIX = yds.matrix_specs()


@pytest.mark.parametrize("spec", MATRIX, ids=[s.name for s in MATRIX])
def test_row_shuffle_is_byte_exact(spec, ds, cat):
    data = cat(ds.path(spec), "epoch-0.jsonl", "shuffle=row,rowid").stdout
    problem = check_rowid_jsonl(data, ds.oracle(spec), spec.column)
    assert not problem, f"{spec.name}: {problem}"


@pytest.mark.parametrize("fmt,ext", [("len32", "len32"), ("jsonl", "jsonl")])
def test_row_shuffle_mount_multiset_and_sizes(fmt, ext, ds, mount):
    spec = ALL_FEATURES
    with mount(ds.path(spec), f"shuffle=row,format={fmt},buffer=500") as m:
        data = m.read(f"epoch-0.{ext}")
        assert m.size(f"epoch-0.{ext}") == len(data), "st_size differs from the bytes read"
    diff = multiset_diff(split_records(data, fmt), expected_records(ds.oracle(spec), fmt,
                                                                    spec.column))
    assert not diff, f"format={fmt}: {diff}"


def test_row_shuffle_is_deterministic_and_not_page_order(ds, cat):
    path = ds.path(BASIC)
    first = cat(path, "epoch-0.jsonl", "shuffle=row,rowid").stdout
    again = cat(path, "epoch-0.jsonl", "shuffle=row,rowid,threads=1,mem=8M").stdout
    assert first == again, "the same epoch came out different (threads/mem changed the bytes)"
    other_epoch = cat(path, "epoch-1.jsonl", "shuffle=row,rowid,epochs=2").stdout
    other_seed = cat(path, "epoch-0.jsonl", "shuffle=row,rowid,seed=9").stdout
    page = cat(path, "epoch-0.jsonl", "shuffle=page,rowid").stdout
    assert len({first, other_epoch, other_seed, page}) == 4, \
        "epoch, seed or mode did not change the order"


def test_row_shuffle_spreads_every_window_over_the_dataset(ds, cat):
    """Records that follow each other come from anywhere: a window of 200 records spans most of
    the dataset, and neighbours are rarely within a page's distance (page shuffle keeps whole
    pages together, so its neighbours mostly are)."""
    path = ds.path(BASIC)
    rows = [r for r, _v, _rec in parse_jsonl_rowid(
        cat(path, "epoch-0.jsonl", "shuffle=row,rowid").stdout, "text")]
    total = BASIC.files * BASIC.rows_per_file
    window = rows[:200]
    assert max(window) - min(window) > 0.8 * total, \
        f"the first 200 records span rows {min(window)}..{max(window)} of {total}"
    near = sum(abs(a - b) < 20 for a, b in zip(rows, rows[1:])) / (len(rows) - 1)
    page_rows = [r for r, _v, _rec in parse_jsonl_rowid(
        cat(path, "epoch-0.jsonl", "shuffle=page,rowid").stdout, "text")]
    page_near = sum(abs(a - b) < 20 for a, b in zip(page_rows, page_rows[1:])) / (len(rows) - 1)
    assert near < 0.05, f"{near:.1%} of row-shuffled neighbours are within 20 rows"
    assert near < page_near, "row shuffle keeps neighbours together more than page shuffle"


def test_row_shuffle_parts_and_seeks(ds, mount):
    spec = BASIC
    with mount(ds.path(spec), "shuffle=row,rowid,buffer=300") as m:
        whole = m.read("epoch-0.jsonl")
        parts = [m.read(f"epoch-0.part-{i}-of-3.jsonl") for i in range(3)]
        size = m.size("epoch-0.jsonl")
        rng = random.Random(5)
        fd = os.open(m.p("epoch-0.jsonl"), os.O_RDONLY)
        try:
            for _ in range(200):
                off = rng.randrange(size)
                n = rng.randrange(1, 70000)
                assert os.pread(fd, n, off) == whole[off:off + n], f"pread({n}, {off}) differs"
        finally:
            os.close(fd)
        stats = json.loads(open(m.p(".youmufs/stats.json")).read())
        index = json.loads(open(m.p(".youmufs/index.json")).read())
    assert sorted(split_records(b"".join(parts), "jsonl")) == \
        sorted(split_records(whole, "jsonl")), "the parts do not partition the epoch"
    assert index["options"]["shuffle"] == "row"
    # the cost this baseline exists to show: pages are read on their own, many times over
    assert stats["chunk_loads"] == 0
    assert stats["pages_read_alone"] > 2 * index["pages"], stats
