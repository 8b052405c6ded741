"""Pages of many records are cut into shuffle units (shuffle/sh_units.h, index/ix_index.h):
exactness, determinism, parts and seeks hold with units, and a window mixes many pages where a
page-granular order served one or two. Pages of 10,000 and more rows, as DuckDB and pyarrow
write small values."""

import json
import os
import random
import subprocess
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import typed_data as td


@pytest.fixture(scope="module")
def big_pages(tmp_path_factory):
    """4 files of 30,000 rows in pages of 10,000 rows: a text column of short strings (some
    null) and an int64 column."""
    d = tmp_path_factory.mktemp("units")
    rng = random.Random(5)
    row = 0
    for f in range(4):
        n = 30000
        text = [None if rng.random() < 0.05 else f"r{row + i} " + "x" * rng.randint(0, 40)
                for i in range(n)]
        ids = list(range(row, row + n))
        pq.write_table(pa.table({"text": text, "id": pa.array(ids, pa.int64())}),
                       str(d / f"part-{f}.parquet"), data_page_size=1 << 30,
                       write_batch_size=10000, row_group_size=n, use_dictionary=False)
        row += n
    md = pq.ParquetFile(str(d / "part-0.parquet")).metadata
    assert md.num_rows == 30000
    return str(d)


def test_cut_pages_exact_in_every_framing(big_pages, cat):
    leaf = td.leaf_oracle(big_pages, "text")
    p = cat(big_pages, "epoch-0.jsonl", {"column": "text", "rowid": True, "seed": 4})
    problem = td.check_rowid_records(p.stdout, leaf)
    assert not problem, problem
    p = cat(big_pages, "epoch-0.jsonl", {"column": "text", "rowid": True, "shuffle": "none"})
    assert p.stdout == b"".join(leaf.expected_jsonl())
    ids = td.leaf_oracle(big_pages, "id")
    raw = cat(big_pages, "epoch-1.bin", {"column": "id", "format": "raw"}).stdout
    got = td.unpack_all(raw, "i64")
    assert sorted(got) == sorted(int(t) for _r, t in ids.rows)
    assert got != sorted(got)


