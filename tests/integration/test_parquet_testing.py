"""Every file of the parquet-testing corpus (apache/parquet-testing `data/`), every leaf column.

The corpus lives in shared/ beside the repository (CI: ../shared/parquet-testing/data relative to
the repo root; or set YOUMUFS_PARQUET_TESTING). Without it these tests are skipped, with the
reason printed.

For each leaf column, decided from the schema alone. column=LEAF serves a field
(typed_data.served_field): the leaf, or the list or map it is inside.
  serve     the field, at any depth of structs, lists and maps:
            `youmufs cat -o column=PATH,shuffle=none,rowid` must be byte-exactly the contract's
            records of pyarrow's values in natural order (binary columns: JSON-equal, see
            typed_data.fmt_latin1); where a *_expect.csv is present the values must also equal
            its cells; numeric columns and lists of numbers also format=raw. Maps and fields of
            several leaf columns (structs of several fields, lists of them) too (issue 13).
  either    FLOAT16, which CONTRACT-TYPES.md does not define: a clear refusal, or a valid epoch
            with one record per non-null row
  huge      a column chunk declaring more than HUGE_BYTES uncompressed
            (large_string_map.brotli.parquet: two rows, each a map whose one key is a 1 GiB string,
            a 1 GiB dictionary page from 1.6 KB of brotli): at the default mem= a refusal naming
            the file and the mem= it needs (CONTRACT-TYPES.md's limit on memory); at that mem=,
            test_huge_file_reads_exactly_at_the_mem_it_names reads it exactly against pyarrow's
            iter_batches (read_table refuses it), record by record, by hashes.
Files whose page CRCs do not match may also be refused, with a message saying so. Encrypted
files (*.parquet.encrypted of the corpus, and two written here by pyarrow's Parquet Modular
Encryption, encrypted and plaintext footer) must be refused with a message containing "encrypt".
Never a crash or a hang (run_cat fails the test on a signal, a sanitizer report or a timeout).
"""

import base64
import csv
import json
import os
import re
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import typed_data as td
from conftest import PARQUET_TESTING

CORPUS = PARQUET_TESTING if os.path.isdir(PARQUET_TESTING) else None
CORPUS_MISSING = (None if CORPUS else
                  f"parquet-testing corpus not found at {PARQUET_TESTING} (../shared/"
                  "parquet-testing/data beside the repository; or set YOUMUFS_PARQUET_TESTING)")


if CORPUS_MISSING:
    import sys
    sys.stderr.write(f"\n*** test_parquet_testing.py: {CORPUS_MISSING}: SKIPPED ***\n")


def _files(suffix):
    if not CORPUS:
        return []
    return sorted(f for f in os.listdir(CORPUS) if f.endswith(suffix))


