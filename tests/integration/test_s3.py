"""s3:// datasets (issue 12) against a real S3 server on 127.0.0.1: the Versity gateway
(tests/integration/s3server.py), never a mock.

Acceptance 1: exactness over the codec matrix (rowid jsonl against pyarrow, and the same bytes as
the same files on local disk: determinism), seek and parts through a mount. Acceptance 4: every
fault has a test here: the server killed and restarted mid-epoch, an object replaced, wrong
credentials, a missing prefix and bucket, a server answering 503 for a while (a proxy in front of
it) and for good; credentials appear in no output. Acceptance 3's timing is a benchmark
(bench/s3_bench.py); here, that a re-mount of unchanged objects fetches nothing but the listing
and the first footer.
"""

import dataclasses
import json
import os
import random
import re
import subprocess
import threading
import time

import pytest

import datasets as yds
from conftest import BIN, _env, _skip_or_fail, mounted, sanitizer_report
from datasets import (ALL_FEATURES, BASIC, Spec, check_rowid_jsonl, expected_records,
                      multiset_diff, split_records)
from s3server import ACCESS_KEY, SECRET_KEY, FaultProxy, S3Server, versitygw_binary

MATRIX = yds.matrix_specs()
BUCKET = "yfs"
# Large enough that an epoch at mem=4M is read over many requests while the test acts.
BIG = Spec(compression="zstd", files=6, rows_per_file=6000, row_group_size=2000, page_size=4096,
           newlines=True)


@pytest.fixture(scope="session")
def s3():
    binary = versitygw_binary()
    if not binary:
        _skip_or_fail("versitygw not found (scripts/install-deps.sh --tests installs it)")
    server = S3Server(binary).start()
    server.make_bucket(BUCKET)
    server.uploaded = {}
    yield server
    server.stop()


def upload(s3, ds, spec):
    """The spec's dataset under s3://yfs/<spec name>, uploaded once per session."""
    if spec not in s3.uploaded:
        s3.uploaded[spec] = s3.upload_dir(ds.path(spec), BUCKET, spec.name)
    return s3.uploaded[spec]


@pytest.fixture
def proxy(s3):
    p = FaultProxy(s3.port)
    yield p
    p.close()


# ---------------------------------------------------------------------------------------------
# acceptance 1: exactness, determinism, seek, parts

@pytest.mark.parametrize("spec", MATRIX, ids=[s.name for s in MATRIX])
def test_matrix_exact_and_same_bytes_as_local_disk(spec, ds, s3, cat):
    url = upload(s3, ds, spec)
    data = cat(url, "epoch-0.jsonl", "rowid", env=s3.env()).stdout
    problem = check_rowid_jsonl(data, ds.oracle(spec), spec.column)
    assert not problem, f"{spec.name} over s3://: {problem}"
    assert data == cat(ds.path(spec), "epoch-0.jsonl", "rowid").stdout, \
        "the epoch over s3:// differs from the same files on disk"
    packed = cat(url, "epoch-1.len32", "format=len32", env=s3.env()).stdout
    diff = multiset_diff(split_records(packed, "len32"),
                         expected_records(ds.oracle(spec), "len32", spec.column))
    assert not diff, f"{spec.name} format=len32 over s3://: {diff}"
    assert packed == cat(ds.path(spec), "epoch-1.len32", "format=len32").stdout


