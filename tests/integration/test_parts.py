"""Part files: epoch-<k>.part-<i>-of-<n>.<ext> for any n >= 1, 0 <= i < n. All n parts together
hold exactly the epoch's records, pairwise disjoint; their sizes add up to the epoch's size.
Out-of-range or malformed part names give ENOENT."""

import errno
import json
import os
import threading
import time
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


def _small_pages(tmp_path):
    """Three files of ~8 KiB pages: a chunk of 64 KiB holds pages of many parts."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path / "small_pages"
    d.mkdir()
    for f in range(3):
        text = [f"f{f} r{r} " + "word " * (r % 40) for r in range(20000)]
        pq.write_table(pa.table({"text": text}), str(d / f"part-{f}.parquet"),
                       data_page_size=8192, use_dictionary=False, compression="snappy")
    return d


SMALL_PAGES_OPTS = "column=text,chunk=64K,buffer=500,cache=none"


def test_a_part_read_by_a_mount_of_its_own_is_the_same_and_fetches_its_share(tmp_path, mount):
    """Each rank of a cluster mounts the dataset itself and reads one part: the mount fetches
    about its share of the files, not every chunk (fs/yfs_loads.h: a chunk load whose pages no
    file open here reads hold more than half its bytes is not read whole; its pages are read
    alone), and the part is the bytes the same part gives on a mount that reads every part.
    Pages of ~8 KiB in chunks of 64 KiB, over storage of 1 ms a read (the I/O engine reads
    ahead)."""
    d = _small_pages(tmp_path)
    files = sum(os.path.getsize(d / n) for n in os.listdir(d))
    opts = SMALL_PAGES_OPTS
    names = [f"epoch-0.part-{i}-of-8.jsonl" for i in range(8)]
    with mount(str(d), opts) as m:
        every = [m.read(n) for n in names]
        epoch = m.read("epoch-0.jsonl")
    assert Counter(split_records(b"".join(every), "jsonl")) == \
        Counter(split_records(epoch, "jsonl"))
    for i in (0, 5):
        with mount(str(d), opts, env={"YOUMUFS_READ_DELAY_US": "1000"}) as m:
            before = json.loads(m.read(".youmufs/stats.json"))["bytes_read"]  # the mount's
            got = m.read(names[i], chunk=64 << 10)
            read = json.loads(m.read(".youmufs/stats.json"))["bytes_read"] - before
        assert got == every[i], f"part {i} of 8 read alone differs"
        assert read < files / 3, (i, read, files)


def test_parts_opened_while_their_chunks_load_are_exact_and_leak_no_memory(tmp_path, mount):
    """Parts opened one after another while the loads of the first ones are in flight (storage
    of 100 ms a read): a load brings the pages of the parts open when it started, and a part
    opened meanwhile adds pages read here. Every part equals its bytes on a mount without
    delay, and once all are read and closed and no load is in flight, no raw page stays
    charged. A load that parked the new part's pages beside those it had reserved for charged
    its hold past what it held: the sanitizer build aborted in yfs_budget.c (hold_adjust, or
    the release of what the load had not handed out); a release build's counters wrapped and
    came back, the pages parked uncounted meanwhile."""
    d = _small_pages(tmp_path)
    names = [f"epoch-0.part-{i}-of-8.jsonl" for i in range(8)]
    with mount(str(d), SMALL_PAGES_OPTS) as m:
        every = [m.read(n) for n in names]
    got, errors = {}, []
    with mount(str(d), SMALL_PAGES_OPTS, env={"YOUMUFS_READ_DELAY_US": "100000"}) as m:
        def read(i):
            try:
                got[i] = m.read(names[i], chunk=64 << 10)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"{names[i]}: {e!r}")
        threads = []
        for i in range(8):
            threads.append(threading.Thread(target=read, args=(i,)))
            threads[-1].start()
            time.sleep(0.04)  # the next part opens while these parts' loads are in flight
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        assert not any(t.is_alive() for t in threads), "a reader hung"
        for i in range(8):
            assert got[i] == every[i], f"{names[i]} differs from the mount without delay"
        deadline = time.monotonic() + 60
        while True:
            st = json.loads(m.read(".youmufs/stats.json"))
            idle = st["io"]["reads_in_flight"] == 0 and st["io"]["queued_loads"] == 0
            kinds = st["memory"]["kinds"]
            if idle and kinds["raw_pages"]["bytes"] == 0 and kinds["chunk_buffers"]["bytes"] == 0:
                break
            assert time.monotonic() < deadline, \
                f"idle={idle}, still charged: raw_pages {kinds['raw_pages']['bytes']} B, " \
                f"chunk_buffers {kinds['chunk_buffers']['bytes']} B"
            time.sleep(0.2)
