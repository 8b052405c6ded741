"""Page CRCs: verified where a writer stored them (crc=skip turns that off)."""
import os

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
