"""Issue 13: several columns per record (column=a:b:c, jsonl), against pyarrow.

The table has a small int column beside a long text column (so their pages start at different
rows: a text page holds a few rows, an id page hundreds), a double, a list and a struct, with
nulls in every column, empty lists, and rows where every column is null. Each writer (pyarrow,
DuckDB, arrow-rs via parquet-wasm, polars) writes it with small pages.

The oracle renders each column's values the way tests/CONTRACT-TYPES.md says (pyarrow's
to_pylist(), typed_data.render_array) and joins them into one object per row, keys in the order
given, a null field `null`, a row left out only when every named column is null there.

Through `youmufs cat`: natural order byte-exact; page shuffle and row shuffle exact per row
(rowid), every kept row once. Through the mount: st_size exact, parts hold the epoch's records,
a read at any offset equals the sequential read, the bytes do not depend on threads or mem.
"""

import collections
import errno
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import typed_data as td
from typed_data import WVariant, _o

REQUIRE = os.environ.get("YOUMUFS_REQUIRE") == "1"

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("text", pa.string()),
    ("score", pa.float64()),
    ("ll", pa.list_(pa.int32())),
    ("ss", pa.struct([("inner", pa.struct([("v", pa.string())]))])),
    ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("st", pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.string()),
                                                            ("d", pa.list_(pa.int16()))]))])),
    ("m", pa.map_(pa.string(), pa.int64())),
    ("mi", pa.map_(pa.int32(), pa.string())),
])
COLUMNS = [f.name for f in SCHEMA]


def columns_table(file_no: int, rows: int, large: bool) -> pa.Table:
    rng = random.Random(1313 + file_no)
    words = ["a", "", "ünï", 'q"\\', "line\nbreak", "word"]

    def maybe(p, make):
        return None if rng.random() < p else make()

    cols = {c: [] for c in COLUMNS}
    for r in range(rows):
        if r % 97 == 0:  # every column null: no record
            for c in COLUMNS:
                cols[c].append(None)
            continue
        cols["id"].append(maybe(0.15, lambda: file_no * 100000 + r))
        n = rng.choice([0, 1, 3, 30, 300, 2000])
        cols["text"].append(maybe(0.2, lambda: " ".join(rng.choice(words) for _ in range(n))))
        cols["score"].append(maybe(0.2, lambda: rng.choice([0.5, -0.0, 1e300, rng.random()])))
        cols["ll"].append(maybe(0.15, lambda: [maybe(0.1, lambda: rng.randint(-2**31, 2**31 - 1))
                                               for _ in range(rng.choice([0, 0, 1, 4]))]))
        cols["ss"].append(maybe(0.15, lambda: {"inner": maybe(0.2, lambda: {
            "v": maybe(0.2, lambda: rng.choice(words))})}))
        cols["messages"].append(maybe(0.1, lambda: [
            maybe(0.05, lambda: {"role": maybe(0.1, lambda: rng.choice(["user", "assistant"])),
                                 "content": maybe(0.1, lambda: " ".join(
                                     rng.choice(words) for _ in range(rng.choice([0, 5, 400]))))})
            for _ in range(rng.choice([0, 1, 2, 6]))]))
        cols["st"].append(maybe(0.15, lambda: {"a": maybe(0.2, lambda: r), "b": maybe(0.2, lambda: {
            "c": maybe(0.2, lambda: rng.choice(words)),
            "d": maybe(0.2, lambda: [maybe(0.1, lambda: rng.randint(-5, 5))
                                     for _ in range(rng.choice([0, 2]))])})}))
        cols["m"].append(maybe(0.15, lambda: [(f"k{j}", maybe(0.2, lambda: rng.randint(0, 9)))
                                              for j in range(rng.choice([0, 1, 3]))]))
        cols["mi"].append(maybe(0.15, lambda: [(j, maybe(0.2, lambda: rng.choice(words)))
                                               for j in range(rng.choice([0, 2]))]))
    return pa.table({c: pa.array(cols[c], SCHEMA.field(c).type) for c in COLUMNS}, schema=SCHEMA)