@pytest.mark.parametrize("spec", [BASIC, ALL_FEATURES], ids=["basic", "all-features"])
def test_mount_seek_and_parts(spec, ds, s3, cat):
    url = upload(s3, ds, spec)
    reference = cat(ds.path(spec), "epoch-0.jsonl", "rowid").stdout
    with mounted(url, "rowid,mem=8M", env=s3.env()) as m:
        assert m.size("epoch-0.jsonl") == len(reference)
        assert m.read("epoch-0.jsonl", chunk=65536) == reference
        # seek: random preads reassemble the sequential bytes
        rng = random.Random(7)
        cuts = sorted({0, len(reference), *(rng.randrange(len(reference)) for _ in range(40))})
        pieces = list(zip(cuts, cuts[1:]))
        rng.shuffle(pieces)
        got = {}
        fd = os.open(m.p("epoch-0.jsonl"), os.O_RDONLY)
        try:
            for a, b in pieces:
                got[a] = os.pread(fd, b - a, a)
        finally:
            os.close(fd)
        assert b"".join(got[a] for a, _ in sorted(got.items())) == reference
        # parts: 4 disjoint parts hold the epoch's records exactly
        parts = [m.read(f"epoch-0.part-{i}-of-4.jsonl") for i in range(4)]
    recs = [r for p in parts for r in split_records(p, "jsonl")]
    assert sorted(recs) == sorted(split_records(reference, "jsonl"))


