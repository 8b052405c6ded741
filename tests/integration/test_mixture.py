"""Mixtures: DATASET as a JSON file of weighted sources (README.md, "Mixtures").

Three pyarrow sources, weights 5:3:2, the epoch of the default size (the sum of the sources'
records): source 0 (40,000 records) gives fewer than it has, so successive epochs cover it;
source 1 (6,000, its column named "content") gives more, so it repeats in fresh passes; source
2 (20,000) gives fewer. Every record is checked against pyarrow through rowid ("_row" is the
row in its source, "_source" the source's position in the file)."""

import json
import os
import random
import time
from collections import Counter
from fractions import Fraction

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datasets import split_records

WEIGHTS = (5, 3, 2)
SIZES = (40000, 6000, 20000)
COLUMNS = ("text", "content", "text")


def _value(source, row):
    rng = random.Random(source * 1000003 + row)
    return f"s{source} r{row} " + "w" * rng.randrange(0, 90)


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    """The mixture file and the oracle: oracle[i][row] as pyarrow reads source i."""
    root = tmp_path_factory.mktemp("mixture")
    oracle = []
    for i, (n, col) in enumerate(zip(SIZES, COLUMNS)):
        d = root / f"src{i}"
        d.mkdir()
        half = n // 2
        for f, rows in enumerate((range(0, half), range(half, n))):
            t = pa.table({col: [_value(i, r) for r in rows], "other": list(rows)})
            pq.write_table(t, str(d / f"part-{f}.parquet"), data_page_size=4096,
                           row_group_size=5000)
        oracle.append(pq.read_table(str(d), columns=[col]).column(0).to_pylist())
    path = root / "mix.json"
    path.write_text(json.dumps({"sources": [
        {"path": "src0", "weight": WEIGHTS[0]},
        {"path": str(root / "src1"), "weight": WEIGHTS[1], "column": "content"},
        {"path": "src2", "weight": WEIGHTS[2]}]}))
    return str(path), oracle


def expected_counts(weights, records):
    """The largest remainder rule, from exact fractions."""
    total = sum(weights)
    shares = [Fraction(w * records, total) for w in weights]
    counts = [int(s) for s in shares]
    order = sorted(range(len(weights)), key=lambda i: (-(shares[i] - counts[i]), i))
    for i in order[:records - sum(counts)]:
        counts[i] += 1
    return counts


def _records(m, name):
    data = m.read(name)
    assert m.size(name) == len(data), f"{name}: st_size {m.size(name)} != {len(data)} read"
    return [json.loads(r) for r in split_records(data, "jsonl")]


def _check_oracle(recs, oracle):
    for r in recs:
        assert set(r) == {"text", "_row", "_source"}, f"keys {sorted(r)}"
        assert r["text"] == oracle[r["_source"]][r["_row"]], f"record {r} is not pyarrow's"


def _by_source(recs, i):
    return [r["_row"] for r in recs if r["_source"] == i]


def test_counts_windows_and_records(mix, mount):
    path, oracle = mix
    with mount(path, "rowid") as m:
        recs = _records(m, "epoch-0.jsonl")
    _check_oracle(recs, oracle)
    total = sum(SIZES)
    counts = Counter(r["_source"] for r in recs)
    assert [counts[i] for i in range(3)] == expected_counts(WEIGHTS, total) == [33000, 19800, 13200]
    # every 10,000-record window holds each source within 3 percentage points of its weight
    window, share = 10000, [w / sum(WEIGHTS) for w in WEIGHTS]
    src = [r["_source"] for r in recs]
    inw = Counter(src[:window])
    worst = 0.0
    for end in range(window, len(src) + 1):
        for i in range(3):
            worst = max(worst, abs(inw[i] / window - share[i]))
        if end < len(src):
            inw[src[end]] += 1
            inw[src[end - window]] -= 1
    assert worst <= 0.03, f"a 10,000-record window is {worst * 100:.2f} pp off its weight"


def test_records_option_and_rounding(mix, tmp_path, mount):
    """"records": 1001 of weights 1:1:1 -> 334, 334, 333 (the largest remainders, lowest first)."""
    path, oracle = mix
    spec = json.loads(open(path).read())
    for s in spec["sources"]:
        s["path"] = os.path.join(os.path.dirname(path), s["path"])
        s["weight"] = 1
    spec["records"] = 1001
    p = tmp_path / "equal.json"
    p.write_text(json.dumps(spec))
    with mount(str(p), "rowid") as m:
        recs = _records(m, "epoch-2.jsonl")
    _check_oracle(recs, oracle)
    counts = Counter(r["_source"] for r in recs)
    assert [counts[i] for i in range(3)] == expected_counts((1, 1, 1), 1001) == [334, 334, 333]