VARIANTS = [
    WVariant("pyarrow", "snappy-v1-dict", _o(compression="snappy", data_page_size=2048,
                                             row_group_size=700)),
    WVariant("pyarrow", "zstd-v2-plain", _o(compression="zstd", data_page_version="2.0",
                                            use_dictionary=False, data_page_size=3000)),
    WVariant("duckdb", "snappy", _o(COMPRESSION="snappy", ROW_GROUP_SIZE=2048)),
    WVariant("arrowrs", "snappy-pageindex", _o(compression="SNAPPY", dataPageSize=2048,
                                               maxRowGroupSize=600, statistics="Page",
                                               writeBatchSize=32)),
    WVariant("polars", "zstd", _o(compression="zstd", row_group_size=500, data_page_size=2000)),
]
VARIANTS = [WVariant(v.writer, v.name, v.options, False, 2, 1500, tuple(COLUMNS))
            for v in VARIANTS]
SETS = ["id:text", "text:id:score", "ll:id", "ss:text:ll", "score:ss.inner.v",
        "messages", "id:messages", "st:m", "mi:text"]
CELLS = [pytest.param(v, s, id=f"{v.id}-{s}") for v in VARIANTS for s in SETS]


@pytest.fixture(scope="session")
def cc(tmp_path_factory):
    return td.TypedCache(str(tmp_path_factory.mktemp("columns")), table=columns_table)


def _path(cc, v):
    try:
        return cc.path(v)
    except td.WriterUnavailable as e:
        if REQUIRE:
            pytest.fail(f"{e} (YOUMUFS_REQUIRE=1)")
        pytest.skip(str(e))


def expected_rows(root: str, names: list) -> dict:
    """{global row: its jsonl record with _row} for every row where some column is not null,
    from pyarrow's reading of the files."""
    out, base = {}, 0
    for f in sorted(os.path.join(root, n) for n in os.listdir(root) if n.endswith(".parquet")):
        table = pq.read_table(f)
        rendered = []
        for name in names:
            arr, key, _ = td.resolve(table.column(name.split(".")[0]), name)
            rendered.append((json.dumps(key, ensure_ascii=False), td.render_array(arr)))
        for i in range(table.num_rows):
            vals = [texts[i] for _k, texts in rendered]
            if all(v is None for v in vals):
                continue
            body = ",".join(k + ":" + ("null" if v is None else v)
                            for (k, _t), v in zip(rendered, vals))
            out[base + i] = ("{" + body + f',"_row":{base + i}}}\n').encode("utf-8")
        base += table.num_rows
    return out


def check_records(data: bytes, want: dict) -> str:
    """Every record byte-exact for its _row, every expected row exactly once. '' if fine."""
    if data and not data.endswith(b"\n"):
        return f"does not end with a newline: {data[-60:]!r}"
    seen, problems = set(), []
    for rec in data.splitlines(keepends=True):
        row = json.loads(rec)["_row"]
        if row in seen:
            problems.append(f"row {row} twice")
        seen.add(row)
        if want.get(row) != rec:
            problems.append(f"row {row}: got {rec[:200]!r}, expected {want.get(row, b'')[:200]!r}")
        if len(problems) > 4:
            break
    missing = set(want) - seen
    if missing and len(problems) <= 4:
        problems.append(f"{len(missing)} of {len(want)} rows never served, e.g. "
                        f"{sorted(missing)[:5]}")
    return "; ".join(problems)


def test_pages_start_at_different_rows(cc):
    """The premise: in the files, the id and text columns' pages do not share boundaries."""
    path = _path(cc, VARIANTS[0])
    f = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".parquet"))[0]
    md = pq.ParquetFile(f).metadata.row_group(0)
    pages = {md.column(i).path_in_schema: md.column(i).total_compressed_size for i in range(2)}
    assert pages["text"] > 8 * pages["id"], pages


@pytest.mark.parametrize("v,names", CELLS)
def test_columns_natural_order_exact(v, names, cc, cat):
    path = _path(cc, v)
    want = expected_rows(path, names.split(":"))
    p = cat(path, "epoch-0.jsonl", {"column": names, "shuffle": "none", "rowid": True})
    diff = td.first_difference(p.stdout, b"".join(want[r] for r in sorted(want)), width=60)
    assert not diff, f"{v.id} column={names} shuffle=none: {diff}"