def test_several_columns_same_bytes_as_local_disk(s3, cat, tmp_path):
    """column=id:text:messages over s3:// (issue 13): the columns beside the paged text are
    read from the server (their chunks read ahead many at once) into the values file; the
    epoch is the bytes of the same files on disk, and every record is pyarrow's row."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    d = tmp_path / "several"
    d.mkdir()
    rng = random.Random(41)
    want = {}
    for f in range(12):
        rows = range(f * 300, (f + 1) * 300)
        text = [f"doc {i} " * rng.randint(1, 40) for i in rows]
        msgs = [None if i % 17 == 0 else
                [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": None}]
                for i in rows]
        pq.write_table(pa.table({"id": list(rows), "text": text, "messages": msgs}),
                       d / f"part-{f:02d}.parquet", row_group_size=100, data_page_size=2048)
        for i, t, m in zip(rows, text, msgs):
            want[i] = {"id": i, "text": t, "messages": m}
    url = s3.upload_dir(str(d), BUCKET, "several")
    opts = "column=id:text:messages,rowid,cache=none"
    data = cat(url, "epoch-0.jsonl", opts, env=s3.env()).stdout
    assert data == cat(str(d), "epoch-0.jsonl", opts).stdout, \
        "the epoch over s3:// differs from the same files on disk"
    got = [json.loads(r) for r in data.splitlines()]
    assert sorted(r["_row"] for r in got) == sorted(want)
    for r in got:
        assert {k: r[k] for k in ("id", "text", "messages")} == want[r["_row"]], r


def test_mixture_with_an_s3_source(ds, s3, tmp_path):
    """A mixture's source may be an s3:// URL (issue 14): a source on the server (weight 2) and
    the same files on local disk (weight 1), 3 x the rows: the server's source is read in two
    passes. Every record is pyarrow's row of its source; the epoch and a part are the bytes of
    the same mixture with both sources on local disk."""
    url = upload(s3, ds, BASIC)
    local = ds.path(BASIC)
    value = dict(ds.oracle(BASIC))
    rows = len(value)
    files = {}
    for name, first in (("s3", url), ("local", local)):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps({"sources": [{"path": first, "weight": 2},
                                             {"path": local, "weight": 1}],
                                 "records": 3 * rows}))
        files[name] = str(p)
    got = {}
    for name in ("s3", "local"):
        with mounted(files[name], "rowid", env=s3.env() if name == "s3" else None) as m:
            got[name] = [m.read("epoch-0.jsonl"), m.read("epoch-0.part-1-of-3.jsonl")]
            assert m.size("epoch-0.jsonl") == len(got[name][0])
    recs = [json.loads(r) for r in split_records(got["s3"][0], "jsonl")]
    assert len(recs) == 3 * rows
    by_source = {0: [], 1: []}
    for r in recs:
        assert set(r) == {"text", "_row", "_source"}, f"keys {sorted(r)}"
        assert r["text"] == value[r["_row"]], f"record {r} is not pyarrow's"
        by_source[r["_source"]].append(r["_row"])
    assert sorted(by_source[0]) == sorted(list(value) * 2), "the s3:// source: not two passes"
    assert sorted(by_source[1]) == sorted(value), "the local source: not every row once"
    assert got["s3"] == got["local"], "the mixture over s3:// differs from the same on disk"


def test_listing_sorted_hidden_and_other_objects_ignored(ds, s3, cat, tmp_path):
    """Keys sorted by byte order as paths are; hidden components and non-.parquet keys are not
    data, as in a directory."""
    src = ds.path(BASIC)
    names = sorted(os.listdir(src))
    prefix = "listing"
    for i, n in enumerate(reversed(names)):   # uploaded out of order, nested
        with open(os.path.join(src, n), "rb") as f:
            s3.put(BUCKET, f"{prefix}/{'z' if i % 2 else 'a'}/{n}", f.read())
    with open(os.path.join(src, names[0]), "rb") as f:
        junk = f.read()
    for k in (".hidden.parquet", "a/.cache/x.parquet", "notes.txt", "a/x.parquet.tmp"):
        s3.put(BUCKET, f"{prefix}/{k}", junk)
    local = tmp_path / "local"
    for i, n in enumerate(reversed(names)):
        d = local / ("z" if i % 2 else "a")
        d.mkdir(parents=True, exist_ok=True)
        os.link(os.path.join(src, n), d / n)
    url = f"s3://{BUCKET}/{prefix}"
    got = cat(url, "epoch-0.jsonl", "rowid,shuffle=none", env=s3.env()).stdout
    assert got == cat(str(local), "epoch-0.jsonl", "rowid,shuffle=none").stdout


def test_remount_of_unchanged_objects_fetches_only_the_listing(s3, proxy, tmp_path):
    """1,100 objects: the listing takes two pages (continuation token); a second mount with the
    persistent index reads one footer (the first object's: it names the column) and nothing
    else, every other object recognised by its key, size and ETag. Both mounts go through the
    proxy: the persistent index is keyed by the server too."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    prefix = "many"
    expected = []
    bodies = []
    for i in range(10):   # ten distinct files, each uploaded 110 times (writing is the slow part)
        path = tmp_path / f"one-{i}.parquet"
        values = [f"file {i} row {r}" for r in range(3)]
        pq.write_table(pa.table({"text": values}), path)
        bodies.append((path.read_bytes(), values))
    for i in range(1100):
        body, values = bodies[i % 10]
        s3.put(BUCKET, f"{prefix}/part-{i:05d}.parquet", body)
        expected += values
    cache = tmp_path / "cache"
    opts = f"cache={cache},format=text,endpoint={proxy.endpoint}"
    env = s3.env()
    url = f"s3://{BUCKET}/{prefix}"
    with mounted(url, opts, env=env) as m:
        first = json.loads(m.read(".youmufs/index.json"))
        data = m.read("epoch-0.txt")
    assert sorted(data.decode().split("\n")[:-1]) == sorted(expected)
    proxy.reset_counts()
    with mounted(url, opts, env=env) as m:
        again = json.loads(m.read(".youmufs/index.json"))
        counts = dict(proxy.counts)
        assert m.size("epoch-0.txt") == len(data)
    assert counts["LIST"] == 2 and counts["GET"] == 1, counts
    assert first["files"] == again["files"] == 1100
    assert first["persistent_index"]["files_reused"] == 0
    assert again["persistent_index"]["files_reused"] == 1100


# ---------------------------------------------------------------------------------------------
# acceptance 4: faults

def test_server_killed_and_restarted_mid_epoch(ds, s3, cat):
    url = upload(s3, ds, BIG)
    reference = cat(ds.path(BIG), "epoch-0.len32", "format=len32").stdout
    with mounted(url, "format=len32,mem=4M,readahead=1", env=s3.env()) as m:
        out = []
        with open(m.p("epoch-0.len32"), "rb", buffering=0) as f:
            out.append(f.read(256 << 10))
            s3.kill()
            restarter = threading.Timer(1.0, s3.start)
            restarter.start()
            try:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    out.append(b)
            finally:
                restarter.join()
        data = b"".join(out)
        assert len(data) == len(reference)
        assert data == reference, "wrong bytes after the server came back"


def test_object_replaced_fails_with_eio_never_other_bytes(ds, s3, cat, tmp_path):
    spec = Spec(compression="snappy", files=3, rows_per_file=3000, page_size=2048, seed=5)
    url = s3.upload_dir(ds.path(spec), BUCKET, "replaced")
    victim = sorted(os.listdir(ds.path(spec)))[1]
    other = ds.path(Spec(compression="snappy", files=3, rows_per_file=3000, page_size=2048,
                         seed=6))
    with mounted(url, "format=len32,mem=2M,cache=none", env=s3.env()) as m:
        with open(os.path.join(other, victim), "rb") as f:
            s3.put(BUCKET, f"replaced/{victim}", f.read())
        with pytest.raises(OSError) as e:
            m.read("epoch-0.len32")
        assert e.value.errno == 5, e.value
        time.sleep(0.2)
        log = m.stderr()
    assert f"s3://{BUCKET}/replaced/{victim}" in log and "changed since mount" in log, log[-2000:]


def test_wrong_credentials_stop_the_mount_naming_bucket_and_answer(ds, s3, mount_fails):
    url = upload(s3, ds, BASIC)
    wrong = "not-the-secret-" + "x" * 20
    p = mount_fails(url, None, env=s3.env(AWS_SECRET_ACCESS_KEY=wrong))
    err = p.stderr.decode()
    assert p.returncode != 0
    assert f"s3://{BUCKET}/" in err and "403" in err and "SignatureDoesNotMatch" in err, err
    assert wrong not in err and ACCESS_KEY not in err


def test_missing_prefix_and_bucket_stop_the_mount(s3, mount_fails):
    p = mount_fails(f"s3://{BUCKET}/no/such/prefix", None, env=s3.env())
    assert p.returncode != 0 and b"s3://yfs/no/such/prefix: no *.parquet files found" in p.stderr
    p = mount_fails("s3://no-such-bucket/x", None, env=s3.env())
    err = p.stderr.decode()
    assert p.returncode != 0 and "s3://no-such-bucket/x/" in err and "NoSuchBucket" in err, err


def test_503_for_a_while_is_retried(ds, s3, proxy, cat):
    url = upload(s3, ds, BIG)
    reference = cat(ds.path(BIG), "epoch-0.len32", "format=len32").stdout
    env = s3.env(AWS_ENDPOINT_URL=proxy.endpoint)
    proxy.fail_for(0.5)   # the listing itself waits it out
    with mounted(url, "format=len32,mem=4M,readahead=1,cache=none", env=env) as m:
        with open(m.p("epoch-0.len32"), "rb", buffering=0) as f:
            head = f.read(256 << 10)
            proxy.fail_for(1.5)
            rest = f.read()
    assert proxy.counts["503"] > 2, proxy.counts
    assert head + rest == reference


def test_503_for_good_fails_the_read_with_eio(ds, s3, proxy):
    url = upload(s3, ds, BIG)
    env = s3.env(AWS_ENDPOINT_URL=proxy.endpoint)
    with mounted(url, "format=len32,mem=4M,readahead=1,cache=none", env=env) as m:
        proxy.fail_for(3600)
        t0 = time.monotonic()
        with pytest.raises(OSError) as e:
            m.read("epoch-0.len32")
        assert e.value.errno == 5
        assert time.monotonic() - t0 < 60
        proxy.fail_for(0)
        time.sleep(0.2)
        log = m.stderr()
    assert "503 SlowDown" in log, log[-2000:]


def test_credentials_appear_nowhere(ds, s3, tmp_path, cat, mount_fails):
    """Not in stderr, index.json, stats.json, the persistent index, nor an error's message."""
    url = upload(s3, ds, BASIC)
    cache = tmp_path / "cache"
    outputs = []
    with mounted(url, f"cache={cache}", env=s3.env()) as m:
        outputs.append(m.read("epoch-0.jsonl"))
        outputs.append(m.read(".youmufs/index.json"))
        outputs.append(m.read(".youmufs/stats.json"))
        stderr = m.stderr().encode()
    outputs.append(stderr)
    for root, _, files in os.walk(cache):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                outputs.append(fh.read())
    assert len(outputs) > 4
    token = "yfs-session-token-" + "t" * 24
    p = mount_fails(url, None, env=s3.env(AWS_SESSION_TOKEN=token))   # the gateway refuses it
    outputs.append(p.stdout + p.stderr)
    p = mount_fails(url, None, env=s3.env(AWS_SECRET_ACCESS_KEY=SECRET_KEY + "x"))
    outputs.append(p.stdout + p.stderr)
    for blob in outputs:
        for secret in (ACCESS_KEY, SECRET_KEY, token):
            assert secret.encode() not in blob, f"{secret[:6]}... found in an output"


# ---------------------------------------------------------------------------------------------
# where credentials come from, what is sent, and that no output holds them

NO_KEYS = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
           "AWS_PROFILE": "", "AWS_SHARED_CREDENTIALS_FILE": ""}   # empty counts as unset