def _float16_in(t):
    if pa.types.is_float16(t):
        return True
    if pa.types.is_struct(t):
        return any(_float16_in(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _float16_in(t.key_type) or _float16_in(t.item_type)
    if hasattr(t, "value_type"):
        return _float16_in(t.value_type)
    return False


# A chunk declaring more uncompressed bytes than this is read in the test of its own (below).
HUGE_BYTES = 256 << 20


def _huge(path):
    md = pq.read_metadata(path)
    return any(md.row_group(g).column(j).total_uncompressed_size > HUGE_BYTES
               for g in range(md.num_row_groups) for j in range(md.row_group(g).num_columns))


def classify(path, leaf, rep):
    """serve | refuse | either for column=leaf, with the served field's key and why."""
    try:
        schema = pq.ParquetFile(path).schema_arrow
        leaves = [p for p, _r in td.leaf_columns(path)]
    except Exception as e:  # noqa: BLE001
        return "either", f"pyarrow cannot read the schema: {e}"
    top = leaf.split(".")[0]
    try:
        key, t = td.served_field(schema.field(top).type, leaf)
    except (KeyError, td.Unsupported) as e:
        return "either", f"no arrow field for {leaf}: {e}"
    if _float16_in(t):
        return "either", "FLOAT16 (not in CONTRACT-TYPES.md)"
    if _huge(path):
        return "huge", f"a chunk over {HUGE_BYTES >> 20} MiB uncompressed"
    return "serve", str(t)


def _cases():
    out = []
    for name in _files(".parquet"):
        path = os.path.join(CORPUS, name)
        try:
            leaves = td.leaf_columns(path)
        except Exception:  # noqa: BLE001
            out.append(pytest.param(name, None, 0, id=f"{name}-unreadable"))
            continue
        for leaf, rep in leaves:
            out.append(pytest.param(name, leaf, rep, id=f"{name}-{leaf}"))
    return out or [pytest.param(None, None, 0, id="no-corpus")]


CASES = _cases()


def _need_corpus():
    if CORPUS_MISSING:
        pytest.skip(CORPUS_MISSING)


def _expect_csv(name):
    if not CORPUS:
        return None
    p = os.path.join(CORPUS, name.replace(".parquet", "_expect.csv"))
    if not os.path.isfile(p):
        return None
    with open(p, newline="") as f:
        rows = list(csv.reader(f))
    header = [h.strip() for h in rows[0]]
    return {h: [r[i] for r in rows[1:]] for i, h in enumerate(header)}


def _names_column(err, leaf):
    low = err.lower()
    return leaf.lower() in low or leaf.split(".")[0].lower() in low


def _check_refusal(p, leaf, why):
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode != 0, f"column={leaf} ({why}) should be refused, but cat succeeded"
    assert err.strip(), f"column={leaf} ({why}): refused without a message"
    assert _names_column(err, leaf), (f"column={leaf} ({why}): message does not name the "
                                      f"column: {err.strip()[:300]!r}")


def _natural_jsonl(leaf_obj):
    return b"".join(td.record(leaf_obj.key, t, r) for r, t in leaf_obj.rows)


@pytest.mark.parametrize("name,leaf,rep", CASES)
def test_corpus_column(name, leaf, rep, cat):
    _need_corpus()
    path = os.path.join(CORPUS, name)
    if leaf is None:
        p = cat(path, "epoch-0.jsonl", None, check=False)
        assert p.returncode != 0 and p.stderr.strip(), \
            f"{name}: pyarrow cannot read it, youmufs must refuse it with a message"
        return
    kind, why = classify(path, leaf, rep)
    opts = {"column": leaf, "shuffle": "none", "rowid": True}
    p = cat(path, "epoch-0.jsonl", opts, check=False)
    err = p.stderr.decode("utf-8", "replace")
    what = f"{name} column={leaf}"

    if kind == "refuse":
        _check_refusal(p, leaf, why)
        return
    if kind == "huge":
        assert p.returncode != 0 and NEEDS_MEM.search(err) and name in err, \
            f"{what} ({why}): at the default mem= a refusal naming the file and the mem= it " \
            f"needs, got exit {p.returncode}: {err.strip()[-600:]}"
        return
    if kind == "either":
        if p.returncode != 0:
            assert err.strip(), f"{what} ({why}): refused without a message"
            return
        md = pq.read_metadata(path)     # FileMetaData.num_rows can be wrong (0 in
        n = sum(md.row_group(i).num_rows for i in range(md.num_row_groups))  # repeated_no_anno.)
        for line in p.stdout.splitlines():
            obj = json.loads(line)
            assert "_row" in obj and 0 <= obj["_row"] < n, f"{what}: bad record {line[:200]!r}"
        return

    if "corrupt-checksum" in name and p.returncode != 0:
        assert re.search(r"crc|checksum", err, re.I), \
            f"{what}: refused, but the message does not say CRC/checksum: {err.strip()[:300]!r}"
        return
    assert p.returncode == 0, f"{what} ({why}): exit {p.returncode}: {err.strip()[-600:]}"
    try:
        lo = td.leaf_oracle(path, leaf)
    except td.Unsupported as e:
        pytest.fail(f"test bug: {what} classified servable but {e}")
    want = _natural_jsonl(lo)
    if lo.loose:
        problem = td.check_rowid_records(p.stdout, lo)
        assert not problem, f"{what}: {problem}"
        found_rows = [json.loads(x)["_row"] for x in p.stdout.splitlines()]
        assert found_rows == [r for r, _t in lo.rows], f"{what}: shuffle=none is not in row order"
    else:
        diff = td.first_difference(p.stdout, want, width=60)
        assert not diff, f"{what} ({why}) shuffle=none,rowid: {diff}"

    exp = _expect_csv(name)
    if exp is not None and leaf in exp:
        cells = [c for c in exp[leaf] if c != ""]
        got = [json.loads(x)[lo.key] for x in p.stdout.splitlines()]
        got_s = [str(g) for g in got]
        assert got_s == cells, (f"{what}: values differ from {name.replace('.parquet', '_expect.csv')}"
                                f": first {next((i, a, b) for i, (a, b) in enumerate(zip(got_s, cells)) if a != b) if len(got_s) == len(cells) else (len(got_s), len(cells))}")

    if lo.raw_dtype() is not None:
        p = cat(path, "epoch-0.bin", {"column": leaf, "shuffle": "none", "format": "raw"},
                check=False)
        assert p.returncode == 0, (f"{what} format=raw: exit {p.returncode}: "
                                   f"{p.stderr.decode('utf-8', 'replace').strip()[-600:]}")
        diff = td.first_difference(p.stdout, lo.expected_raw())
        assert not diff, f"{what} format=raw dtype={lo.raw_dtype()}: {diff}"


def test_corpus_default_column_or_clear_error(cat):
    """Without column=: a file with exactly one string column serves it; otherwise the error
    lists candidates. Never a crash, on every file."""
    _need_corpus()
    for name in _files(".parquet"):
        path = os.path.join(CORPUS, name)
        p = cat(path, "epoch-0.jsonl", None, check=False)
        if p.returncode != 0:
            assert p.stderr.strip(), f"{name}: failed without a message"


# ---------------------------------------------------------------------------------------------
# huge values: read at the mem= the refusal names, exactly, within invariant 4's bound

NEEDS_MEM = re.compile(r"needs mem=(\S+) or more")


def _plain_ascii(view):
    """Whether bytes need no JSON escape: printable ASCII but '"' and '\\' (checked in slices,
    so a 1 GiB string costs no 1 GiB temporary)."""
    import numpy as np
    a = np.frombuffer(view, dtype=np.uint8)
    for at in range(0, len(a), 64 << 20):
        part = a[at:at + (64 << 20)]
        if ((part < 0x20) | (part >= 0x7f) | (part == 0x22) | (part == 0x5c)).any():
            return False
    return True


def _pieces(arr, i):
    """The contract's jsonl text of arr[i] (typed_data.render_array's rules) as a list of bytes
    and memoryviews: a long string is a view of pyarrow's buffer, not a copy."""
    import numpy as np
    if not arr.is_valid()[i].as_py():
        return [b"null"]
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        width = np.int64 if pa.types.is_large_string(t) else np.int32
        offs = np.frombuffer(arr.buffers()[1], dtype=width)
        a, e = int(offs[arr.offset + i]), int(offs[arr.offset + i + 1])
        view = memoryview(arr.buffers()[2])[a:e]
        if e - a > (1 << 20) and _plain_ascii(view):
            return [b'"', view, b'"']
        return [td.fmt_string(arr[i].as_py()).encode("utf-8")]
    if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        offs = arr.offsets
        a, e = offs[i].as_py(), offs[i + 1].as_py()
        out = []
        if pa.types.is_map(t):
            obj = pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)
            keys, items = arr.keys, arr.items
            for j in range(a, e):
                out += [b","] if j > a else []
                k, v = _pieces(keys, j), _pieces(items, j)
                out += k + [b":"] + v if obj else [b"["] + k + [b","] + v + [b"]"]
            return [b"{" if obj else b"["] + out + [b"}" if obj else b"]"]
        for j in range(a, e):
            out += ([b","] if j > a else []) + _pieces(arr.values, j)
        return [b"["] + out + [b"]"]
    if pa.types.is_struct(t):
        out = [b"{"]
        for k, child in enumerate(arr.flatten()):
            out += ([b","] if k else []) + \
                [json.dumps(t.field(k).name, ensure_ascii=False).encode("utf-8") + b":"] + \
                _pieces(child, i)
        return out + [b"}"]
    text = td.render_array(arr.slice(i, 1))[0]
    return [b"null" if text is None else text.encode("utf-8")]


def _expected_records(path, field):
    """[(length, sha256)] of the records of column=FIELD,shuffle=none,rowid, from pyarrow's
    iter_batches one row at a time (use_threads=False: 4.3 GB at most for the 1 GiB strings,
    7.4 GB with threads)."""
    import hashlib
    out, row = [], 0
    key = json.dumps(field, ensure_ascii=False).encode("utf-8")
    for batch in pq.ParquetFile(path).iter_batches(batch_size=1, columns=[field],
                                                    use_threads=False):
        col = batch.column(0)
        for i in range(len(col)):
            if col.is_valid()[i].as_py():
                h, n = hashlib.sha256(), 0
                for part in [b"{" + key + b":"] + _pieces(col, i) + \
                        [b',"_row":%d}\n' % row]:
                    h.update(part)
                    n += len(part)
                out.append((n, h.hexdigest()))
            row += 1
        del batch, col
    return out


def _watch_hwm(pid, peak, done):
    """Poll /proc/PID/status's VmHWM (monotonic) into peak[0] every 10 ms until done is set or
    the process is gone: its peak RSS, but for what it may add in its last 10 ms (the peaks
    here come long before). Not rusage: Linux carries the hiwater of the forking process (this
    one, holding pyarrow's buffers) over exec into the child's ru_maxrss."""
    while not done.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]) * 1024)
        except OSError:
            return
        done.wait(0.01)


