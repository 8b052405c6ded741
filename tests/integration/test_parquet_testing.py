"""Every file of the parquet-testing corpus (apache/parquet-testing `data/`), every leaf column.

The corpus lives in shared/ beside the repository (CI: ../shared/parquet-testing/data relative to
the repo root; or set YOUMUFS_PARQUET_TESTING). Without it these tests are skipped, with the
reason printed.

For each leaf column, decided from the schema alone (the data of a refused column is never read
by the oracle: large_string_map.brotli.parquet decompresses to more than 2 GB). column=LEAF
serves a field (typed_data.served_field): the leaf, or the list or map it is inside.
  serve     the field, at any depth of structs, lists and maps:
            `youmufs cat -o column=PATH,shuffle=none,rowid` must be byte-exactly the contract's
            records of pyarrow's values in natural order (binary columns: JSON-equal, see
            typed_data.fmt_latin1); where a *_expect.csv is present the values must also equal
            its cells; numeric columns and lists of numbers also format=raw. Maps and fields of
            several leaf columns (structs of several fields, lists of them) too (issue 13).
  either    FLOAT16, which CONTRACT-TYPES.md does not define: a clear refusal, or a valid epoch
            with one record per non-null row
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


def _bomb(path, key):
    """Whether a column chunk of the field `key` claims more than 1024 x its compressed bytes
    plus 16 MiB (large_string_map.brotli.parquet: 2 GB from a few KB), which
    CONTRACT-TYPES.md's limit on hostile files refuses."""
    md = pq.read_metadata(path)
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for j in range(rg.num_columns):
            c = rg.column(j)
            if (c.path_in_schema == key or c.path_in_schema.startswith(key + ".")) and \
                    c.total_uncompressed_size > 1024 * c.total_compressed_size + (16 << 20):
                return True
    return False


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
    if _bomb(path, key):
        return "either", "a chunk over 1024 x its compressed size (CONTRACT-TYPES.md's limit)"
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
