"""Invariants 6 and 7: bad input gives a clear error before mounting (which file, what is wrong),
never a crash or a hang; the filesystem is read-only (EROFS) and never modifies its sources;
.youmufs/index.json and stats.json are valid JSON."""

import errno
import hashlib
import json
import os
import re
import shutil
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datasets as yds
from datasets import BASIC, check_rowid_jsonl, expected_records


def _good_copy(ds, tmp_path, nfiles=3):
    d = tmp_path / "ds"
    d.mkdir()
    src = ds.path(BASIC)
    for f in sorted(os.listdir(src))[:nfiles]:
        shutil.copy(os.path.join(src, f), d / f)
    return d


def _footer(path):
    data = open(path, "rb").read()
    (meta_len,) = struct.unpack("<I", data[-8:-4])
    return data, len(data) - 8 - meta_len, meta_len


def _pyarrow_rejects(path):
    try:
        pq.read_table(path)
    except Exception:   # noqa: BLE001 - any pyarrow error means the file is unreadable
        return True
    return False


# Each case builds a bad dataset and returns (dataset path, options, text that must appear in the
# message (a file name, column, ...), regex for the problem).
def case_not_parquet(ds, tmp_path):
    d = _good_copy(ds, tmp_path)
    (d / "part-001b.parquet").write_text("this is not a parquet file, just some text\n" * 20)
    return d, None, "part-001b.parquet", r"magic|PAR1|not a parquet|not parquet|footer|invalid|corrupt"


def case_tiny_file(ds, tmp_path):
    d = _good_copy(ds, tmp_path)
    (d / "part-000a.parquet").write_bytes(b"PAR1")
    return d, None, "part-000a.parquet", r"magic|PAR1|footer|too (small|short)|truncat|invalid|size|corrupt"


def case_truncated(ds, tmp_path):
    d = _good_copy(ds, tmp_path)
    f = d / "part-001.parquet"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    return d, None, "part-001.parquet", r"magic|PAR1|footer|truncat|too (small|short)|invalid|corrupt|size|offset|end of file|eof"


def case_truncated_tail(ds, tmp_path):
    """The last 100 bytes are gone: the end magic and part of the metadata."""
    d = _good_copy(ds, tmp_path)
    f = d / "part-002.parquet"
    data = f.read_bytes()
    f.write_bytes(data[:-100])
    return d, None, "part-002.parquet", r"magic|PAR1|footer|truncat|invalid|corrupt|size|offset|eof"


def _no_schema_file(tmp_path, name):
    """A file without the ARROW:schema key-value (so every metadata byte matters to any reader)."""
    d = tmp_path / "ds"
    if not d.exists():
        d.mkdir()
    table = pa.table({"text": pa.array([f"value {i} " * (i % 7) for i in range(3000)])})
    pq.write_table(table, d / name, store_schema=False, write_statistics=False,
                   data_page_size=512, write_batch_size=32, row_group_size=500,
                   compression="snappy")
    return d


def case_corrupt_footer(ds, tmp_path):
    d = _no_schema_file(tmp_path, "a.parquet")
    _no_schema_file(tmp_path, "b.parquet")
    f = d / "b.parquet"
    data, start, n = _footer(f)
    buf = bytearray(data)
    mid = start + n // 2
    for i in range(mid, mid + 16):
        buf[i] ^= 0xFF
    f.write_bytes(bytes(buf))
    assert _pyarrow_rejects(str(f)), "corruption not detected by pyarrow: pick other bytes"
    return d, None, "b.parquet", r"footer|metadata|thrift|corrupt|invalid|malformed|unexpected|overflow|varint|type|bad|out of"


def case_footer_length_too_big(ds, tmp_path):
    d = _good_copy(ds, tmp_path)
    f = d / "part-002.parquet"
    data = bytearray(f.read_bytes())
    data[-8:-4] = struct.pack("<I", len(data) * 3)
    f.write_bytes(bytes(data))
    return d, None, "part-002.parquet", r"footer|metadata|length|size|corrupt|invalid|larger|exceed|truncat|out of"


def case_bad_end_magic(ds, tmp_path):
    d = _good_copy(ds, tmp_path)
    f = d / "part-000.parquet"
    data = bytearray(f.read_bytes())
    data[-4:] = b"PARX"
    f.write_bytes(bytes(data))
    return d, None, "part-000.parquet", r"magic|PAR1|not a parquet|not parquet|footer|invalid|corrupt"