def _found_records(args):
    """Run `youmufs cat` and take its stdout record by record: [(length, sha256, first bytes)],
    its exit status, stderr and peak RSS, holding a few MiB whatever the records."""
    import hashlib
    import subprocess
    import threading
    import conftest
    out, h, n, head = [], hashlib.sha256(), 0, b""
    peak, done = [0], threading.Event()
    with tempfile.TemporaryFile() as err_file:
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err_file,
                             stdin=subprocess.DEVNULL, env=conftest._env())
        watch = threading.Thread(target=_watch_hwm, args=(p.pid, peak, done), daemon=True)
        watch.start()
        try:
            while True:
                chunk = p.stdout.read(16 << 20)
                if not chunk:
                    break
                at = 0
                while at < len(chunk):
                    nl = chunk.find(b"\n", at)
                    end = len(chunk) if nl < 0 else nl + 1
                    h.update(chunk[at:end])
                    if len(head) < 120:
                        head += chunk[at:min(end, at + 120)]
                    n += end - at
                    at = end
                    if nl >= 0:
                        out.append((n, h.hexdigest(), head[:120]))
                        h, n, head = hashlib.sha256(), 0, b""
            p.wait()
        finally:
            done.set()
            if p.returncode is None:
                p.kill()
                p.wait()
            watch.join()
        if n:
            out.append((n, h.hexdigest(), head[:120]))
        err_file.seek(0)
        err = err_file.read()
    return out, p.returncode, err, peak[0]