def test_small_source_repeats_in_fresh_orders(mix, mount):
    path, _ = mix
    n = SIZES[1]
    with mount(path, "rowid") as m:
        e0 = _by_source(_records(m, "epoch-0.jsonl"), 1)
        e1 = _by_source(_records(m, "epoch-1.jsonl"), 1)
    seq = e0 + e1  # the source's sequence of passes goes on from epoch to epoch
    passes = [seq[k:k + n] for k in range(0, len(seq) - n + 1, n)]
    assert len(passes) >= 6
    for k, p in enumerate(passes):
        assert sorted(p) == list(range(n)), f"pass {k} is not every record once"
    orders = {tuple(p) for p in passes}
    assert len(orders) == len(passes), "two passes in the same order"


def test_large_source_covered_by_successive_epochs(mix, mount):
    path, _ = mix
    with mount(path, "rowid") as m:
        e0 = _by_source(_records(m, "epoch-0.jsonl"), 0)
        e1 = _by_source(_records(m, "epoch-1.jsonl"), 0)
    assert len(e0) == len(e1) == 33000
    assert len(set(e0)) == 33000, "a record twice in one epoch of a large source"
    # epoch 0 and the start of epoch 1 are the source's first pass: every record once
    assert sorted(e0 + e1[:SIZES[0] - 33000]) == list(range(SIZES[0]))
    assert set(e1) != set(e0)


@pytest.mark.parametrize("n", [3, 8])
def test_parts_hold_the_epoch(mix, mount, n):
    path, oracle = mix
    with mount(path, "rowid") as m:
        epoch = _records(m, "epoch-0.jsonl")
        parts = [_records(m, f"epoch-0.part-{i}-of-{n}.jsonl") for i in range(n)]
    for p in parts:
        _check_oracle(p, oracle)
    key = lambda r: (r["_source"], r["_row"])
    assert Counter(key(r) for p in parts for r in p) == Counter(key(r) for r in epoch)


