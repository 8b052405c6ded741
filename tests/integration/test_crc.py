"""Page CRCs: verified where a writer stored them (crc=skip turns that off)."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import PARQUET_TESTING as DATA


def _file(name):
    path = os.path.join(DATA, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} not present (shared/parquet-testing is beside the clone in CI)")
    return path


def _values(path, column):
    return [v for v in pq.read_table(path).column(column).to_pylist() if v is not None]


@pytest.mark.parametrize("name", ["datapage_v1-snappy-compressed-checksum.parquet",
                                  "datapage_v1-uncompressed-checksum.parquet",
                                  "plain-dict-uncompressed-checksum.parquet"])
def test_good_checksums_read(name, cat):
    path = _file(name)
    column = pq.ParquetFile(path).schema_arrow.names[0]
    out = cat(path, "epoch-0.jsonl", f"column={column},shuffle=none,crc=check").stdout
    assert out.count(b"\n") == len(_values(path, column))


def test_corrupt_checksum_refused_and_skippable(cat):
    path = _file("datapage_v1-corrupt-checksum.parquet")
    p = cat(path, "epoch-0.jsonl", "column=a,shuffle=none", check=False)
    err = p.stderr.decode()
    assert p.returncode != 0 and "CRC mismatch" in err and "datapage_v1-corrupt" in err, err
    out = cat(path, "epoch-0.jsonl", "column=a,shuffle=none,crc=skip").stdout
    assert out.count(b"\n") == len(_values(path, "a"))


def _corrupt_beside(path):
    """A file of text and n whose n page (the column beside the paged text) has a byte of its
    body changed under its stored CRC."""
    n = list(range(1000))
    pq.write_table(pa.table({"text": [f"doc {i} " * 20 for i in n], "n": n}), path,
                   compression="none", use_dictionary=False, write_page_checksum=True)
    md = pq.ParquetFile(path).metadata.row_group(0).column(1)
    assert md.path_in_schema == "n"
    with open(path, "r+b") as f:        # a byte in the middle of n's page body (PLAIN int64)
        f.seek(md.data_page_offset + md.total_compressed_size - 100)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x40]))


def test_corrupt_checksum_beside_the_primary(cat, tmp_path):
    """Several columns: the column beside the paged one is checked too. Its one page's body
    is changed under its stored CRC: column=text:n is refused naming the page, the column
    alone (the paged text) reads, and crc=skip lets the mount through."""
    path = str(tmp_path / "beside.parquet")
    _corrupt_beside(path)
    p = cat(path, "epoch-0.jsonl", "column=text:n,shuffle=none", check=False)
    err = p.stderr.decode()
    assert p.returncode != 0 and "CRC mismatch" in err and 'field "n"' in err, err
    assert "beside.parquet" in err and "page at file offset" in err, err
    assert cat(path, "epoch-0.jsonl", "column=text,shuffle=none").stdout.count(b"\n") == 1000
    out = cat(path, "epoch-0.jsonl", "column=text:n,shuffle=none,crc=skip").stdout
    assert out.count(b"\n") == 1000


def test_values_file_of_a_crc_skip_mount_serves_no_crc_check_mount(mount, mount_fails,
                                                                   tmp_path):
    """The values file (the columns beside the primary, kept beside the persistent index) that
    a crc=skip mount built holds values whose CRCs nobody checked: a later crc=check mount of
    the same files builds it anew, so it refuses the corrupt page beside the primary as it
    does without a cache. A file built by crc=check serves a crc=skip mount."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    _corrupt_beside(str(data / "beside.parquet"))
    base = f"column=text:n,shuffle=none,cache={cache}"
    with mount(data, base + ",crc=skip") as m:
        assert m.read("epoch-0.jsonl").count(b"\n") == 1000
    p = mount_fails(data, base)
    err = p.stderr.decode()
    assert p.returncode != 0 and "CRC mismatch" in err and 'field "n"' in err, err
    assert "beside.parquet" in err and "page at file offset" in err, err
    # the other way: the good copy's values file, built checked, serves crc=skip as is
    good, cache2 = tmp_path / "good", tmp_path / "cache2"
    good.mkdir()
    pq.write_table(pa.table({"text": ["a", "b"], "n": [1, 2]}), str(good / "g.parquet"),
                   write_page_checksum=True)
    reused = []
    for crc in ("check", "skip", "check"):
        with mount(good, f"column=text:n,cache={cache2},crc={crc}") as m:
            with open(m.p(".youmufs/index.json")) as f:
                reused.append(json.load(f)["other_columns"]["reused"])
    assert reused == [False, True, True], reused
