"""Invariant 4, bounded memory, with the bound of issue 10's acceptance 1: the daemon's peak
resident memory (VmHWM) stays within 1.1 x (index + mem) + 16 MiB whatever readers do, on
datasets whose epoch is several times that bound (so holding decoded data without limit is
caught).

- test_shape_within_bound: each data shape of bench/make_shapes.py (the generator of the
  benchmark, at its --small scale: pyarrow text with 1 MiB and 64 KiB pages, DuckDB text with
  its huge pages, list<int64> tokens as raw u16 from pyarrow and from DuckDB, list<int32> as
  jsonl, chat `messages` list<struct<role, content>>), mem=64M, the 8 parts of epoch 0 read at once in 1 MiB reads. The records served are
  checked against pyarrow's metadata of the same files (record count; raw: exact byte count
  and one separator per row), so a read that serves too little cannot pass.
  Shapes also with an int64 id beside their column, as column=id:text and id:messages
  (issue 13).
- test_chat_messages_within_bound: chat `messages` (list<struct<role, content>>) as
  column=messages (the content paged, the roles held), 8 parts at once under mem=64M.
- test_two_long_columns_within_bound: column=prompt:response where the column beside the
  paged one has a row group's chunk larger than the bound: it is read into the values file
  page by page at mount, not decoded whole.
- test_mixed_readers_within_bound: one sequential epoch, then 4 part readers and 4 random
  readers at once, on the shared text corpus.

Skipped under AddressSanitizer (resident memory is meaningless there)."""

import json
import os
import random
import sys
import threading

import numpy as np
import pyarrow.parquet as pq
import pytest

import datasets as yds

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
import make_shapes  # noqa: E402  (bench/make_shapes.py: one generator for bench and test)

MIB = 1 << 20
MEM = 64 << 20
PARTS = 8
REQUIRE = os.environ.get("YOUMUFS_REQUIRE") == "1"


def bound(index_bytes, mem):
    """Acceptance 1 of issue 10."""
    return 1.1 * (index_bytes + mem) + 16 * MIB


def _skip_if_asan():
    import conftest
    conftest.require_binary()
    with open(conftest.BIN, "rb") as f:
        if b"__asan_init" in f.read():
            pytest.skip("resident memory is not meaningful under AddressSanitizer")


def _hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _index_bytes(m):
    idx = json.loads(m.read(".youmufs/index.json"))
    assert "index_memory_bytes" in idx, "index.json has no index_memory_bytes"
    return idx["index_memory_bytes"]