def test_units_mix_pages_in_a_window(big_pages, cat):
    """With pages of 10,000 rows, a page-granular order gives a 10,000-record window the rows
    of one or two pages; units of at most 512 records interleaved 8 pages at a time give it
    many."""
    p = cat(big_pages, "epoch-0.jsonl", {"column": "text", "rowid": True, "seed": 1})
    rows = [json.loads(line)["_row"] for line in p.stdout.splitlines()]
    pages = [r // 10000 for r in rows]
    windows = [len(set(pages[i:i + 10000])) for i in range(0, len(pages) - 9999, 10000)]
    # a page-granular order: at most 2 pages per window; the tail of the order, where fewer
    # pages are left to open, mixes fewer
    assert sum(windows) / len(windows) >= 6, windows
    near = sum(abs(a - b) < 10000 for a, b in zip(rows, rows[1:])) / (len(rows) - 1)
    assert near < 0.5, near


def test_units_deterministic_and_seekable(big_pages, mount, cat):
    opts = {"column": "text", "seed": 9}
    a = cat(big_pages, "epoch-0.jsonl", dict(opts, threads=1, mem="8M")).stdout
    b = cat(big_pages, "epoch-0.jsonl", dict(opts, threads=8, mem="256M")).stdout
    c = cat(big_pages, "epoch-0.jsonl", dict(opts, chunk=0)).stdout
    assert a == b
    assert sorted(a.splitlines()) == sorted(c.splitlines())
    with mount(big_pages, "column=text,seed=9") as m:
        whole = m.read("epoch-0.jsonl")
        assert whole == a and m.size("epoch-0.jsonl") == len(a)
        parts = b"".join(m.read(f"epoch-0.part-{i}-of-3.jsonl") for i in range(3))
        assert sorted(parts.splitlines()) == sorted(whole.splitlines())
        rng = random.Random(2)
        with open(m.p("epoch-0.jsonl"), "rb", buffering=0) as f:
            for _ in range(30):
                off = rng.randrange(len(whole))
                assert os.pread(f.fileno(), 5000, off) == whole[off:off + 5000]


def test_streamed_pages_give_the_same_bytes(big_pages, mount, cat):
    """mem=1M leaves no room to decode a page whole: every page is streamed (index/ix_stream.h)
    and framed record by record, in the mount's page pass and in reads; the epoch is the one
    served from whole decodes, byte for byte (the plan does not depend on mem)."""
    opts = {"column": "text", "rowid": True, "seed": 4}
    whole = cat(big_pages, "epoch-0.jsonl", dict(opts, mem="4G")).stdout
    assert cat(big_pages, "epoch-0.jsonl", dict(opts, mem="1M")).stdout == whole
    problem = td.check_rowid_records(whole, td.leaf_oracle(big_pages, "text"))
    assert not problem, problem
    with mount(big_pages, "column=id,format=raw,mem=1M") as m:
        raw = m.read("epoch-1.bin")
        stats = json.loads(m.read(".youmufs/stats.json"))
        assert stats["pages_streamed"] > 0 and stats["pages_decoded"] == 0, stats
    ids = td.leaf_oracle(big_pages, "id")
    assert sorted(td.unpack_all(raw, "i64")) == sorted(int(t) for _r, t in ids.rows)
    assert raw == cat(big_pages, "epoch-1.bin", {"column": "id", "format": "raw"}).stdout


def read_at_once(m, names):
    """The files of the mount, each read by a thread of its own, all at once, in reads of
    64 KiB (as data loader workers read their parts)."""
    got = [None] * len(names)

    def read(i):
        got[i] = m.read(names[i], chunk=64 << 10)
    threads = [threading.Thread(target=read, args=(i,)) for i in range(len(names))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_streamed_parts_read_at_once_over_slow_storage_are_exact(big_pages, mount):
    """4 parts read at once over storage of 2 ms a read, every page streamed (mem=1M): builds
    of streamed pages then share the framing threads while the cores are busy, and put off
    units whose page's stream another part's build uses (fs/yfs_segment.c). Each part is the
    bytes the same part gives from the page cache, and together they are the column."""
    names = [f"epoch-0.part-{i}-of-4.bin" for i in range(4)]
    opts = "column=id,format=raw,mem=1M,cache=none"
    with mount(big_pages, opts) as m:
        fast = [m.read(n) for n in names]
    with mount(big_pages, opts, env={"YOUMUFS_READ_DELAY_US": "2000"}) as m:
        got = read_at_once(m, names)
        stats = json.loads(m.read(".youmufs/stats.json"))
    assert stats["pages_streamed"] > 0 and stats["io"]["read_latency_p50_ms"] >= 2, stats
    assert got == fast
    ids = td.leaf_oracle(big_pages, "id")
    assert sorted(v for p in got for v in td.unpack_all(p, "i64")) == \
        sorted(int(t) for _r, t in ids.rows)


def test_a_mount_warns_when_segments_mix_few_pages(big_pages, mount):
    """Units of up to 512 records, segments of 1,000: a segment mixes two or three units.
    Said at mount, with what would help; the default buffer mixes enough to say nothing."""
    with mount(big_pages, "column=text,buffer=1000") as m:
        m.read("epoch-0.jsonl", chunk=1 << 16)
        err = m.stderr()
        assert "shuffle quality" in err and "buffer" in err, err
    with mount(big_pages, "column=text") as m:
        assert "shuffle quality" not in m.stderr()


def write_wide_pages(d, seed, compression, words_per_row=90):
    """2 files of 2 pages of 20,000 strings of ~6 bytes a word, without a dictionary."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]
    row = 0
    for f in range(2):
        n = 40000
        text = [f"r{row + i} " + " ".join(rng.choice(words) for _ in range(words_per_row))
                for i in range(n)]
        pq.write_table(pa.table({"text": text}), str(d / f"part-{f}.parquet"),
                       data_page_size=1 << 30, write_batch_size=20000, row_group_size=n,
                       use_dictionary=False, compression=compression)
        row += n


@pytest.fixture(scope="module")
def wide_pages(tmp_path_factory):
    """2 files of 2 pages of 20,000 strings of ~560 bytes (about 11 MB framed a page, 1.7 MB
    compressed; pyarrow closes a page at 20,000 rows): pages cut into 40 units each, larger
    than a page's share of the framed store at mem=160M (5 MiB) while their whole decode fits
    the decode share (25 MiB), as DuckDB's pages of ~100 MB are at mem=1G."""
    d = tmp_path_factory.mktemp("wide")
    write_wide_pages(d, 8, "zstd")
    md = pq.ParquetFile(str(d / "part-0.parquet")).metadata
    assert md.row_group(0).num_rows == 40000
    return str(d)


def test_pages_whose_units_cannot_all_park_are_read_once(wide_pages, mount, cat):
    """A page decoded whole frames its other units for the builds that serve them next, parked
    in the framed store; one whose framed units pass its share of that store is streamed
    instead when paused streams fit (fs/yfs_units.c, units_park). Decoded whole, its later
    units decoded it again and again: DuckDB's text at mem=1G read each page about 80 times
    (12 MB/s); here, 1.8 to 11 times. The epoch reads each source byte about once, and is the
    epoch every mem= serves."""
    files = sum(os.path.getsize(os.path.join(wide_pages, n)) for n in os.listdir(wide_pages))
    with mount(wide_pages, "column=text,mem=160M,seed=3") as m:
        before = json.loads(m.read(".youmufs/stats.json"))["bytes_read"]  # by the mount
        epoch = m.read("epoch-0.jsonl")
        stats = json.loads(m.read(".youmufs/stats.json"))
    read = stats["bytes_read"] - before
    assert read < 1.5 * files, (read, files, stats["pages_decoded"], stats["pages_streamed"])
    assert stats["pages_streamed"] > 0, stats
    # at mem=4G the pages' units park: decoded whole, the same bytes
    assert epoch == cat(wide_pages, "epoch-0.jsonl", {"column": "text", "seed": 3,
                                                      "mem": "4G"}).stdout
    leaf = td.leaf_oracle(wide_pages, "text")
    assert sorted(epoch.splitlines(keepends=True)) == sorted(leaf.expected_jsonl(rowid=False))


@pytest.fixture(scope="module")
def snappy_wide_pages(tmp_path_factory):
    """wide_pages' shape compressed with SNAPPY, as DuckDB writes: 2 files of 2 pages of 20,000
    strings of ~440 bytes, 40 units a page, streamed at mem=40M (a page's share of the framed
    store, 1 MiB, holds 3 of its units). The page pass decodes them whole (under its 16 MiB),
    so it leaves no marks at their units: what these tests see is the read path's own marks,
    paused streams and their copies (huge_snappy_pages has the page pass's marks)."""
    d = tmp_path_factory.mktemp("wide_snappy")
    write_wide_pages(d, 9, "snappy", words_per_row=70)
    return str(d)


def index_without_unit_marks(dataset, mount, tmp_path):
    """A persistent index of the dataset's text built at mem=4G, where the page pass decodes its
    pages whole and so leaves no marks at their units (at mem=40M it streams them and leaves
    some: index/ix_index.h, ix_unit_mark). A mount at mem=40M over it reads them the same, but
    its streams make every mark and copy: what the tests that use it are about."""
    cache = tmp_path / "index"
    cache.mkdir()
    with mount(dataset, f"column=text,mem=4G,cache={cache}") as m:
        assert json.loads(m.read(".youmufs/stats.json"))["units_marked"] == 0
    return cache


def test_streams_leave_copies_at_units_they_pass_over(snappy_wide_pages, mount, tmp_path):
    """8 parts read at once over storage of 2 ms a read: a page's stream passes over units of
    parts whose builds have not started, more than its share of the framed store parks, and
    leaves a paused copy of itself at the first of them (fs/yfs_units.c, ix_stream_fork), which
    the build that needs them continues. Each part is the bytes the same part gives read alone,
    and together they are the column. (On the sanitizer build the daemon asserts that no stream
    holds more than it was granted: reads ahead started by a first slow read inside a page's
    open once came out of that page's grant, index/ix_stream.c open_page.) A stream marks each
    unit it passes and copies only where no mark is, so a mount makes 1 to 5 copies, and
    which depends on the timing of the 8 readers: the part files are read at once on two
    mounts, and copies are made on one at least."""
    names = [f"epoch-0.part-{i}-of-8.jsonl" for i in range(8)]
    opts = f"column=text,mem=40M,cache={index_without_unit_marks(snappy_wide_pages, mount, tmp_path)}"
    with mount(snappy_wide_pages, opts) as m:
        alone = [m.read(n) for n in names]
    leaf = sorted(td.leaf_oracle(snappy_wide_pages, "text").expected_jsonl(rowid=False))
    forked = []
    for _ in range(2):
        with mount(snappy_wide_pages, opts, env={"YOUMUFS_READ_DELAY_US": "2000"}) as m:
            got = read_at_once(m, names)
            stats = json.loads(m.read(".youmufs/stats.json"))
        assert stats["pages_streamed"] > 0 and stats["streams_resumed"] > 0, stats
        assert got == alone
        assert sorted(line for p in got for line in p.splitlines(keepends=True)) == leaf
        forked.append(stats["streams_forked"])
    assert max(forked) > 0, forked


def test_builds_resume_from_the_marks_of_units_streams_passed(snappy_wide_pages, mount):
    """A stream passing a unit's first record leaves a mark there (fs/yfs_streams.h): a build
    that needs the unit later, with no paused stream at it, resumes the page from the mark's
    64 KiB SNAPPY block instead of streaming it from its start. 8 parts of two epochs read at
    once over storage of 2 ms a read at mem=40M: marks are left and resumed from, each part is
    the bytes the same part gives read alone, and the epochs are the column."""
    opts = "column=text,mem=40M,cache=none"
    names = [f"epoch-{e}.part-{i}-of-8.jsonl" for e in range(2) for i in range(8)]
    with mount(snappy_wide_pages, opts) as m:
        alone = [m.read(n) for n in names]
    with mount(snappy_wide_pages, opts, env={"YOUMUFS_READ_DELAY_US": "2000"}) as m:
        got = read_at_once(m, names[:8]) + read_at_once(m, names[8:])
        stats = json.loads(m.read(".youmufs/stats.json"))
    assert stats["units_marked"] > 0 and stats["streams_from_marks"] > 0, stats
    assert got == alone
    leaf = sorted(td.leaf_oracle(snappy_wide_pages, "text").expected_jsonl(rowid=False))
    for epoch in (got[:8], got[8:]):
        assert sorted(line for p in epoch for line in p.splitlines(keepends=True)) == leaf


def test_a_node_reading_one_part_resumes_its_units_and_passes_no_others(snappy_wide_pages,
                                                                          mount, tmp_path):
    """A cluster's rank mounts the dataset alone and reads one part of n: the units of the
    other parts are no file's here (fs/yfs_plans.h, yfs_plan_note_part). Its first epoch's
    streams pass them to reach its own (no marks yet) and park none; from the marks they
    leave, its second epoch resumes each unit of its own where it starts and stops reading
    ahead at the next unit it does not read (ix_stream_ahead_until), where it had gone on
    through the other parts' units: DuckDB's text at 50 ms a read fetched 788 MB for a part
    of 8 whose pages hold 104 MB. Over storage of 2 ms a read, at mem=40M: the second epoch
    resumes from marks and reads under two thirds of what the first read (a resumed unit
    counts the 1 MiB window it starts in: 5.2-8.5 MB against 13.5-15.4 on a loaded machine,
    where 743b3d9 read 10.8 against 15.3), and both parts are the bytes the same parts give
    on a mount with no delay. (With the page pass's marks its first epoch resumes its units
    too: test_a_node_reads_its_share_in_its_first_epoch_from_the_marks_of_the_page_pass.)"""
    cache = index_without_unit_marks(snappy_wide_pages, mount, tmp_path)
    opts = f"column=text,mem=40M,cache={cache},buffer=2000"
    names = ["epoch-0.part-3-of-8.jsonl", "epoch-1.part-3-of-8.jsonl"]
    with mount(snappy_wide_pages, opts) as m:
        alone = [m.read(n) for n in names]
    with mount(snappy_wide_pages, opts, env={"YOUMUFS_READ_DELAY_US": "2000"}) as m:
        got, stats = [], [json.loads(m.read(".youmufs/stats.json"))]
        for n in names:
            got.append(m.read(n, chunk=64 << 10))
            stats.append(json.loads(m.read(".youmufs/stats.json")))
    read = [b["bytes_read"] - a["bytes_read"] for a, b in zip(stats, stats[1:])]
    resumed = [b["streams_from_marks"] - a["streams_from_marks"] for a, b in zip(stats, stats[1:])]
    assert got == alone
    assert stats[1]["units_marked"] > 0, stats[1]
    assert resumed[1] > resumed[0], (resumed, stats[2])
    assert read[1] < read[0] * 2 / 3, (read, stats[2])


@pytest.mark.parametrize("mem", ["48M", "96M", "128M"])
def test_pages_whose_units_cannot_all_park_stream_at_a_middling_mem(snappy_wide_pages, mount,
                                                                   mem):
    """Between mem=40M and 140M a page of 11 MB framed can park neither its units (its share
    of the framed store is 1 to 4 MiB) nor be decoded once for all of them, so it streams:
    paused, its stream holds about 1 MiB without its reads ahead (fs/yfs_units.c, units_park).
    Weighed with 4 MiB of reads ahead, such pages were decoded whole once per unit: one reader
    at mem=96M read its files 27 times. One reader reads each byte about once, and the epoch is
    the column."""
    files = sum(os.path.getsize(os.path.join(snappy_wide_pages, n))
                for n in os.listdir(snappy_wide_pages))
    with mount(snappy_wide_pages, f"column=text,mem={mem},cache=none") as m:
        epoch = m.read("epoch-0.jsonl")
        stats = json.loads(m.read(".youmufs/stats.json"))
    assert stats["pages_decoded"] == 0 and stats["pages_streamed"] > 0, stats
    assert stats["bytes_read"] < 1.5 * files, (stats["bytes_read"], files)
    leaf = td.leaf_oracle(snappy_wide_pages, "text")
    assert sorted(epoch.splitlines(keepends=True)) == sorted(leaf.expected_jsonl(rowid=False))


@pytest.fixture(scope="module")
def huge_snappy_pages(tmp_path_factory):
    """2 files of 2 SNAPPY pages of 20,000 strings of ~1,000 bytes (about 20 MB framed a page,
    as DuckDB's pages of text are 25-125 MB): pages whose whole decode passes the page pass's
    16 MiB, so that it streams them, and cuts each into 40 units."""
    d = tmp_path_factory.mktemp("huge_snappy")
    rng = random.Random(12)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]
    row = 0
    for f in range(2):
        n = 40000
        text = [f"r{row + i} " + " ".join(rng.choice(words) for _ in range(160))
                for i in range(n)]
        pq.write_table(pa.table({"text": text}), str(d / f"part-{f}.parquet"),
                       data_page_size=1 << 30, write_batch_size=20000, row_group_size=n,
                       use_dictionary=False, compression="snappy")
        row += n
    return str(d)


def test_a_node_reads_its_share_in_its_first_epoch_from_the_marks_of_the_page_pass(
        huge_snappy_pages, mount, cat, tmp_path):
    """The page pass streams a page too large to decode whole and leaves a mark at each of its
    units (index/ix_index.h, ix_unit_mark), kept in the persistent index: a rank that mounts
    the dataset alone and reads one part of n resumes each of its units at its mark from the
    first epoch on. Without them its first epoch streamed every page from its start to reach
    its units (DuckDB's text, one part of 8: 704 MB fetched for a part whose pages hold 100).
    Over storage of 2 ms a read, a re-mount from the persistent index: part 3 of 8 of epoch 0
    reads under 0.6 of the files (0.21-0.33; a resumed unit reads from the 64 KiB block of its
    mark to the window after its end; 8a7182f read 0.97, and 74f4d03 0.21-0.65: a stream
    paused at a unit it framed went on through twenty other parts' units to its next one,
    fs/yfs_units.c first_waited), and it is the bytes the same part gives with every page
    decoded whole (mem=4G)."""
    files = sum(os.path.getsize(os.path.join(huge_snappy_pages, n))
                for n in os.listdir(huge_snappy_pages))
    cache = tmp_path / "index"
    cache.mkdir()
    opts = f"column=text,mem=40M,cache={cache}"
    name = "epoch-0.part-3-of-8.jsonl"
    with mount(huge_snappy_pages, opts) as m:  # builds the persistent index
        pass
    with mount(huge_snappy_pages, opts, env={"YOUMUFS_READ_DELAY_US": "2000"}) as m:
        before = json.loads(m.read(".youmufs/stats.json"))
        got = m.read(name, chunk=64 << 10)
        after = json.loads(m.read(".youmufs/stats.json"))
    read = after["bytes_read"] - before["bytes_read"]
    assert read < files * 0.6, (read, files, after)
    assert after["units_marked"] >= 4 * 39, after  # every unit but each page's first
    assert after["streams_from_marks"] > 0, after
    # its reads are timed though it opens no page from its start: the mount knows its
    # storage is slow (reads ahead and prefetches follow it: fs/yfs_units.c)
    assert after["io"]["read_latency_p50_ms"] >= 1.5, after["io"]
    assert got == cat(huge_snappy_pages, name, {"column": "text", "mem": "4G",
                                               "cache": "none"}).stdout


@pytest.fixture(scope="module")
def duckdb_token_pages(tmp_path_factory):
    """2 files of token documents (list<BIGINT>) written by DuckDB with its defaults (SNAPPY,
    PLAIN: too many distinct tokens for its dictionary): pages of about 7,000 documents that
    its page pass streams and cuts into units, the last document of a page going on in the
    next. Documents are windows of one fixed permutation of 50,000 tokens, so that they
    compress well."""
    problem = td.writer_problem("duckdb")
    if problem:
        pytest.fail(f"DuckDB writer unavailable: {problem}")
    import numpy as np
    d = tmp_path_factory.mktemp("duckdb_tokens")
    src = tmp_path_factory.mktemp("duckdb_tokens_src")
    seq = np.random.default_rng(3).permutation(50000).astype(np.int64)
    sources = []
    for f in range(2):
        lens = [200 + (k * 7919) % 2400 for k in range(7000)]
        flat = np.concatenate([seq[(k * 7) % 40000:(k * 7) % 40000 + n]
                               for k, n in enumerate(lens)])
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat))
        path = str(src / f"src-{f}.parquet")
        pq.write_table(pa.table({"input_ids": ids}), path)
        sources.append({"parquet": path})
    spec = src / "spec.json"
    spec.write_text(json.dumps({"sources": sources, "out_dir": str(d), "options": {},
                                "columns": ["input_ids"]}))
    subprocess.run(["node", os.path.join(td.WRITERS, "duckdb_write.mjs"), str(spec)],
                   check=True, cwd=td.WRITERS, timeout=300)
    return str(d)