def _huge_cases():
    return [pytest.param(n, id=n) for n in _files(".parquet")
            if _huge(os.path.join(CORPUS, n))] or [pytest.param(None, id="none")]


@pytest.mark.parametrize("name", _huge_cases())
def test_huge_file_reads_exactly_at_the_mem_it_names(name, cat, tmp_path):
    """Pages and records that are large only once decompressed (large_string_map.brotli.parquet:
    a 1 GiB dictionary page from 1.6 KB) cost the memory they declare, charged before anything
    is allocated: refused at a mem= that cannot hold them, naming the mem= that can; read at
    that mem= exactly as pyarrow reads them, within invariant 4's bound. Runs under ASan too:
    about 30 s and 3.3 GB there for this file (3.0 GB in release), then pyarrow's 16 s and
    4.3 GB, one after the other."""
    _need_corpus()
    if name is None:
        pytest.skip("no file of the corpus has a chunk over HUGE_BYTES")
    import conftest
    path = os.path.join(CORPUS, name)
    fields = pq.ParquetFile(path).schema_arrow.names
    for field in fields:
        p = cat(path, "epoch-0.jsonl", {"column": field, "shuffle": "none", "rowid": True},
                check=False)
        err = p.stderr.decode("utf-8", "replace")
        need = NEEDS_MEM.search(err)
        assert p.returncode != 0 and need and name in err, \
            f"{name} column={field}: expected a refusal naming the mem= it needs: {err[-600:]}"
        assert field in err, f"the refusal does not name the column: {err[-600:]}"
        mem = need.group(1)
        opts = f"column={field},shuffle=none,rowid,mem={mem},cache=none"
        found, rc, err, rss = _found_records(
            [conftest.BIN, "cat", "-o", opts, path, "epoch-0.jsonl"])
        text = err.decode("utf-8", "replace")
        assert not conftest.sanitizer_report(err), text[-3000:]
        assert rc == 0, f"{name} {opts}: exit {rc}: {text[-600:]}"
        want = _expected_records(path, field)
        assert want, f"{name} column={field}: pyarrow reads no non-null row (test bug)"
        assert len(found) == len(want), f"{name} {opts}: {len(found)} records, pyarrow {len(want)}"
        for k, ((n, h, head), (wn, wh)) in enumerate(zip(found, want)):
            assert (n, h) == (wn, wh), (f"{name} {opts}: record {k} differs: {n} bytes "
                                        f"beginning {head!r}, pyarrow's {wn} bytes")
        ix = json.loads(cat(path, ".youmufs/index.json", opts).stdout)
        index, mem_bytes = ix["index_memory_bytes"], ix["options"]["mem"]
        bound = 1.1 * (index + mem_bytes) + (16 << 20)
        with open(conftest.BIN, "rb") as f:
            asan = b"__asan_init" in f.read()
        print(f"{name} {opts}: peak RSS {rss / (1 << 20):.0f} MiB, bound {bound / (1 << 20):.0f}"
              f" MiB{' (ASan: not checked)' if asan else ''}")
        if not asan:
            assert rss <= bound, f"{name} {opts}: peak RSS {rss} over invariant 4's {bound:.0f}"
    if asan:
        return
    # The mount's page pass decodes such a file's dictionary beside copies of its values:
    # two files of it are indexed one after the other, not at once (6.2 GB before).
    two = tmp_path / "two"
    two.mkdir()
    for k in range(2):
        os.symlink(path, two / f"{k}.parquet")
    opts = f"column={fields[0]},mem={mem},cache=none,threads=4"
    found, rc, err, rss = _found_records([conftest.BIN, "cat", "-o", opts, str(two),
                                          ".youmufs/index.json"])
    assert rc == 0, err.decode("utf-8", "replace")[-600:]
    print(f"two copies, {opts}: index only, peak RSS {rss / (1 << 20):.0f} MiB")
    assert rss <= bound, f"two copies {opts}: peak RSS {rss} over invariant 4's {bound:.0f}"