@pytest.mark.parametrize("v,names", CELLS)
@pytest.mark.parametrize("shuffle", ["page", "row"])
def test_columns_shuffled_rowid_exact(v, names, shuffle, cc, cat):
    path = _path(cc, v)
    want = expected_rows(path, names.split(":"))
    p = cat(path, "epoch-0.jsonl", {"column": names, "rowid": True, "shuffle": shuffle,
                                    "buffer": 300})
    problem = check_records(p.stdout, want)
    assert not problem, f"{v.id} column={names} shuffle={shuffle}: {problem}"


def test_columns_without_rowid(cc, cat):
    """Keys in the order given, nothing else: {"id":..,"text":..}."""
    path = _path(cc, VARIANTS[0])
    want = expected_rows(path, ["id", "text"])
    p = cat(path, "epoch-0.jsonl", {"column": "id:text", "shuffle": "none"})
    expect = b"".join(w.rsplit(b',"_row":', 1)[0] + b"}\n" for _r, w in sorted(want.items()))
    assert p.stdout == expect
    first = json.loads(p.stdout.split(b"\n")[0])
    assert list(first) == ["id", "text"]


@pytest.mark.parametrize("names", ["id:text", "ss:text:ll", "messages", "st:m:id"])
def test_columns_parts_seek_determinism(names, cc, cat, mount):
    """Invariants 2 and 3 and the parts contract for several columns."""
    path = _path(cc, VARIANTS[0])
    opts = {"column": names, "rowid": True, "buffer": 200}
    whole = cat(path, "epoch-0.jsonl", opts).stdout
    assert not check_records(whole, expected_rows(path, names.split(":")))
    for o in ({"threads": 1}, {"threads": 3, "mem": "2M"}):
        assert cat(path, "epoch-0.jsonl", {**opts, **o}).stdout == whole, f"{o} changed bytes"
    assert cat(path, "epoch-1.jsonl", opts).stdout != whole, "epoch 1 has epoch 0's order"
    with mount(path, opts) as m:
        assert m.size("epoch-0.jsonl") == len(whole)
        assert m.read("epoch-0.jsonl") == whole
        parts = [m.read(f"epoch-0.part-{i}-of-3.jsonl") for i in range(3)]
        assert sum(m.size(f"epoch-0.part-{i}-of-3.jsonl") for i in range(3)) == len(whole)
        assert collections.Counter(b"".join(parts).splitlines()) == \
            collections.Counter(whole.splitlines()), "parts do not hold the epoch's records"
        rng = random.Random(names)
        with open(m.p("epoch-0.jsonl"), "rb", buffering=0) as f:
            for _ in range(200):
                off = rng.randrange(len(whole) + 10)
                n = rng.choice([1, 7, 4096, 65537])
                assert os.pread(f.fileno(), n, off) == whole[off:off + n], f"pread({n}, {off})"


@pytest.mark.parametrize("fmt", ["text", "len32", "raw"])
def test_columns_one_column_formats_refused(fmt, cc, cat):
    path = _path(cc, VARIANTS[0])
    ext = {"raw": "bin", "text": "txt", "len32": "len32"}[fmt]
    p = cat(path, f"epoch-0.{ext}", {"column": "id:text", "format": fmt}, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0 and f"format={fmt}" in err and "id:text" in err and \
        "jsonl" in err, err


@pytest.mark.parametrize("names,words", [("id:nope", ["nope"]), ("id:id", ["id", "twice"]),
                                         ("id::text", ["empty"])])
def test_columns_bad_names_refused(names, words, cc, cat):
    p = cat(_path(cc, VARIANTS[0]), "epoch-0.jsonl", {"column": names}, check=False)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0 and all(w in err for w in words), err


def test_column_name_with_colon_is_one_column(tmp_path, cat):
    """A column whose name holds ':' is served as one column."""
    pq.write_table(pa.table({"a:b": ["x", None, "y"], "a": [1, 2, 3]}),
                   str(tmp_path / "c.parquet"))
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "a:b", "shuffle": "none"})
    assert p.stdout == b'{"a:b":"x"}\n{"a:b":"y"}\n'