SIX = dataclasses.replace(BASIC, files=6, rows_per_file=400)


def _mount_outputs(m):
    """What a live mount shows a user: .youmufs/index.json, stats.json and its log so far."""
    return [m.read(".youmufs/index.json"), m.read(".youmufs/stats.json"), m.stderr().encode()]


def _cache_files(cache):
    out = []
    for root, _, files in os.walk(cache):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                out.append(fh.read())
    return out


def _assert_nowhere(outputs, secrets):
    assert outputs
    for blob in outputs:
        for secret in secrets:
            assert secret.encode() not in blob, f"{secret[:6]}... found in an output"


def _home_with_credentials(tmp_path, text):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(text)
    return str(home)


def test_no_sign_reads_a_public_bucket_unsigned(ds, s3, proxy, cat, mount_fails, tmp_path):
    """-o no_sign against a bucket the gateway serves to anyone (its bucket policy with
    Principal "*"): listed and read with no credential anywhere (none in the environment, no
    credentials file), no request signed or carrying a token (the recording proxy in front of
    the gateway); the bytes are those of the same files on disk. Without no_sign the mount says
    there are no credentials; a bucket without the policy refuses the unsigned mount."""
    url = s3.upload_dir(ds.path(BASIC), "yfs-public", "open")
    s3.public_read("yfs-public")
    home = tmp_path / "home"
    home.mkdir()
    env = dict(NO_KEYS, HOME=str(home), AWS_ENDPOINT_URL=proxy.endpoint)
    cache = tmp_path / "cache"
    reference = cat(ds.path(BASIC), "epoch-0.jsonl", "rowid").stdout
    with mounted(url, f"no_sign,rowid,cache={cache}", env=env) as m:
        assert m.read("epoch-0.jsonl") == reference
    assert proxy.counts["LIST"] >= 1 and proxy.counts["GET"] >= 1, proxy.counts
    for method, path, headers in proxy.requests:
        assert "authorization" not in headers and "x-amz-security-token" not in headers, \
            (method, path, headers)
    p = mount_fails(url, None, env=env)
    assert p.returncode != 0 and b"no credentials" in p.stderr and b"no_sign" in p.stderr, \
        p.stderr
    p = mount_fails(upload(s3, ds, BASIC), "no_sign", env=env)
    err = p.stderr.decode()
    assert p.returncode != 0 and f"s3://{BUCKET}/" in err and "403" in err, err