# ---------------------------------------------------------------------------------------------
# encryption

try:
    import pyarrow.parquet.encryption as _pe
    _KmsBase = _pe.KmsClient
except ImportError:      # pyarrow built without encryption
    _pe = None
    _KmsBase = object


class _InMemoryKms(_KmsBase):
    """Mock KMS for pyarrow's Parquet Modular Encryption: 'wraps' with base64 and the key id."""

    def __init__(self, config):
        if _pe is not None:
            super().__init__()

    def wrap_key(self, key_bytes, master_key_identifier):
        return base64.b64encode(master_key_identifier.encode() + b":" + key_bytes)

    def unwrap_key(self, wrapped_key, master_key_identifier):
        raw = base64.b64decode(wrapped_key)
        return raw.split(b":", 1)[1]


def _write_encrypted(path, plaintext_footer):
    pe = _pe
    if pe is None:
        raise ImportError("pyarrow.parquet.encryption")
    kms_config = pe.KmsConnectionConfig(custom_kms_conf={
        "footer_key": "0123456789012345", "col_key": "1234567890123450"})
    factory = pe.CryptoFactory(lambda cfg: _InMemoryKms(cfg))
    enc_cfg = pe.EncryptionConfiguration(
        footer_key="footer_key", column_keys={"col_key": ["text"]},
        encryption_algorithm="AES_GCM_V1", plaintext_footer=plaintext_footer,
        double_wrapping=False, cache_lifetime=None)
    props = factory.file_encryption_properties(kms_config, enc_cfg)
    t = pa.table({"text": ["secret one", "secret two", None, "three"], "n": [1, 2, 3, 4]})
    with pq.ParquetWriter(path, t.schema, encryption_properties=props) as w:
        w.write_table(t)


def _encrypted_cases(tmp_dir):
    out = [os.path.join(CORPUS, n) for n in _files(".parquet.encrypted")] if CORPUS else []
    try:
        for plain in (False, True):
            p = os.path.join(tmp_dir, f"enc-{'plaintext-footer' if plain else 'encrypted-footer'}"
                                      f".parquet")
            _write_encrypted(p, plain)
            out.append(p)
    except (ImportError, AttributeError, NotImplementedError, pa.ArrowException) as e:
        print(f"pyarrow cannot write encrypted files here ({e}); corpus files only")
    return out


def test_encrypted_files_refused(tmp_path, cat, mount_fails):
    files = _encrypted_cases(str(tmp_path))
    if not files:
        pytest.skip("no encrypted file: none in the corpus and pyarrow has no encryption")
    problems = []
    for f in files:
        for opts in ({"column": "text"}, None):
            p = cat(f, "epoch-0.jsonl", opts, check=False)
            err = p.stderr.decode("utf-8", "replace")
            if p.returncode == 0 or "encrypt" not in err.lower():
                problems.append(f"{os.path.basename(f)} opts={opts}: exit {p.returncode}, "
                                f"stderr {err.strip()[:200]!r}, {len(p.stdout)} bytes out")
    p = mount_fails(files[0], "column=text")
    if p.returncode == 0 or "encrypt" not in p.stderr.decode("utf-8", "replace").lower():
        problems.append(f"mount {os.path.basename(files[0])}: exit {p.returncode}, "
                        f"stderr {p.stderr.decode('utf-8', 'replace').strip()[:200]!r}")
    assert not problems, "encrypted files must be refused with 'encrypt' in the message: " + \
        "; ".join(problems)