def test_columns_beside_primary_beyond_mem(tmp_path, cat):
    """The columns beside the primary are written once into a file and read from it per
    record, so their size is not limited by mem=: two long texts, the second of 6 MB, are
    served under mem=1M. The primary is the string column, whatever its order or how well it
    compresses (a text of one value is smaller in the file than the ids)."""
    n = 20000
    pq.write_table(pa.table({"id": list(range(n)), "a": ["x" * 300] * n,
                             "b": [f"{i:0300d}" for i in range(n)]}), str(tmp_path / "t.parquet"))
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "a:b", "mem": "1M", "shuffle": "none"})
    assert p.stdout.split(b"\n")[7] == b'{"a":"' + b"x" * 300 + b'","b":"' + \
        f"{7:0300d}".encode() + b'"}'
    assert p.stdout.count(b"\n") == n
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "id:a", "mem": "1M", "shuffle": "none"})
    assert p.stdout.split(b"\n")[1] == b'{"id":1,"a":"' + b"x" * 300 + b'"}'


def test_columns_beside_primary_duckdb_list_pages(tmp_path, cat):
    """DuckDB writes a list column's row group as one page of every element (about 2.2 M
    token ids here; 16 M, 130 MB decoded, in its token files): beside the paged text such a
    page is streamed into the values file piece by piece, never decoded whole, so mem=64M
    serves it (holding it whole would take 89 MB; the mount used to refuse it, naming
    mem=324M). Every record is pyarrow's, per row, rows of null and empty lists included."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "bench"))
    import make_shapes
    problem = make_shapes.duckdb_problem()
    if problem:
        if REQUIRE:
            pytest.fail(f"DuckDB writer: {problem} (YOUMUFS_REQUIRE=1)")
        pytest.skip(f"DuckDB writer: {problem}")
    rng = random.Random(29)
    words = [f"w{i}" for i in range(500)]
    base = " ".join(rng.choice(words) for _ in range(300000))
    text, tokens = [], []
    for r in range(16000):
        o = rng.randrange(len(base) - 2200)
        text.append(base[o:o + rng.randint(1200, 2100)])
        k = rng.random()
        tokens.append(None if k < 0.05 else [] if k < 0.1 else
                      [rng.randrange(40) for _ in range(rng.randint(1, 300))])
    src, out = tmp_path / "src", tmp_path / "duckdb"
    src.mkdir()
    out.mkdir()
    pq.write_table(pa.table({"text": text, "tokens": pa.array(tokens, pa.list_(pa.int64()))}),
                   str(src / "part-0.parquet"))
    make_shapes.duckdb_rewrite(str(src), str(out), ["text", "tokens"])
    want = expected_rows(str(out), ["text", "tokens"])
    p = cat(str(out), "epoch-0.jsonl", {"column": "text:tokens", "rowid": True, "mem": "64M",
                                        "cache": "none"})
    problem = check_records(p.stdout, want)
    assert not problem, problem


def _long_pairs(root, n=14000):
    """prompt:response, the response column (~40 MB framed) far over mem=16M; the prompt,
    longer, is the paged one."""
    path = os.path.join(root, "pairs")
    if not os.path.isdir(path):
        os.makedirs(path)
        for k in range(2):
            rows = range(k * n // 2, (k + 1) * n // 2)
            pq.write_table(pa.table({"id": list(rows),
                                     "prompt": [f"p{i} " * (700 + i % 50) for i in rows],
                                     "response": [f"r{i}\n" * (500 + i % 40) for i in rows]}),
                           os.path.join(path, f"part-{k}.parquet"), data_page_size=1 << 16)
    return path


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return _long_pairs(str(tmp_path_factory.mktemp("pairs")))


@pytest.mark.parametrize("names", ["prompt:response", "id:prompt"])
def test_columns_long_pair_exact_under_small_mem(names, pairs, cat):
    """column=prompt:response (and id:text's shape) at mem=16M with ~40 MB of responses beside
    the paged prompts: the mount succeeds and every record is pyarrow's, per row."""
    want = expected_rows(pairs, names.split(":"))
    p = cat(pairs, "epoch-0.jsonl", {"column": names, "rowid": True, "mem": "16M",
                                     "cache": "none"})
    problem = check_records(p.stdout, want)
    assert not problem, problem
    if names == "prompt:response":
        assert sum(len(json.loads(r)["response"]) for r in p.stdout.splitlines()) > 36e6


def test_columns_long_pair_memory_bound(pairs, mount):
    """Invariant 4 with ~40 MB of responses beside the paged prompts at mem=16M: 4 parts read
    at once, peak RSS within 1.1 x (index + mem) + 16 MiB, the records all there."""
    import test_memory as tm
    tm._skip_if_asan()
    mem = 16 << 20
    with mount(pairs, {"column": "prompt:response", "mem": "16M", "cache": "none"}) as m:
        b = tm.bound(tm._index_bytes(m), mem)
        names = [f"epoch-0.part-{i}-of-4.jsonl" for i in range(4)]
        lines = tm._count_lines_at_once(m, names, timeout=300)
        peak = tm._hwm(m.proc.pid)
    assert sum(lines) == 14000
    assert peak <= b, f"peak RSS {peak / 2**20:.1f} MiB over the bound {b / 2**20:.1f} MiB"


def _index_json(cat, path, opts):
    return json.loads(cat(path, ".youmufs/index.json", opts).stdout)


def _values_file(cache):
    files = [f for f in os.listdir(cache) if f.endswith(".yfsidx.others")]
    assert len(files) == 1, os.listdir(cache)
    return os.path.join(cache, files[0])


def test_columns_remount_reuses_values_file(cc, cat, tmp_path):
    """The values beside the primary are kept beside the persistent index: a re-mount of
    unchanged files reads no column of them (source_bytes_read 0, no page pass) and serves the
    same bytes. Under cache=none a temporary file serves the mount and is gone after it."""
    path = _path(cc, VARIANTS[0])
    cache = str(tmp_path / "cache")
    opts = {"column": "id:text:messages", "rowid": True, "cache": cache}
    first = _index_json(cat, path, opts)
    assert first["other_columns"]["reused"] is False, first["other_columns"]
    assert first["other_columns"]["source_bytes_read"] > 0
    assert first["other_columns"]["file"] == _values_file(cache)
    again = _index_json(cat, path, opts)
    others = again["other_columns"]
    assert others["reused"] is True and others["source_bytes_read"] == 0, others
    assert again["persistent_index"]["files_reused"] == 2 and again["bytes_scanned"] == 0, again
    data = cat(path, "epoch-0.jsonl", opts).stdout
    assert not check_records(data, expected_rows(path, ["id", "text", "messages"]))
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    fresh = cat(path, "epoch-0.jsonl", {**opts, "cache": "none"}, env={"TMPDIR": str(tmp)})
    assert fresh.stdout == data
    none = _index_json(cat, path, {**opts, "cache": "none"})
    assert none["other_columns"]["file"].startswith("a temporary file"), none["other_columns"]
    assert os.listdir(tmp) == [], "the temporary values file outlived the mount"


def test_columns_concurrent_first_mounts_share_values_file(cc, cat, tmp_path):
    """Mounts started together on an empty cache directory each build the values file under a
    temporary name and rename it: all serve pyarrow's bytes, one whole file is left (no
    temporary one), and the next mount reuses it."""
    import concurrent.futures
    path = _path(cc, VARIANTS[0])
    cache = str(tmp_path / "cache")
    opts = {"column": "id:text:score", "rowid": True, "cache": cache}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: cat(path, "epoch-0.jsonl", opts).stdout, range(4)))
    assert all(o == outs[0] for o in outs)
    assert not check_records(outs[0], expected_rows(path, ["id", "text", "score"]))
    assert [f for f in os.listdir(cache) if ".others" in f] == \
        [os.path.basename(_values_file(cache))], os.listdir(cache)
    assert _index_json(cat, path, opts)["other_columns"]["reused"] is True