@pytest.mark.parametrize("even", ["pad", "drop"])
def test_even_parts_are_equal_source_by_source(mix, mount, even):
    path, oracle = mix
    n = 8
    with mount(path, f"rowid,even={even}") as m:
        parts = [_records(m, f"epoch-1.part-{i}-of-{n}.jsonl") for i in range(n)]
    for p in parts:
        _check_oracle(p, oracle)
    counts = expected_counts(WEIGHTS, sum(SIZES))
    for i in range(3):
        per = [sum(1 for r in p if r["_source"] == i) for p in parts]
        q = -(-counts[i] // n) if even == "pad" else counts[i] // n
        assert per == [q] * n, f"source {i}: {per}, expected {q} in every part"


@pytest.mark.parametrize("n,m_parts", [(4, 2), (2, 3), (8, 8)])
def test_resume_before_plus_after_is_the_epoch(mix, mount, n, m_parts):
    """epoch-K.resume-N-R.part-J-of-M: what the N parts gave in their first R records plus the
    M resumed parts is exactly the epoch's multiset, record by record pyarrow's."""
    path, oracle = mix
    key = lambda r: (r["_source"], r["_row"])
    with mount(path, "rowid") as m:
        epoch = Counter(key(r) for r in _records(m, "epoch-1.jsonl"))
        parts = [_records(m, f"epoch-1.part-{i}-of-{n}.jsonl") for i in range(n)]
        longest = max(len(p) for p in parts)
        for r in (0, 1, 999, 4321, longest - 1, longest + 5):
            after = [_records(m, f"epoch-1.resume-{n}-{r}.part-{j}-of-{m_parts}.jsonl")
                     for j in range(m_parts)]
            for p in after:
                _check_oracle(p, oracle)
            got = Counter(key(x) for p in parts for x in p[:r])
            got.update(key(x) for p in after for x in p)
            assert got == epoch, f"resume-{n}-{r} into {m_parts}: before + after is not the epoch"


@pytest.mark.parametrize("even", ["pad", "drop"])
def test_resume_with_even_gives_equal_parts_source_by_source(mix, mount, even):
    """even= applies to the resumed parts as to parts: every one holds the same count of every
    source; with pad nothing is lost, with drop nothing is repeated."""
    path, oracle = mix
    n, m_parts, r = 4, 3, 2500
    key = lambda x: (x["_source"], x["_row"])
    with mount(path, f"rowid,even={even}") as m:
        epoch = Counter(key(x) for x in _records(m, "epoch-0.jsonl"))
        before = [x for i in range(n) for x in _records(m, f"epoch-0.part-{i}-of-{n}.jsonl")[:r]]
        after = [_records(m, f"epoch-0.resume-{n}-{r}.part-{j}-of-{m_parts}.jsonl")
                 for j in range(m_parts)]
    for p in after:
        _check_oracle(p, oracle)
    for i in range(3):
        per = [sum(1 for x in p if x["_source"] == i) for p in after]
        assert len(set(per)) == 1, f"source {i}: resumed parts hold {per}"
    seen = Counter(key(x) for x in before)
    seen.update(key(x) for p in after for x in p)
    if even == "pad":
        assert set(seen) == set(epoch), "a record of the epoch is neither before nor after"
    else:
        assert all(seen[k] <= epoch[k] for k in seen), "a record is served twice"


def test_index_and_stats_describe_every_source(mix, mount):
    """.youmufs/index.json: the mixture's totals at the top (files, rows, an epoch's records)
    and every source under "sources"; stats.json: every source's counters added up at the top,
    each source's own under "sources"."""
    path, _ = mix
    counts = expected_counts(WEIGHTS, sum(SIZES))
    with mount(path, "rowid") as m:
        size = len(m.read("epoch-0.jsonl"))
        index = json.loads(m.read(".youmufs/index.json"))
        stats = json.loads(m.read(".youmufs/stats.json"))
    assert index["dataset"] == path and index["column"] == "text"
    assert index["records"] == sum(counts) and index["epoch_bytes"] is None
    assert index["files"] == 6 and len(index["file_list"]) == 6
    assert index["rows"] == sum(SIZES) and index["options"]["buffer"] == 10000
    src = index["sources"]
    assert [s["records"] for s in src] == list(SIZES)
    assert [s["rows"] for s in src] == list(SIZES)
    assert [s["column"] for s in src] == list(COLUMNS)
    assert [s["weight"] for s in src] == list(WEIGHTS)
    assert [s["records_per_epoch"] for s in src] == counts
    assert [s["files"] for s in src] == [2, 2, 2]
    assert sum(s["pages"] for s in src) == index["pages"]
    # bytes_served counts replies: the last ones are counted just after they are sent, and
    # the kernel may ask for a page again (once in CI, 4 KiB over the file's size)
    assert size // 2 < stats["bytes_served"] < 2 * size
    assert len(stats["sources"]) == 3
    for key in ("bytes_read", "page_bytes", "segments_built", "pages_decoded"):
        assert stats[key] == sum(s[key] for s in stats["sources"]), key
    assert all(s["page_bytes"] > 0 for s in stats["sources"]), "a source read nothing"
    assert stats["memory"]["limit"] > 0 and "io" in stats["sources"][0]


def test_first_read_builds_only_its_blocks(mix, mount):
    """A read at offset 0 learns where the next block starts and nothing further: with
    readahead=0 and no kernel readahead, it builds, beyond what opening the file built (the
    segments its shares' ends cut), only the segments of block 0's records and of block 1's
    first (4,097 positions: 2, 3 and 2 segments of these sources); a bisection over the whole
    file's 17 blocks built 5, 6 and 5."""
    path, _ = mix

    def built(m):
        return [s["segments_built"] for s in json.loads(m.read(".youmufs/stats.json"))["sources"]]

    with mount(path, "rowid,readahead=0") as m:
        with open(m.p("epoch-0.jsonl"), "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            opened = built(m)
            assert len(os.pread(f.fileno(), 4096, 0)) == 4096
            read = built(m)
    assert [b - a for a, b in zip(opened, read)] == [2, 3, 2], f"built at open {opened}, then {read}"


LARGE = 2000  # bytes of every value of the large-record sources


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """Two one-file sources of 3,000 values of LARGE bytes each (plain pages of 32), weighted by
    their records: 6,000 positions of LARGE + 1 bytes in format=text, blocks of 524 positions
    (262 records of each source), segments of 47 records (a small dataset's 64 segments)."""
    root = tmp_path_factory.mktemp("large")
    for i in range(2):
        rng = random.Random(i)
        values = [f"{i}:{r}:".ljust(LARGE, rng.choice("abcdefgh")) for r in range(3000)]
        pq.write_table(pa.table({"text": values}), str(root / f"src{i}.parquet"),
                       data_page_size=65536, use_dictionary=False, write_batch_size=16)
    path = root / "large.json"
    path.write_text(json.dumps({"sources": [{"path": f"src{i}.parquet", "weight": 1}
                                            for i in range(2)]}))
    return str(path)


def _first_read(large, mount, options, settled=None):
    """Every source's (segments_built, segment_misses) after a first read of 4 KiB (no kernel
    readahead), once settled(counts) holds (at most 20 s) when given."""
    with mount(large, "format=text," + options) as m:
        def counts():
            return [(s["segments_built"], s["segment_misses"])
                    for s in json.loads(m.read(".youmufs/stats.json"))["sources"]]
        assert counts() == [(0, 0), (0, 0)], "opening the whole epoch builds nothing"
        with open(m.p("epoch-0.txt"), "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            assert len(os.pread(f.fileno(), 4096, 0)) == 4096
            deadline = time.monotonic() + 20
            while settled and not settled(counts()) and time.monotonic() < deadline:
                time.sleep(0.05)
            return counts()


def test_blocks_of_large_records_hold_about_a_mebibyte(large, mount):
    """A block is laid out whole before its first byte is served, so its bytes are what a read
    must have built: blocks hold about 1 MiB (here 524 positions), not 4,096 positions (8 MB
    here, 24 MB of int32 lists in the benchmark). With readahead=0 the first read builds each
    source's segments of block 0 and of block 1's first record: 6, against 43."""
    built = [b for b, _ in _first_read(large, mount, "readahead=0")]
    assert all(b <= 8 for b in built), f"built {built}"


def test_next_segment_is_prepared_past_the_one_begun(large, mount):
    """After a read every source prepares ahead from where its next records are, and the
    segment it is in the middle of counts as read, as for a plain file's reader: with
    readahead=1 each source's next segment is built ahead (the begun one took the place)."""
    alone = _first_read(large, mount, "readahead=0")
    ahead = _first_read(large, mount, "readahead=1",
                        lambda c: all(b > a for (a, _), (b, _) in zip(alone, c)))
    assert all(b == a + 1 for (a, _), (b, _) in zip(alone, ahead)), f"{alone} then {ahead}"


def test_first_read_asks_for_every_first_segment(large, tmp_path, mount):
    """The file's first read asks for every source's first segment before it builds what it
    needs, so that the workers build them side by side (the read built every one itself, one
    after the other). A source of 2 records beside 3,000 takes its first turn at position 750,
    past block 0 (524 positions): the first read of 4 KiB does not need its segment, and at
    mem=16M its allowance (1.7 KB) holds none of it; still its first segment is built."""
    tiny = tmp_path / "tiny.parquet"
    pq.write_table(pa.table({"text": ["t:0:".ljust(LARGE, "x"), "t:1:".ljust(LARGE, "y")]}),
                   str(tiny))
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"sources": [
        {"path": os.path.join(os.path.dirname(large), "src0.parquet"), "weight": 3000},
        {"path": str(tiny), "weight": 2}]}))
    built = _first_read(str(path), mount, "mem=16M,readahead=1", lambda c: c[1][0] >= 1)
    assert built[1][0] == 1, f"(segments_built, segment_misses) of each source: {built}"