def _count_lines_at_once(m, names, timeout):
    """Read the mount's files `names` at once, one thread each, to their ends; the lines of
    each. Fails when a reader hangs past `timeout` seconds or a read fails."""
    lines, errors = [0] * len(names), []

    def reader(i):
        try:
            with open(m.p(names[i]), "rb", buffering=0) as f:
                while True:
                    buf = f.read(1 << 20)
                    if not buf:
                        break
                    lines[i] += buf.count(b"\n")
        except OSError as e:      # reported below
            errors.append(f"{names[i]}: {e!r}")
    threads = [threading.Thread(target=reader, args=(i,)) for i in range(len(names))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    assert not any(t.is_alive() for t in threads), "a reader hung"
    assert not errors, errors
    return lines


@pytest.fixture(scope="module")
def shapes_root(ds):
    return os.path.join(ds.root, "shapes")


def _shape_dir(root, name):
    if make_shapes.SHAPES[name.removesuffix("+id")].writer == "duckdb":
        problem = make_shapes.duckdb_problem()
        if problem:
            if REQUIRE:
                pytest.fail(f"DuckDB writer: {problem} (YOUMUFS_REQUIRE=1)")
            pytest.skip(f"DuckDB writer: {problem}")
    return make_shapes.generate(root, name, make_shapes.SMALL)


def _oracle(d, column):
    """(rows, leaf values) of column in the shape's files, from pyarrow's metadata."""
    rows = values = 0
    for f in sorted(os.listdir(d)):
        if f.endswith(".parquet"):
            md = pq.ParquetFile(os.path.join(d, f)).metadata
            rows += md.num_rows
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                values += sum(rg.column(j).num_values for j in range(rg.num_columns)
                              if rg.column(j).path_in_schema.split(".")[0] == column)
    return rows, values


# Several columns (issue 13): shapes with an int64 id beside their column C, served as
# column=id:C ({"id":..,"C":..}: the ids are read from the values file beside the paged C).
SEVERAL = ["a-pyarrow-text-1m+id", "c-duckdb-text+id", "f-pyarrow-chat+id"]


@pytest.mark.parametrize("name", list(make_shapes.SHAPES) + SEVERAL)
def test_shape_within_bound(name, shapes_root, mount):
    _skip_if_asan()
    shape = make_shapes.SHAPES[name.removesuffix("+id")]
    d = _shape_dir(shapes_root, name)
    rows, values = _oracle(d, shape.column)
    raw = "format=raw" in shape.options
    options = shape.mount_options()
    if name in SEVERAL:
        options = options.replace(f"column={shape.column}", f"column=id:{shape.column}")
    with mount(d, f"{options},mem={MEM}") as m:
        b = bound(_index_bytes(m), MEM)
        size = m.size(f"epoch-0.{shape.ext}")
        assert size > 2 * b, f"{name}: epoch of {size} B is too small to test a {b:.0f} B bound"
        if raw:     # u16 ids and one u16 separator per row, nothing else
            assert size == 2 * (values + rows), (size, values, rows)
        counts, got, errors = [0] * PARTS, [0] * PARTS, []

        def reader(i):
            try:
                with open(m.p(f"epoch-0.part-{i}-of-{PARTS}.{shape.ext}"), "rb",
                          buffering=0) as f:
                    while True:
                        buf = f.read(1 << 20)
                        if not buf:
                            break
                        assert len(buf) % 2 == 0 or not raw
                        got[i] += len(buf)
                        counts[i] += (int(np.count_nonzero(
                            np.frombuffer(buf, "<u2") == make_shapes.EOS))
                            if raw else buf.count(b"\n"))
            except (OSError, AssertionError) as e:      # reported below
                errors.append(f"part {i}: {e!r}")
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(PARTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=200)
        assert not any(t.is_alive() for t in threads), "a reader hung"
        peak = _hwm(m.proc.pid)
    assert not errors, errors
    assert sum(got) == size, f"the parts hold {sum(got)} B, the epoch {size} B"
    assert sum(counts) == rows, f"{sum(counts)} records served, pyarrow counts {rows} rows"
    assert peak <= b, (f"{name}: peak RSS {peak / MIB:.0f} MiB with {PARTS} parts read at once "
                       f"> 1.1 x (index + mem {MEM / MIB:.0f} MiB) + 16 MiB = {b / MIB:.0f} MiB "
                       f"({peak / b:.2f} x the bound)")


@pytest.fixture(scope="module")
def big_dataset(ds):
    return yds.text_corpus(ds.root, "memory-160M", 0)


def test_mixed_readers_within_bound(big_dataset, mount):
    _skip_if_asan()
    with mount(big_dataset, f"mem={MEM},epochs=2,buffer=2000") as m:
        b = bound(_index_bytes(m), MEM)
        size = m.size("epoch-0.jsonl")
        assert size > 1.5 * b, "dataset too small to test the memory bound"

        # 1. one sequential reader of a whole epoch
        with open(m.p("epoch-0.jsonl"), "rb", buffering=0) as f:
            n = 0
            while True:
                buf = f.read(1 << 20)
                if not buf:
                    break
                n += len(buf)
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

    assert after_seq <= b, (f"peak RSS {after_seq / MIB:.0f} MiB after one sequential epoch "
                            f"> 1.1 x (index + mem {MEM / MIB:.0f} MiB) + 16 MiB = "
                            f"{b / MIB:.0f} MiB")
    assert peak <= b, (f"peak RSS {peak / MIB:.0f} MiB with 8 concurrent readers > 1.1 x "
                       f"(index + mem {MEM / MIB:.0f} MiB) + 16 MiB = {b / MIB:.0f} MiB")


def test_even_and_resumed_parts_within_bound(big_dataset, mount):
    """Parts that cut segments (even=pad, and resumed parts): the segments built to size them
    at open are charged like any other; 8 such readers at once stay within the bound."""
    _skip_if_asan()
    with mount(big_dataset, f"mem={MEM},buffer=2000,even=pad") as m:
        b = bound(_index_bytes(m), MEM)
        names = [f"epoch-0.part-{i}-of-4.jsonl" for i in range(4)]
        names += [f"epoch-0.resume-4-3001.part-{j}-of-4.jsonl" for j in range(4)]
        sizes = [m.size(n) for n in names]
        assert sum(sizes[:4]) > 1.5 * b, "dataset too small to test the memory bound"
        lines = _count_lines_at_once(m, names, timeout=180)
        peak = _hwm(m.proc.pid)
    assert len(set(lines[:4])) == 1 and len(set(lines[4:])) == 1, f"unequal parts: {lines}"
    assert peak <= b, (f"peak RSS {peak / MIB:.0f} MiB with 8 even/resumed readers > 1.1 x "
                       f"(index + mem {MEM / MIB:.0f} MiB) + 16 MiB = {b / MIB:.0f} MiB")


@pytest.fixture(scope="module")
def chat_dataset(ds):
    """8 files x 12,000 conversations (list<struct<role, content>>, 2-4 turns of 50-1,500
    bytes): ~150 MB of jsonl, several times the bound at mem=64M."""
    import pyarrow as pa
    d = os.path.join(ds.root, "memory-chat")
    if not os.path.isdir(d):
        rng = random.Random(13)
        words = "the a cat sat on mat why how ok yes no please thanks".split()
        base = " ".join(rng.choice(words) for _ in range(200000))
        os.makedirs(d + ".tmp", exist_ok=True)
        for f in range(8):
            convs = []
            for _ in range(12000):
                turns = []
                for t in range(rng.choice([2, 3, 4])):
                    o = rng.randrange(len(base) - 1600)
                    turns.append({"role": ["user", "assistant"][t % 2],
                                  "content": base[o:o + rng.randint(50, 1500)]})
                convs.append(turns)
            pq.write_table(pa.table({"messages": pa.array(convs)}), f"{d}.tmp/c{f}.parquet")
        os.rename(d + ".tmp", d)
    return d


def test_chat_messages_within_bound(chat_dataset, mount):
    """Issue 13: column=messages pages the content leaf and holds the roles; 8 parts read at
    once under mem=64M stay within 1.1 x (index + mem) + 16 MiB, every conversation served."""
    _skip_if_asan()
    rows, _values = _oracle(chat_dataset, "messages")
    with mount(chat_dataset, f"column=messages,mem={MEM}") as m:
        b = bound(_index_bytes(m), MEM)
        size = m.size("epoch-0.jsonl")
        assert size > 2 * b, f"epoch of {size} B is too small to test a {b:.0f} B bound"
        lines = _count_lines_at_once(
            m, [f"epoch-0.part-{i}-of-{PARTS}.jsonl" for i in range(PARTS)], timeout=200)
        peak = _hwm(m.proc.pid)
    assert sum(lines) == rows, f"{sum(lines)} conversations served, pyarrow counts {rows}"
    print(f"column=messages: epoch {size / MIB:.0f} MiB, peak {peak / MIB:.0f} MiB, "
          f"bound {b / MIB:.0f} MiB")
    assert peak <= b, (f"column=messages: peak RSS {peak / MIB:.0f} MiB with {PARTS} parts at "
                       f"once > 1.1 x (index + mem {MEM / MIB:.0f} MiB) + 16 MiB = "
                       f"{b / MIB:.0f} MiB")


@pytest.fixture(scope="module")
def two_long_columns(ds):
    """One file, one row group of 30,000 rows: `prompt` (~110 MB of text) and `response`
    (~130 MB), zstd: each column's chunk decodes to more than the bound at mem=64M, as a
    Spark or DuckDB file of long prompt/response pairs does at the default mem=."""
    import pyarrow as pa
    d = os.path.join(ds.root, "memory-two-long")
    if not os.path.isdir(d):
        rng = random.Random(17)
        words = [f"w{i}" for i in range(3000)]
        base = " ".join(rng.choice(words) for _ in range(400000))
        rows = 30000
        starts = [rng.randrange(len(base) - 9000) for _ in range(2 * rows)]
        prompt = [base[o:o + 3600 + (o % 200)] for o in starts[:rows]]
        response = [base[o:o + 4300 + (o % 200)] for o in starts[rows:]]
        os.makedirs(d + ".tmp", exist_ok=True)
        pq.write_table(pa.table({"prompt": prompt, "response": response}),
                       f"{d}.tmp/pairs.parquet", row_group_size=rows, compression="zstd")
        os.rename(d + ".tmp", d)
    return d


def test_two_long_columns_within_bound(two_long_columns, mount):
    """Issue 13 on invariant 4: the column beside the paged one (here `prompt`, beside the
    longer `response`) is written into the values file page by page at mount; decoding its
    row group's chunk whole took ~210 MiB against a bound of ~87 MiB at mem=64M."""
    _skip_if_asan()
    md = pq.ParquetFile(os.path.join(two_long_columns, "pairs.parquet")).metadata
    rows = md.num_rows
    other_chunk = min(md.row_group(0).column(j).total_uncompressed_size for j in range(2))
    with mount(two_long_columns, f"column=prompt:response,mem={MEM}") as m:
        b = bound(_index_bytes(m), MEM)
        assert other_chunk > b, (f"the chunk beside the primary decodes to {other_chunk} B: "
                                 f"too small to test a {b:.0f} B bound")
        lines = _count_lines_at_once(
            m, [f"epoch-0.part-{i}-of-{PARTS}.jsonl" for i in range(PARTS)], timeout=200)
        peak = _hwm(m.proc.pid)
    assert sum(lines) == rows, f"{sum(lines)} records served, pyarrow counts {rows} rows"
    assert peak <= b, (f"column=prompt:response: peak RSS {peak / MIB:.0f} MiB > 1.1 x "
                       f"(index + mem {MEM / MIB:.0f} MiB) + 16 MiB = {b / MIB:.0f} MiB")


def test_mixture_parts_within_bound(big_dataset, ds, mount, tmp_path):
    """A mixture of three sources (one mount each, one accountant): 8 parts read at once stay
    within 1.1 x (every source's index + mem) + 16 MiB. mem=128M: a mixture reader holds a
    segment of every source at once, and at mem=64M the 24 segments of 8 readers of 3 sources
    (3.6 MB each here) do not fit: the readers evict each other's and build them again
    (correct, but minutes instead of seconds)."""
    _skip_if_asan()
    mem = 128 << 20
    other = yds.text_corpus(ds.root, "memory-160M-b", 1)
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"sources": [{"path": big_dataset, "weight": 5},
                                           {"path": other, "weight": 3},
                                           {"path": big_dataset, "weight": 2}],
                               "records": 320000}))
    with mount(str(mix), f"mem={mem},buffer=2000,even=pad") as m:
        b = bound(_index_bytes(m), mem)
        names = [f"epoch-0.part-{i}-of-{PARTS}.jsonl" for i in range(PARTS)]
        sizes = [m.size(n) for n in names]
        assert sum(sizes) > 1.5 * b, "mixture too small to test the memory bound"
        lines = _count_lines_at_once(m, names, timeout=300)
        peak = _hwm(m.proc.pid)
    assert lines == [320000 // PARTS] * PARTS, f"unequal parts: {lines}"
    assert peak <= b, (f"peak RSS {peak / MIB:.0f} MiB with {PARTS} mixture parts > 1.1 x "
                       f"(index + mem {mem / MIB:.0f} MiB) + 16 MiB = {b / MIB:.0f} MiB")