def _damage(path, how):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        if how == "truncated":
            f.truncate(size - 5)
        elif how == "header":
            f.seek(20)
            f.write(b"\xff")
        elif how == "value":  # a byte of the last column's values, near the end
            f.seek(size - 100)
            b = f.read(1)
            f.seek(size - 100)
            f.write(bytes([b[0] ^ 0x20]))
        elif how == "foreign":
            f.seek(0)
            f.write(b"not a values file" * 4)


@pytest.mark.parametrize("how", ["truncated", "header", "value", "foreign"])
def test_columns_damaged_values_file_rebuilt(how, cc, cat, tmp_path):
    """A torn, corrupt or foreign values file in the cache directory is never trusted: the
    mount says why, builds it again from the sources and serves pyarrow's bytes."""
    path = _path(cc, VARIANTS[0])
    cache = str(tmp_path / "cache")
    opts = {"column": "id:text", "rowid": True, "cache": cache}
    good = cat(path, "epoch-0.jsonl", opts).stdout
    _damage(_values_file(cache), how)
    idx = _index_json(cat, path, opts)
    others = idx["other_columns"]
    assert others["reused"] is False and others["source_bytes_read"] > 0, others
    assert others["note"], others
    data = cat(path, "epoch-0.jsonl", opts).stdout
    assert data == good
    assert not check_records(data, expected_rows(path, ["id", "text"]))
    assert _index_json(cat, path, opts)["other_columns"]["reused"] is True