def test_sources_share_the_workers(large, mount):
    """A mixture's sources share one machine as they share one mem=: each starts its share of
    threads= prefetch workers (at least one), so the mixture builds about as many segments at
    once as one dataset (eight sources of tokens with 4 workers each, 32 builds holding decoded
    pages, filled mem= and built on demand: mixture / one 0.73, with 1 each 1.00). Two equal
    sources: threads=8 starts 2 x (4 - 2) threads more than threads=4, not 2 x (8 - 4)."""
    def threads(options):
        with mount(large, "format=text," + options) as m:
            return len(os.listdir(f"/proc/{m.proc.pid}/task"))
    assert threads("threads=8") - threads("threads=4") == 4


@pytest.mark.parametrize("options,each", [("io_depth=8", 4), ("io_depth=3", 2), ("", 4)])
def test_sources_share_the_io_depth(large, mount, options, each):
    """Each source's I/O engine takes its share of the depths (yfs_io_share, at least 1): two
    equal sources run io_depth=8 as 4 reads each, and the adaptive engine starts at 4 each, not
    8 (eight sources at the whole depth ran 150 threads against one dataset's 27, and b's
    mixture lost a tenth of its time to their switches). stats.json adds the sources' depths."""
    with mount(large, "format=text" + ("," + options if options else "")) as m:
        stats = json.loads(m.read(".youmufs/stats.json"))
    assert [s["io"]["depth"] for s in stats["sources"]] == [each, each], stats["sources"]
    assert stats["io"]["depth"] == 2 * each


