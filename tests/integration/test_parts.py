"""Part files: epoch-<k>.part-<i>-of-<n>.<ext> for any n >= 1, 0 <= i < n. All n parts together
hold exactly the epoch's records, pairwise disjoint; their sizes add up to the epoch's size.
Out-of-range or malformed part names give ENOENT."""

import errno
import os
from collections import Counter

import pytest

from datasets import BASIC, check_rowid_jsonl, multiset_diff, parse_jsonl_rowid, split_records


@pytest.mark.parametrize("buffer", ["100", "default"])
@pytest.mark.parametrize("n", [1, 3, 8])
def test_parts_partition_the_epoch(n, buffer, ds, mount):
    opts = "rowid,epochs=2" + ("" if buffer == "default" else f",buffer={buffer}")
    with mount(ds.path(BASIC), opts) as m:
        for k in (0, 1, 4):                       # epoch 4 is not listed but reachable
            epoch = m.read(f"epoch-{k}.jsonl")
            parts = []
            for i in range(n):
                name = f"epoch-{k}.part-{i}-of-{n}.jsonl"
                data = m.read(name)
                assert m.size(name) == len(data), f"{name}: st_size != bytes read"
                parts.append(data)
            assert sum(len(p) for p in parts) == len(epoch), \
                f"epoch-{k}, n={n}: part sizes sum to {sum(len(p) for p in parts)}, " \
                f"epoch has {len(epoch)} bytes"
            diff = multiset_diff([r for p in parts for r in split_records(p, "jsonl")],
                                 split_records(epoch, "jsonl"))
            assert not diff, f"epoch-{k}, n={n}: parts != epoch: {diff}"
            rows = [set(r for r, _v, _rec in parse_jsonl_rowid(p, "text")) for p in parts]
            for i in range(n):
                for j in range(i + 1, n):
                    common = rows[i] & rows[j]
                    assert not common, f"epoch-{k}: parts {i} and {j} of {n} share rows " \
                                       f"{sorted(common)[:5]}"
            problem = check_rowid_jsonl(b"".join(parts), ds.oracle(BASIC), "text")
            assert not problem, f"epoch-{k}, n={n}, concatenated parts: {problem}"
            if n > 1 and buffer == "100":
                assert sum(1 for p in parts if p) > 1, \
                    f"epoch-{k}: with buffer=100 and n={n} all records are in one part"


def test_many_parts_sizes_add_up(ds, mount):
    with mount(ds.path(BASIC), "format=len32,buffer=50") as m:
        total = m.size("epoch-0.len32")
        for n in (2, 5, 64, 1000):
            sizes = [m.size(f"epoch-0.part-{i}-of-{n}.len32") for i in range(n)]
            assert sum(sizes) == total, f"n={n}: part sizes sum to {sum(sizes)}, epoch {total}"
        parts = [m.read(f"epoch-0.part-{i}-of-5.len32") for i in range(5)]
        recs = Counter(r for p in parts for r in split_records(p, "len32"))
        assert recs == Counter(split_records(m.read("epoch-0.len32"), "len32"))


BAD_NAMES = [
    "epoch-0.part-3-of-3.jsonl", "epoch-0.part-8-of-8.jsonl", "epoch-0.part-9-of-8.jsonl",
    "epoch-0.part-0-of-0.jsonl", "epoch-0.part-1-of-0.jsonl", "epoch-0.part--1-of-3.jsonl",
    "epoch-0.part-a-of-3.jsonl", "epoch-0.part-1-of-.jsonl", "epoch-0.part-1-of-3",
    "epoch-0.part-1-of-3.txt", "epoch-0.part-1-of-3.jsonl.bak", "epoch-0.part-1.jsonl",
    "epoch-0.part-4294967296-of-3.jsonl", "epoch-0.part-1-of-3-of-4.jsonl",
]


def test_out_of_range_part_names_enoent(ds, mount, expect_errno):
    with mount(ds.path(BASIC)) as m:
        assert os.path.isfile(m.p("epoch-0.part-2-of-3.jsonl"))   # the valid neighbour exists
        for name in BAD_NAMES:
            expect_errno(lambda: os.stat(m.p(name)), errno.ENOENT, f"stat {name}")
            expect_errno(lambda: open(m.p(name), "rb"), errno.ENOENT, f"open {name}")
        listed = set(os.listdir(m.path))
        assert not any(".part-" in n for n in listed), f"part files listed: {listed}"


def test_out_of_range_part_cat_fails(ds, cat):
    for name in ("epoch-0.part-3-of-3.jsonl", "epoch-0.part-0-of-0.jsonl"):
        p = cat(ds.path(BASIC), name, check=False)
        assert p.returncode != 0, f"cat {name} succeeded"
        assert p.stderr.strip(), f"cat {name}: no message on stderr"