def test_a_node_reads_its_share_of_duckdb_tokens_from_the_marks_of_the_page_pass(
        duckdb_token_pages, mount, cat, tmp_path):
    """The page pass leaves marks at the units of list pages too (index/ix_index.h: a list's
    mark keeps the entry that starts the unit's first row), so a rank reading one part of n
    of DuckDB's tokens resumes its units from the first epoch on. Without them its first
    epoch streamed every page from its start (DuckDB's tokens, one part of 8: 981 MB fetched
    of the 1.7 GB of files). Over storage of 2 ms a read, a re-mount from the persistent
    index: part 3 of 8 of epoch 0 as raw u16 reads under 0.6 of the files (0.17, where the
    build before list marks read 0.89), and it is the bytes the same part gives with every
    page decoded whole (mem=4G)."""
    files = sum(os.path.getsize(os.path.join(duckdb_token_pages, n))
                for n in os.listdir(duckdb_token_pages))
    cache = tmp_path / "index"
    cache.mkdir()
    raw = f"column=input_ids,format=raw,dtype=u16,sep={td.EOS}"
    opts = f"{raw},mem=40M,cache={cache}"
    name = "epoch-0.part-3-of-8.bin"
    with mount(duckdb_token_pages, opts) as m:  # builds the persistent index
        index = json.loads(m.read(".youmufs/index.json"))
    with mount(duckdb_token_pages, opts, env={"YOUMUFS_READ_DELAY_US": "2000"}) as m:
        before = json.loads(m.read(".youmufs/stats.json"))
        got = m.read(name, chunk=64 << 10)
        after = json.loads(m.read(".youmufs/stats.json"))
    read = after["bytes_read"] - before["bytes_read"]
    assert after["units_marked"] > 0 and after["streams_from_marks"] > 0, after
    assert after["io"]["read_latency_p50_ms"] >= 1.5, after["io"]
    assert read < files * 0.6, (read, files, after, index)
    want = cat(duckdb_token_pages, name, {"column": "input_ids", "format": "raw",
                                          "dtype": "u16", "sep": td.EOS, "mem": "4G",
                                          "cache": "none"}).stdout
    assert got == want