def test_sources_share_the_virtual_chunks(tmp_path, mount):
    """Each source redirects within its share of the 64 virtual chunks (sh_redirect.h), as it
    is cut into its share of segments: two equal one-file sources of 63 chunks of 64 KiB (two
    pages each) get 32 each, so requests are served pages of chunks already read.
    With 64 each (more than their chunks) nothing was redirected: each chunk's pages waited for
    requests spread over the whole epoch (eight one-file sources of 64 KiB pages read 30% more
    than the directory of the same files, pages dropped from the store and read again alone)."""
    sources = []
    for i in range(2):
        rng = random.Random(i)
        values = [f"{i}:{r}:" + rng.randbytes(200).hex() for r in range(8000)]
        path = tmp_path / f"src{i}.parquet"
        pq.write_table(pa.table({"text": values}), str(path), data_page_size=16384,
                       use_dictionary=False, compression="none", write_batch_size=32)
        sources.append({"path": str(path), "weight": 1})
    mixture = tmp_path / "two.json"
    mixture.write_text(json.dumps({"sources": sources}))
    with mount(str(mixture), "format=text,chunk=64K") as m:
        got = sorted(m.read("epoch-0.txt").splitlines())
        stats = json.loads(m.read(".youmufs/stats.json"))
    want = sorted(v.encode() for s in sources
                  for v in pq.read_table(s["path"]).column("text").to_pylist())
    assert got == want
    for s in stats["sources"]:
        assert s["chunk_loads"] > 40 and s["redirections"] > s["pages_decoded"] // 8, s


def test_reads_at_once_of_one_file(mix, mount):
    """Reads of one mixture file run at once (several threads, one descriptor, random ranges
    and 1 MiB pieces in shuffled order): every byte is the sequential read's."""
    from concurrent.futures import ThreadPoolExecutor
    path, _ = mix
    name = "epoch-2.jsonl"
    with mount(path, "rowid") as seq:
        want = seq.read(name)
    size = len(want)
    rng = random.Random(7)
    ranges = [(rng.randrange(0, size), rng.choice([100, 4096, 70000, 1 << 20])) for _ in range(200)]
    pieces = [(off, 1 << 20) for off in range(0, size, 1 << 20)]
    rng.shuffle(pieces)
    with mount(path, "rowid,mem=8M") as m:
        with open(m.p(name), "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)

            def check(r):
                off, ln = r
                assert os.pread(f.fileno(), ln, off) == want[off:off + ln], f"@{off}+{ln}"

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(check, ranges + pieces))


def test_seeks_and_sizes(mix, mount):
    path, _ = mix
    rng = random.Random(5)
    with mount(path, "rowid") as seq, mount(path, "rowid") as fresh:
        for name in ("epoch-3.jsonl", "epoch-3.part-1-of-3.jsonl"):
            data = seq.read(name)
            size = fresh.size(name)
            assert size == len(data)
            with open(fresh.p(name), "rb", buffering=0) as f:
                for _ in range(60):
                    off = rng.randrange(0, size)
                    ln = rng.choice([1, 100, 4096, 70000, 300000])
                    assert os.pread(f.fileno(), ln, off) == data[off:off + ln], f"{name} @{off}"
                assert os.pread(f.fileno(), 10, size) == b""


def test_determinism(mix, mount):
    path, _ = mix
    names = ("epoch-4.jsonl", "epoch-4.part-2-of-5.jsonl")
    with mount(path, "rowid") as a:
        first = [a.read(n) for n in names]
    with mount(path, "rowid,threads=1,mem=2M,readahead=0") as b:
        # read backwards in small pieces: another read history
        for n, want in zip(names, first):
            size = b.size(n)
            got = bytearray(size)
            with open(b.p(n), "rb", buffering=0) as f:
                step = 65536
                for off in reversed(range(0, size, step)):
                    got[off:off + step] = os.pread(f.fileno(), step, off)
            assert bytes(got) == want, f"{n} differs with threads=1, mem=2M, backwards reads"
    with mount(path, "rowid,seed=1") as c:
        assert c.read(names[0]) != first[0], "seed=1 gives the same epoch"


