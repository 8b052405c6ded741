"""A first mount over slow storage (YOUMUFS_READ_DELAY_US on every read of a source, at mount
too): the footers, page indexes, the page pass and, with several columns, the others' column
chunks (read into the values file) keep many reads in flight, so F files with D
added per read index in a few round trips, far less than F reads one after another; and the
records are still exactly pyarrow's. No timed assertion on speed: the bound is a quarter of
what even one read per file, one at a time, would take."""
import json
import os
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

FILES = 300
ROWS = 20
DELAY_S = 0.02


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("slow-storage")
    for i in range(FILES):
        ids = list(range(i * ROWS, (i + 1) * ROWS))
        text = [f"row {k} of file {i}" + " \u00e9\"x" * (k % 4) for k in ids]
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "text": text}),
                       d / f"part-{i:04d}.parquet", write_page_index=True)
    return d


def _oracle(d, column):
    out = []
    for f in sorted(os.listdir(d)):
        out += pq.read_table(d / f).column(column).to_pylist()
    return out


@pytest.mark.parametrize("opts,column", [("column=text", "text"),
                                         ("column=id,format=raw", "id"),
                                         ("column=id:text", "id:text")])
def test_reads_overlap_at_mount_and_records_are_exact(mount, dataset, monkeypatch, opts, column):
    monkeypatch.setenv("YOUMUFS_READ_DELAY_US", str(int(DELAY_S * 1e6)))
    with mount(dataset, f"{opts},cache=none") as m:
        with open(m.p(".youmufs/index.json")) as f:
            ix = json.load(f)
        name = "epoch-0.bin" if column == "id" else "epoch-0.jsonl"
        data = m.read(name)
    assert ix["files"] == FILES
    # Every file costs at least one read of its footer and one at the page pass (its page
    # or its offset index), and with id:text one of its id chunk: one after another that is
    # 2 or 3 * FILES * DELAY_S.
    indexing = ix["seconds_footers"] + ix["seconds_pages"]
    assert indexing < FILES * DELAY_S / 4, ix
    if column == "id:text":
        got = [tuple(json.loads(line).values()) for line in data.decode().splitlines()]
        assert sorted(got) == sorted(zip(_oracle(dataset, "id"), _oracle(dataset, "text")))
        return
    if column == "text":
        got = [json.loads(line)["text"] for line in data.decode().splitlines()]
    else:
        got = list(struct.unpack(f"<{len(data) // 8}q", data))
    assert sorted(got) == sorted(_oracle(dataset, column))


# A page streamed beside the primary: its body past the reader's first window (4 MiB,
# IX_CHUNK_ROWS_READ_BYTES) is read one read after another, in reads of STREAM_STEP.
STREAM_STEP = 1 << 20
STREAM_DELAY_S = 0.15


@pytest.fixture(scope="module")
def one_page_list(tmp_path_factory):
    """DuckDB's shape (a list column's row group in one page, 2 M INT64 elements, 16 MiB of
    ZSTD that does not compress: random ids), beside a text column. The first file's text is
    the heavier column there, so the text is the primary and the tokens go into the values
    file; the second file's tokens chunk is the one page, streamed (decoding it whole would
    take 100 MB)."""
    import random
    d = tmp_path_factory.mktemp("one-page-list")
    rng = random.Random(5)
    pq.write_table(pa.table({"text": ["x" * 200000, "y"],
                             "tokens": pa.array([[1, 2], [3]], pa.list_(pa.int64()))}),
                   d / "a.parquet")
    tokens = [[rng.getrandbits(62) for _ in range(1 << 15)] for _ in range(64)]
    pq.write_table(pa.table({"text": [f"row {i}" for i in range(64)],
                             "tokens": pa.array(tokens, pa.list_(pa.int64()))}),
                   d / "b.parquet", compression="zstd", data_page_size=1 << 30,
                   use_dictionary=False)
    return d


def _index_and_rows(mount, d, opts):
    with mount(d, f"column=text:tokens,cache=none,{opts}") as m:
        with open(m.p(".youmufs/index.json")) as f:
            ix = json.load(f)
        data = m.read("epoch-0.jsonl")
    return ix, sorted((r["text"], r["tokens"]) for r in map(json.loads, data.splitlines()))


def test_a_streamed_page_beside_the_primary_is_read_a_mib_a_round_trip(mount, one_page_list,
                                                                       monkeypatch):
    """The tokens chunk (16 MiB, one page) is read by its reader alone, one read after
    another: the mount's wait on storage, (seconds with a delay - seconds without) / delay,
    counts those reads. At most one read per MiB of the chunk, and a few rounds for the
    listing, the footers and the rest (the page's body used to be read 256 KiB at a time:
    four times as many). At mem=1M, where a 1 MiB read would take the stream over its cap, the
    reads shrink and the page still streams. Every record is pyarrow's row."""
    d = one_page_list
    want = []
    for f in sorted(os.listdir(d)):
        t = pq.read_table(d / f)
        want += zip(t.column("text").to_pylist(), t.column("tokens").to_pylist())
    want.sort()
    chunk = pq.ParquetFile(d / "b.parquet").metadata.row_group(0).column(1)
    assert chunk.path_in_schema.startswith("tokens") and chunk.total_compressed_size > 8 << 20
    ix0, rows = _index_and_rows(mount, d, "mem=256M")
    assert ix0["column"] == "text" and ix0["other_columns"]["source_bytes_read"] >= \
        chunk.total_compressed_size, ix0
    assert rows == want
    monkeypatch.setenv("YOUMUFS_READ_DELAY_US", str(int(STREAM_DELAY_S * 1e6)))
    ix1, rows = _index_and_rows(mount, d, "mem=256M")
    round_trips = (ix1["seconds_footers"] - ix0["seconds_footers"]) / STREAM_DELAY_S
    bound = -(-chunk.total_compressed_size // STREAM_STEP) + 8
    assert round_trips <= bound, (round_trips, bound, ix0, ix1)
    monkeypatch.delenv("YOUMUFS_READ_DELAY_US")
    _, small = _index_and_rows(mount, d, "mem=1M")
    assert small == rows