def test_session_token_is_sent_signed_and_written_nowhere(ds, s3, proxy, mount_fails,
                                                           tmp_path):
    """AWS_SESSION_TOKEN, and a profile's aws_session_token, travel as X-Amz-Security-Token on
    every request and among its signed headers (seen by the recording proxy in front of the
    gateway). The gateway has no STS and refuses every token (400 InvalidToken), so the mount
    stops with that answer; neither its message nor the persistent index holds the token."""
    url = upload(s3, ds, BASIC)
    token = "yfs-session-" + "Tk" * 40
    cache = tmp_path / "cache"
    outputs = []
    home = _home_with_credentials(
        tmp_path, f"[default]\naws_access_key_id = {ACCESS_KEY}\n"
                  f"aws_secret_access_key = {SECRET_KEY}\naws_session_token = {token}-file\n")
    for sent_token, env in (
            (token, s3.env(AWS_ENDPOINT_URL=proxy.endpoint, AWS_SESSION_TOKEN=token)),
            (token + "-file", dict(s3.env(AWS_ENDPOINT_URL=proxy.endpoint), **NO_KEYS,
                                   HOME=home))):
        proxy.reset_counts()
        p = mount_fails(url, f"cache={cache}", env=env)
        assert p.returncode != 0 and b"InvalidToken" in p.stderr, p.stderr
        assert proxy.requests
        for _, _, headers in proxy.requests:
            assert headers.get("x-amz-security-token") == sent_token, headers
            signed = re.search(r"SignedHeaders=([^,\s]+)", headers["authorization"]).group(1)
            assert "x-amz-security-token" in signed.split(";"), headers["authorization"]
        outputs.append(p.stdout + p.stderr)
    _assert_nowhere(outputs + _cache_files(cache), [ACCESS_KEY, SECRET_KEY, token])