def test_plain_text_format(mix, mount):
    """Formats other than jsonl carry only the values; the key rule does not apply."""
    path, oracle = mix
    with mount(path, "format=len32") as m:
        recs = [r[4:] for r in split_records(m.read("epoch-0.len32"), "len32")]
    counts = Counter(int(r.split(b" ")[0][1:]) for r in recs)  # values start "s<source> "
    assert [counts[i] for i in range(3)] == expected_counts(WEIGHTS, sum(SIZES))
    values = {v for o in oracle for v in o}
    assert all(r.decode() in values for r in recs)


def test_several_columns(mix, tmp_path, mount):
    """column=other:text (issue 13) over a mixture of sources 0 and 2, the second naming the
    same columns itself: every record is {"other", "text"} of its source's row, as pyarrow
    reads it, in the proportions of the weights."""
    path, oracle = mix
    root = os.path.dirname(path)
    p = tmp_path / "cols.json"
    p.write_text(json.dumps({"sources": [
        {"path": os.path.join(root, "src0"), "weight": 3},
        {"path": os.path.join(root, "src2"), "weight": 1, "column": "other:text"}]}))
    with mount(str(p), "rowid,column=other:text") as m:
        recs = _records(m, "epoch-0.jsonl")
        parts = [_records(m, f"epoch-0.part-{i}-of-3.jsonl") for i in range(3)]
    total = SIZES[0] + SIZES[2]
    assert len(recs) == total
    for r in recs:
        assert list(r) == ["other", "text", "_row", "_source"], f"keys {list(r)}"
        src = (0, 2)[r["_source"]]
        assert r["other"] == r["_row"] and r["text"] == oracle[src][r["_row"]], \
            f"record {r} is not pyarrow's row of source {src}"
    counts = Counter(r["_source"] for r in recs)
    assert [counts[0], counts[1]] == expected_counts((3, 1), total)
    key = lambda r: (r["_source"], r["_row"])
    assert Counter(key(r) for q in parts for r in q) == Counter(key(r) for r in recs)


@pytest.mark.parametrize("columns", ["text", "other:content"])
def test_several_columns_must_be_the_same_in_every_source(mix, tmp_path, mount_fails, columns):
    """Several columns keep their own field names, so a source naming other columns than the
    rest is refused at mount, naming the source and the columns."""
    path, _ = mix
    root = os.path.dirname(path)
    p = _bad(tmp_path, json.dumps({"sources": [
        {"path": os.path.join(root, "src0"), "weight": 1},
        {"path": os.path.join(root, "src1"), "weight": 1, "column": columns}]}))
    r = mount_fails(p, "column=other:text")
    err = r.stderr.decode("utf-8", "replace")
    assert p in err and f"source 1 serves column {columns} and source 0 other:text" in err, err
    assert "every source must serve the same ones" in err, err


def _bad(tmp_path, text, name="bad.json"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("text,what", [
    ('{"sources": [', "not valid JSON"),
    ('{"sources": [{"path": "/nonexistent/yfs-src", "weight": 1}]}', "does not exist"),
    ('{"sources": [{"path": "/", "weight": 0}]}', "must be a number > 0"),
    ('{"sources": []}', "non-empty array"),
])
def test_bad_mixture_files_stop_the_mount(tmp_path, mount_fails, text, what):
    path = _bad(tmp_path, text)
    p = mount_fails(path)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0
    assert path in err and what in err, f"stderr does not name {path} and say {what!r}: {err}"


def test_a_bad_source_is_named(mix, tmp_path, mount_fails):
    path, _ = mix
    root = os.path.dirname(path)
    bad = tmp_path / "junk.parquet"
    bad.write_bytes(b"not parquet at all")
    p = _bad(tmp_path, json.dumps({"sources": [{"path": os.path.join(root, "src0"), "weight": 1},
                                               {"path": str(bad), "weight": 1}]}))
    r = mount_fails(p)
    err = r.stderr.decode("utf-8", "replace")
    assert p in err and "source 1" in err and "junk.parquet" in err, err


def test_shuffle_row_is_refused_with_a_reason(mix, mount_fails):
    path, _ = mix
    r = mount_fails(path, "shuffle=row")
    err = r.stderr.decode("utf-8", "replace")
    assert path in err and "shuffle=row is not served for mixtures" in err, err