def test_columns_values_file_damaged_while_mounted_eio(cc, mount, tmp_path):
    """A values file cut short under a live mount (its own inode) fails the reads that need it
    with EIO and a log line naming the file, never other bytes."""
    path = _path(cc, VARIANTS[0])
    cache = str(tmp_path / "cache")
    with mount(path, {"column": "id:text", "cache": cache, "readahead": 0}) as m:
        values = _values_file(cache)
        with open(values, "r+b") as f:
            f.truncate(4096)
        with pytest.raises(OSError) as e:
            m.read("epoch-0.jsonl")
        assert e.value.errno == errno.EIO, e.value
        assert values in m.stderr(), m.stderr()[-2000:]


def test_columns_persistent_index(cc, cat, tmp_path):
    """The persistent index keeps the primary's pages of a several-column mount under a key
    naming every column: a second mount reuses every file and serves the same bytes; another
    order or set of columns does not take those sizes."""
    path = _path(cc, VARIANTS[0])
    cache = str(tmp_path / "cache")
    for names in ["id:text", "text:id", "id:text:score", "id:messages", "st:m"]:
        opts = {"column": names, "rowid": True}
        fresh = cat(path, "epoch-0.jsonl", {**opts, "cache": "none"}).stdout
        assert not check_records(fresh, expected_rows(path, names.split(":")))
        for _ in range(2):
            assert cat(path, "epoch-0.jsonl", {**opts, "cache": cache}).stdout == fresh, names
        idx = json.loads(cat(path, ".youmufs/index.json", {**opts, "cache": cache}).stdout)
        assert idx["persistent_index"]["files_reused"] == 2, idx["persistent_index"]


@pytest.mark.parametrize("name", ["messages.list.element.role", "m.key_value.value", "st.b"])
def test_field_of_several_leaves_by_inner_name(name, cc, cat):
    """A name inside a list or map serves the list or map (CONTRACT-TYPES.md), here one of
    several leaves; a dotted path into a struct serves that struct, of several leaves too."""
    path = _path(cc, VARIANTS[0])
    p = cat(path, "epoch-0.jsonl", {"column": name, "shuffle": "none", "rowid": True})
    key = name.split(".")[0] if name != "st.b" else "st.b"
    want = expected_rows(path, [key])
    diff = td.first_difference(p.stdout, b"".join(want[r] for r in sorted(want)), width=60)
    assert not diff, f"column={name}: {diff}"


def test_long_field_of_several_leaves_within_mem(tmp_path, cat):
    """column=messages: the longest leaf (content) is paged like one column; only the other
    leaves' entries (role) are held, so 21 MB of conversations are served under mem=2M, exactly,
    and index.json names content as the paged column."""
    n = 20000
    msgs = [[{"role": "user", "content": f"q{i} " * 60}, {"role": "assistant",
                                                        "content": f"a{i} " * 140}]
            for i in range(n)]
    pq.write_table(pa.table({"messages": pa.array(msgs)}), str(tmp_path / "c.parquet"))
    p = cat(str(tmp_path), "epoch-0.jsonl", {"column": "messages", "mem": "2M", "rowid": True})
    assert len(p.stdout) > 10 * (2 << 20)
    problem = check_records(p.stdout, expected_rows(str(tmp_path), ["messages"]))
    assert not problem, problem
    idx = json.loads(cat(str(tmp_path), ".youmufs/index.json",
                         {"column": "messages", "mem": "2M"}).stdout)
    assert idx["column"] == "messages.list.element.content", idx["column"]
    assert idx["index_memory_bytes"] < (2 << 20), idx["index_memory_bytes"]