def test_profile_of_the_credentials_file_in_a_real_mount(ds, s3, cat, mount_fails, tmp_path):
    """No key in the environment: AWS_PROFILE's section of ~/.aws/credentials (HOME a
    temporary directory) signs a real mount, not the default profile's other keys; without
    AWS_PROFILE the default's are used, and refused by the server. No output holds a key."""
    url = upload(s3, ds, BASIC)
    wrong = "not-the-secret-" + "w" * 24
    home = _home_with_credentials(
        tmp_path, f"[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = "
                  f"{wrong}\n\n# the test server's keys\n[yfs-test]\naws_access_key_id = "
                  f"{ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    env = dict(s3.env(), **NO_KEYS, HOME=home)
    cache = tmp_path / "cache"
    reference = cat(ds.path(BASIC), "epoch-0.jsonl", "rowid").stdout
    with mounted(url, f"rowid,cache={cache}", env=dict(env, AWS_PROFILE="yfs-test")) as m:
        assert m.read("epoch-0.jsonl") == reference
        outputs = _mount_outputs(m)
    p = mount_fails(url, "cache=none", env=env)
    assert p.returncode != 0 and b"403" in p.stderr and b"SignatureDoesNotMatch" in p.stderr, \
        p.stderr
    outputs.append(p.stdout + p.stderr)
    _assert_nowhere(outputs + _cache_files(cache), [ACCESS_KEY, SECRET_KEY, wrong])


def test_index_shards_then_a_mount_reads_no_page(ds, s3, proxy, cat, tmp_path):
    """`youmufs index --shard I/2 s3://...` in two processes at once builds one persistent
    index (through the proxy, as the mount: the server is part of its key); the mount then
    fetches the listing and the first object's footer and nothing else, scans no page, and
    serves what a mount without the index serves. No output holds a key."""
    url = upload(s3, ds, SIX)
    cache = tmp_path / "cache"
    opts = f"rowid,cache={cache}"
    env = s3.env(AWS_ENDPOINT_URL=proxy.endpoint)
    procs = [subprocess.Popen([BIN, "index", "-o", opts, "--shard", f"{k}/2", url],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(env))
             for k in range(2)]
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert not sanitizer_report(err), err
        assert b"3 files (0 from the persistent index, 3 read now)" in out, out
        outputs.append(out + err)
    proxy.reset_counts()
    with mounted(url, opts, env=env) as m:
        ix = json.loads(m.read(".youmufs/index.json"))
        counts = dict(proxy.counts)
        data = m.read("epoch-0.jsonl")
        outputs += _mount_outputs(m)
    assert ix["persistent_index"]["files_reused"] == 6, ix["persistent_index"]
    assert ix["bytes_scanned"] == 0, "the mount read pages although every object was indexed"
    assert counts["LIST"] == 1 and counts["GET"] == 1, counts
    assert data == cat(url, "epoch-0.jsonl", "rowid,cache=none", env=s3.env()).stdout
    _assert_nowhere(outputs + _cache_files(cache), [ACCESS_KEY, SECRET_KEY])


def test_reads_fetch_each_dictionary_once(ds, s3, proxy, tmp_path):
    """With the persistent index, a mount's GETs are the first footer and then exactly the
    reads stats.json counts: chunk loads, pages read alone, pages of one chunk read together,
    dictionaries (one GET each: the page header that sizes a dictionary comes with the page's
    read)."""
    url = upload(s3, ds, BASIC)
    env = s3.env(AWS_ENDPOINT_URL=proxy.endpoint)
    opts = f"cache={tmp_path / 'cache'}"
    with mounted(url, opts, env=env):
        pass
    proxy.reset_counts()
    with mounted(url, opts, env=env) as m:
        m.read("epoch-0.jsonl")
        stats = json.loads(m.read(".youmufs/stats.json"))
        counts = dict(proxy.counts)
    assert stats["dictionaries_loaded"] > 0, stats
    reads = (stats["chunk_loads"] + stats["pages_read_alone"] + stats["reads_together"]
             + stats["dictionaries_loaded"])
    assert counts["GET"] == 1 + reads, (counts, stats)


def test_persistent_index_is_keyed_by_the_server(s3, tmp_path):
    """Two servers each hold s3://yfs/same/x.parquet of the same size and ETag and other bytes
    (the second's ETag set to the first's in its store, as a server with another ETag scheme
    could give): a mount of the second with the persistent index of the first must not take
    its entries (whose framed sizes are wrong there: the second's values need JSON escapes)
    and serves the second's records."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    values = {"a": [("a" * (i % 50 + 1)) for i in range(2000)],
              "q": [('"' * (i % 50 + 1)) for i in range(2000)]}
    bodies = {}
    for k, v in values.items():
        path = tmp_path / f"{k}.parquet"
        pq.write_table(pa.table({"text": v}), path, compression="none", use_dictionary=False,
                       write_statistics=False)
        bodies[k] = path.read_bytes()
    assert len(bodies["a"]) == len(bodies["q"]) and bodies["a"] != bodies["q"]
    other = S3Server(versitygw_binary()).start()
    try:
        etag = s3.put(BUCKET, "same/x.parquet", bodies["a"])
        other.make_bucket(BUCKET)
        other.put(BUCKET, "same/x.parquet", bodies["q"])
        os.setxattr(other.object_path(BUCKET, "same/x.parquet"), "user.etag", etag.encode())
        url = f"s3://{BUCKET}/same"
        opts = f"cache={tmp_path / 'cache'}"
        for k, server in (("a", s3), ("q", other)):
            with mounted(url, opts, env=server.env()) as m:
                ix = json.loads(m.read(".youmufs/index.json"))
                data = m.read("epoch-0.jsonl")
                assert m.size("epoch-0.jsonl") == len(data)
            assert ix["persistent_index"]["files_reused"] == 0, (k, ix["persistent_index"])
            got = sorted(json.loads(line)["text"] for line in data.decode().splitlines())
            assert got == sorted(values[k]), k
    finally:
        other.stop()


def test_first_mount_keeps_at_most_128_connections_to_the_server(s3, proxy, tmp_path):
    """A cold mount of 600 objects behind 50 ms per request: the footer and page passes add
    threads while reads wait (up to 512 reads in flight for files), but hold at most 128
    connections to an S3 server at once, and the mount serves every object's records."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"text": [f"row {r}" for r in range(5)]}), path)
    body = path.read_bytes()
    for i in range(600):
        s3.put(BUCKET, f"wide/part-{i:04d}.parquet", body)
    proxy.delay = 0.05
    with mounted(f"s3://{BUCKET}/wide", f"format=text,cache=none,endpoint={proxy.endpoint}",
                 env=s3.env()) as m:
        most = proxy.most_open
        data = m.read("epoch-0.txt")
    assert data.count(b"\n") == 600 * 5
    # 128 for the passes, the listing thread's own, and a little slack for a connection the
    # server closed while its replacement opened (512 threads made 329 here before the cap)
    assert 8 < most <= 128 + 4, most