def case_missing_column(ds, tmp_path):
    d = _good_copy(ds, tmp_path)
    return d, "column=nosuchcol", "nosuchcol", r"column"


def case_column_missing_in_one_file(ds, tmp_path):
    d = _good_copy(ds, tmp_path, nfiles=2)
    pq.write_table(pa.table({"other": pa.array(["x", "y"] * 100)}), d / "part-009.parquet")
    return d, "column=text", "part-009.parquet", r"column|text|schema|missing|not found"


def case_ambiguous_default_column(ds, tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    pq.write_table(pa.table({"title": ["a", "b"] * 50, "body": ["c", "d"] * 50,
                             "n": list(range(100))}), d / "a.parquet")
    return d, None, "title", r"body"        # both candidates listed


def case_empty_dir(ds, tmp_path):
    d = tmp_path / "emptyds"
    d.mkdir()
    return d, None, "emptyds", r"no .*parquet|empty|no files|nothing|not found"


def case_dir_without_parquet(ds, tmp_path):
    d = tmp_path / "noparquet"
    d.mkdir()
    (d / "README.txt").write_text("hello\n")
    (d / "_SUCCESS").write_bytes(b"")
    return d, None, "noparquet", r"no .*parquet|empty|no files|nothing|not found"


def case_nonexistent(ds, tmp_path):
    return tmp_path / "does-not-exist", None, "does-not-exist", \
        r"no such|not found|does not exist|cannot|can't|exist|enoent"


CASES = [case_not_parquet, case_tiny_file, case_truncated, case_truncated_tail,
         case_corrupt_footer, case_footer_length_too_big, case_bad_end_magic, case_missing_column,
         case_column_missing_in_one_file, case_ambiguous_default_column, case_empty_dir,
         case_dir_without_parquet, case_nonexistent]


def _check_message(p, must_name, problem_re, how):
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, f"{how}: exit status 0 on bad input; stderr: {err!r}"
    assert must_name.lower() in err.lower(), f"{how}: stderr does not name {must_name!r}: {err!r}"
    assert re.search(problem_re, err, re.I), \
        f"{how}: stderr does not say what is wrong (expected /{problem_re}/): {err!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[5:] for c in CASES])
def test_bad_input_refused_at_mount(case, ds, tmp_path, mount_fails):
    path, opts, name, problem = case(ds, tmp_path)
    before = _hashes(path)
    p = mount_fails(path, opts)
    _check_message(p, name, problem, "mount")
    assert _hashes(path) == before, "the source files were modified"


@pytest.mark.parametrize("case", CASES, ids=[c.__name__[5:] for c in CASES])
def test_bad_input_refused_by_cat(case, ds, tmp_path, cat):
    path, opts, name, problem = case(ds, tmp_path)
    p = cat(path, "epoch-0.jsonl", opts, check=False)
    _check_message(p, name, problem, "cat")
    assert p.stdout == b"", f"cat wrote {len(p.stdout)} bytes before failing"


def _hashes(path):
    out = {}
    if os.path.isdir(path):
        for f in yds.parquet_files(str(path)):
            st = os.stat(f)
            out[f] = (hashlib.sha256(open(f, "rb").read()).hexdigest(), st.st_mtime_ns)
    return out


# ---------------------------------------------------------------------------------------------
# read-only

def test_writes_fail_with_erofs(ds, mount, expect_errno):
    path = ds.path(BASIC)
    before = _hashes(path)
    with mount(path, "epochs=2") as m:
        epoch = m.p("epoch-0.jsonl")
        size = m.size("epoch-0.jsonl")
        ops = [
            ("open O_WRONLY", lambda: os.open(epoch, os.O_WRONLY)),
            ("open O_RDWR", lambda: os.open(epoch, os.O_RDWR)),
            ("open O_WRONLY|O_TRUNC", lambda: os.open(epoch, os.O_WRONLY | os.O_TRUNC)),
            ("open O_APPEND", lambda: os.open(epoch, os.O_WRONLY | os.O_APPEND)),
            ("create", lambda: os.open(m.p("new.jsonl"), os.O_CREAT | os.O_WRONLY, 0o644)),
            ("create unlisted epoch", lambda: os.open(m.p("epoch-5.jsonl"),
                                                      os.O_CREAT | os.O_WRONLY, 0o644)),
            ("create in .youmufs", lambda: os.open(m.p(".youmufs/x"),
                                                   os.O_CREAT | os.O_WRONLY, 0o644)),
            ("open index.json O_WRONLY", lambda: os.open(m.p(".youmufs/index.json"), os.O_WRONLY)),
            ("mkdir", lambda: os.mkdir(m.p("newdir"))),
            ("unlink", lambda: os.unlink(epoch)),
            ("truncate", lambda: os.truncate(epoch, 0)),
            ("rename", lambda: os.rename(epoch, m.p("renamed.jsonl"))),
            ("rmdir", lambda: os.rmdir(m.p(".youmufs"))),
            ("symlink", lambda: os.symlink("epoch-0.jsonl", m.p("link"))),
            ("chmod", lambda: os.chmod(epoch, 0o777)),
        ]
        for what, fn in ops:
            expect_errno(fn, errno.EROFS, what)
        assert m.size("epoch-0.jsonl") == size
        assert sorted(os.listdir(m.path)) == [".youmufs", "epoch-0.jsonl", "epoch-1.jsonl"]
        m.read("epoch-0.jsonl")
    assert _hashes(path) == before, "the source files were modified"


# ---------------------------------------------------------------------------------------------
# .youmufs/

def _find_key(obj, key, depth=2):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        if depth:
            for v in obj.values():
                r = _find_key(v, key, depth - 1)
                if r is not None:
                    return r
    return None


def _check_index(idx, path):
    assert isinstance(idx, dict), f"index.json is not a JSON object: {type(idx)}"
    nfiles = len(yds.parquet_files(path))
    nrows = yds.total_rows(path)
    for key in ("files", "pages", "rows"):
        assert _find_key(idx, key) is not None, f"index.json has no key {key!r}: keys {sorted(idx)}"
    files = _find_key(idx, "files")
    got = len(files) if isinstance(files, (list, dict)) else files
    assert got == nfiles, f"index.json files={files!r}, dataset has {nfiles} files"
    pages = _find_key(idx, "pages")
    pages = len(pages) if isinstance(pages, (list, dict)) else pages
    assert isinstance(pages, int) and pages >= yds.total_pages_lower_bound(path), \
        f"index.json pages={pages!r}, dataset has at least " \
        f"{yds.total_pages_lower_bound(path)} pages (one per row group)"
    rows = _find_key(idx, "rows")
    nonnull = len(yds.oracle(path))
    assert rows in (nrows, nonnull), f"index.json rows={rows!r}, dataset has {nrows} rows " \
                                     f"({nonnull} non-null)"


def test_youmufs_dir_json(ds, mount, cat):
    path = ds.path(BASIC)
    with mount(path, "rowid") as m:
        assert {"index.json", "stats.json"} <= set(os.listdir(m.p(".youmufs")))
        idx = json.loads(m.read(".youmufs/index.json"))
        _check_index(idx, path)
        stats0 = json.loads(m.read(".youmufs/stats.json"))
        assert isinstance(stats0, dict), "stats.json is not a JSON object"
        data = m.read("epoch-0.jsonl")
        stats1 = json.loads(m.read(".youmufs/stats.json"))
        assert isinstance(stats1, dict)
    problem = check_rowid_jsonl(data, ds.oracle(BASIC), "text")
    assert not problem, problem

    def numbers(o):
        if isinstance(o, bool):
            return []
        if isinstance(o, (int, float)):
            return [o]
        if isinstance(o, dict):
            return [x for v in o.values() for x in numbers(v)]
        if isinstance(o, list):
            return [x for v in o for x in numbers(v)]
        return []
    assert any(x > 0 for x in numbers(stats1)), \
        f"stats.json has no positive counter after reading a whole epoch: {stats1}"
    assert stats0 != stats1, "stats.json did not change after reading a whole epoch"
    p = cat(path, ".youmufs/index.json")
    _check_index(json.loads(p.stdout), path)


# ---------------------------------------------------------------------------------------------
# sources changing

def test_remount_after_source_change_sees_new_data(ds, tmp_path, cat):
    """A persistent index cache must not serve a stale index for a rewritten file."""
    d = _good_copy(ds, tmp_path)
    first = cat(d, "epoch-0.jsonl", "rowid,shuffle=none").stdout
    assert first == b"".join(expected_records(yds.oracle(str(d)), "jsonl", "text", rowid=True))
    f = d / "part-001.parquet"
    tmp = d / "part-001.parquet.new"
    pq.write_table(pa.table({"text": pa.array([f"rewritten {i}" for i in range(777)])}), tmp,
                   data_page_size=512, write_batch_size=32)
    os.replace(tmp, f)
    second = cat(d, "epoch-0.jsonl", "rowid,shuffle=none").stdout
    assert second == b"".join(expected_records(yds.oracle(str(d)), "jsonl", "text", rowid=True))


def test_source_change_after_mount_never_wrong_bytes(ds, tmp_path, mount):
    """Invariant 7: if a source file changes after mount, reads that need it fail with EIO
    instead of returning wrong bytes. Reading the old content correctly is fine too."""
    d = _good_copy(ds, tmp_path)
    want = b"".join(expected_records(yds.oracle(str(d)), "jsonl", "text", rowid=True))
    with mount(d, "rowid,shuffle=none") as m:
        size = m.size("epoch-0.jsonl")
        assert size == len(want)
        f = d / "part-001.parquet"
        data = bytearray(f.read_bytes())
        # same size, different bytes in the data pages: scramble the middle of the file
        for i in range(len(data) // 4, len(data) // 2):
            data[i] = (data[i] * 7 + 13) & 0xFF
        with open(f, "r+b") as fh:      # in place: same inode, same size
            fh.write(bytes(data))
        try:
            got = m.read("epoch-0.jsonl")
        except OSError as e:
            assert e.errno == errno.EIO, f"expected EIO, got {errno.errorcode.get(e.errno)}"
            return
        assert got == want, "a source file changed after mount and reads returned wrong bytes"


# ---------------------------------------------------------------------------------------------
# bad options

BAD_OPTIONS = [
    ("format=xml", "format"), ("shuffle=sideways", "shuffle"), ("seed=abc", "seed"),
    ("epochs=abc", "epochs"), ("epochs=-1", "epochs"), ("buffer=abc", "buffer"),
    ("mem=lots", "mem"), ("colour=red", "colour"), ("rowid,format=len32", "rowid"),
    ("seed=99999999999999999999999", "seed"),
]


@pytest.mark.parametrize("opts,key", BAD_OPTIONS, ids=[o for o, _ in BAD_OPTIONS])
def test_bad_options_refused(opts, key, ds, cat, mount_fails):
    """An invalid option value is an error that names the option (not silently ignored).
    rowid with format=len32: the contract says rowid is jsonl only; a silently ignored rowid
    would surprise a user, so an error is expected."""
    path = ds.path(BASIC)
    name = "epoch-0.len32" if "format=len32" in opts else "epoch-0.jsonl"
    p = cat(path, name, opts, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, f"cat -o {opts}: accepted; stderr {err!r}"
    assert key in err, f"cat -o {opts}: message does not name {key!r}: {err!r}"
    p = mount_fails(path, opts)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0 and key in err, f"mount -o {opts}: {err!r}"


def test_absurd_names_do_not_crash(ds, mount, expect_errno):
    """Huge epoch numbers, overflowing part numbers, very long names: ENOENT (or a valid file),
    never a crash (the mount helper fails the test if the daemon dies)."""
    with mount(ds.path(BASIC)) as m:
        for name in ["epoch-99999999999999999999999.jsonl",
                     "epoch-0.part-0-of-99999999999999999999999.jsonl",
                     "epoch-0.part-18446744073709551615-of-18446744073709551615.jsonl",
                     "epoch-" + "9" * 240 + ".jsonl", "x" * 255, "epoch-0.jsonl" + "\u00e9" * 50]:
            try:
                os.stat(m.p(name))
            except OSError as e:
                assert e.errno in (errno.ENOENT, errno.ENAMETOOLONG), f"{name[:60]}: {e}"
        for name in ("epoch-18446744073709551615.jsonl",
                     "epoch-3.part-0-of-18446744073709551615.jsonl"):
            try:
                with open(m.p(name), "rb") as f:
                    f.read(1 << 16)
            except OSError as e:
                assert e.errno == errno.ENOENT, f"{name}: {e}"
        assert m.read("epoch-0.jsonl")          # still serving


# ---------------------------------------------------------------------------------------------
# corrupt data pages (the footer is fine)

def _gzip_file(tmp_path):
    d = tmp_path / "gz"
    d.mkdir()
    vals = [f"row {i} " + "lorem ipsum dolor sit amet " * (i % 9) for i in range(4000)]
    pq.write_table(pa.table({"text": pa.array(vals)}), d / "a.parquet", compression="gzip",
                   data_page_size=4096, write_batch_size=64, row_group_size=1000,
                   use_dictionary=False, store_schema=False, write_statistics=False)
    return d, d / "a.parquet"


def test_corrupt_compressed_page(tmp_path, cat, mount):
    """Damage inside gzip-compressed page data (gzip carries a CRC, so any reader can tell):
    either the mount/cat refuses naming the file, or reads of the damaged part fail with EIO.
    Never wrong bytes, never a crash or hang."""
    d, f = _gzip_file(tmp_path)
    data, meta_start, _n = _footer(f)
    # Damage 64 bytes in the middle of the data; move on until pyarrow notices (bytes that no
    # reader uses, such as page statistics, are not damage).
    for mid in range(meta_start // 2, meta_start - 64, 97):
        buf = bytearray(data)
        for i in range(mid, mid + 64):
            buf[i] ^= 0x5A
        f.write_bytes(bytes(buf))
        if _pyarrow_rejects(str(f)):
            break
    else:
        pytest.fail("could not damage the file in a way pyarrow detects")
    p = cat(d, "epoch-0.jsonl", "shuffle=none", check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, "cat served a file whose page data is corrupt"
    assert "a.parquet" in err, f"cat: message does not name the file: {err!r}"
    # The mount may refuse, or mount and fail the read with EIO.
    try:
        with mount(d, "shuffle=none") as m:
            try:
                m.read("epoch-0.jsonl")
            except OSError as e:
                assert e.errno == errno.EIO, f"read: expected EIO, got {e}"
            else:
                pytest.fail("mounted read of a corrupt page returned data instead of EIO")
    except pytest.fail.Exception as e:
        if "before the mount was ready" in str(e):
            assert "a.parquet" in str(e), f"mount refused without naming the file: {e}"
        else:
            raise


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd"])
def test_fuzzed_files_never_crash(codec, tmp_path, cat):
    """Random byte damage anywhere in a file: `cat` exits 0 or non-zero with a message, but
    never dies by a signal, trips a sanitizer, or hangs (all checked by the cat helper)."""
    import random
    d = tmp_path / "fz"
    d.mkdir()
    vals = [None if i % 11 == 0 else f"v{i} " + "xyz\u00e9" * (i % 13) for i in range(3000)]
    src = tmp_path / "src.parquet"
    pq.write_table(pa.table({"text": pa.array(vals)}), src, compression=codec,
                   data_page_size=512, write_batch_size=32, row_group_size=700,
                   write_page_index=True)
    good = src.read_bytes()
    rng = random.Random(codec)
    outcomes = {"ok": 0, "error": 0}
    for trial in range(40):
        buf = bytearray(good)
        for _ in range(rng.choice([1, 4, 32])):
            pos = rng.randrange(4, len(buf) - 4) if rng.random() < 0.7 else \
                rng.randrange(max(4, len(buf) - 600), len(buf) - 8)     # bias to the footer
            buf[pos] = rng.randrange(256)
        (d / "a.parquet").write_bytes(bytes(buf))
        p = cat(d, f"epoch-{trial}.len32", "format=len32", check=False, timeout=60)
        if p.returncode == 0:
            outcomes["ok"] += 1
        else:
            outcomes["error"] += 1
            assert p.stderr.strip(), f"trial {trial}: non-zero exit without a message"
    assert outcomes["error"] > 0, f"no damaged file was refused: {outcomes}"


def test_a_page_large_from_few_bytes_costs_the_memory_it_declares(tmp_path, cat):
    """A page far larger than its compressed bytes (48 MiB of one byte in one zstd page, ~5 KB
    on disk) is no decompression bomb: what it declares is charged before anything is
    allocated and no more is written, so it costs that memory like any page of its size
    (CONTRACT-TYPES.md). At the default mem= it is read; at a mem= whose quarter cannot hold
    it, refused at mount naming the file and the mem= that reads it; at that mem=, read."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path / "big"
    d.mkdir()
    value = "a" * (48 << 20)
    pq.write_table(pa.table({"text": [value]}), d / "big.parquet",
                   compression="zstd", use_dictionary=False, data_page_size=64 << 20)
    assert os.path.getsize(d / "big.parquet") < (64 << 10)
    want = ('{"text":"' + value + '"}\n').encode()
    assert cat(d, "epoch-0.jsonl").stdout == want
    p = cat(d, "epoch-0.jsonl", "mem=64M", check=False)
    err = p.stderr.decode()
    need = re.search(r"needs mem=(\S+) or more", err)
    assert p.returncode != 0 and not p.stdout and "big.parquet" in err and need, err
    assert "mem=64M" in err and "page at offset" in err, err
    assert cat(d, "epoch-0.jsonl", f"mem={need.group(1)}").stdout == want


def _int_file(path, rows=200):
    """One required int32 column, one page per row group, with a page index: format=raw sizes
    it from the page index, without reading a page header at mount."""
    pq.write_table(pa.table({"n": pa.array(range(rows), pa.int32())},
                            schema=pa.schema([pa.field("n", pa.int32(), nullable=False)])),
                   path, compression="zstd", use_dictionary=False, write_page_index=True,
                   row_group_size=rows, data_page_size=1 << 20)


def _claim_more_than_the_chunk(path):
    """Rewrite, in place and at its length, the first data page header's uncompressed size as
    the largest varint of the same length; returns (claimed size, the chunk's total size)."""
    col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    buf = bytearray(path.read_bytes())
    at = col.data_page_offset
    assert buf[at] == 0x15 and buf[at + 2] == 0x15, "PageHeader starts: type, uncompressed size"
    at += 3                                     # field 1 (one-byte type), field 2's header
    n = 1
    while buf[at + n - 1] & 0x80:
        n += 1
    claimed = (1 << (7 * n - 1)) - 1            # zigzag 2^(7n) - 2: n bytes, positive
    buf[at:at + n] = bytes([0xfe] + [0xff] * (n - 2) + [0x7f]) if n > 1 else b"\x7e"
    path.write_bytes(bytes(buf))
    assert claimed > col.total_uncompressed_size
    return claimed, col.total_uncompressed_size


def test_page_header_claims_checked_at_read(tmp_path, cat):
    """Pages sized from the page index (and, on a re-mount, from the persistent index) are not
    header-checked at mount; their header is held at read time to the same rule as the mount's
    page walk: no more than the column chunk's whole uncompressed size (nor a decompression
    bomb), refused before anything is allocated for it, naming the file."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    _int_file(good / "a.parquet")
    _int_file(bad / "a.parquet")
    claimed, chunk = _claim_more_than_the_chunk(bad / "a.parquet")
    base = "format=raw,column=n,shuffle=none"
    for d in (good, bad):
        cached = f"{base},cache={tmp_path / ('cache-' + d.name)}"
        cat(d, ".youmufs/index.json", cached)                # writes the persistent index
        for opts, run in ((base + ",cache=none", "page index"), (cached, "persistent index")):
            ix = json.loads(cat(d, ".youmufs/index.json", opts).stdout)
            if run == "page index":
                assert ix["metadata_sized_chunks"] == ix["row_groups"] == 1, ix
            else:
                assert ix["persistent_index"]["files_reused"] == 1, ix
            p = cat(d, "epoch-0.bin", opts, check=False)
            if d == good:
                assert p.returncode == 0 and p.stdout == struct.pack("<200i", *range(200)), run
                continue
            err = p.stderr.decode("utf-8", "replace")
            assert p.returncode != 0 and not p.stdout, f"{run}: served a hostile page"
            assert re.search(rf"a\.parquet.*data page at offset \d+: claims {claimed} bytes "
                             rf"uncompressed, more than the {chunk} of its whole column chunk",
                             err), f"{run}: {err!r}"
