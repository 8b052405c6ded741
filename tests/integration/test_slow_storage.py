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
