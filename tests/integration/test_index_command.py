"""`youmufs index [--shard I/N] DATASET`: the persistent index built without mounting, by one
process or by N shards at once that merge their files into one cache file; a mount or `cat`
with the same options afterwards finds every file cached (reads no page to index) and serves
the bytes it serves with no cache at all."""
import dataclasses
import json
import re
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import BIN, _env, run_cat, sanitizer_report
from datasets import BASIC

SIX = dataclasses.replace(BASIC, files=6, rows_per_file=400)


def _index(dataset, options, *extra, check=True):
    p = subprocess.run([BIN, "index", "-o", options, *extra, dataset], capture_output=True,
                       text=True, timeout=300, env=_env())
    assert not sanitizer_report(p.stderr.encode()), p.stderr
    if check:
        assert p.returncode == 0, p.stderr
    return p


def _index_json(dataset, options):
    return json.loads(run_cat(dataset, ".youmufs/index.json", options).stdout)


def _index_three_shards_at_once(path, opts):
    """`index --shard k/3` for k = 0, 1, 2 run at once on SIX's six files: each indexes its
    two, cleanly."""
    procs = [subprocess.Popen([BIN, "index", "-o", opts, "--shard", f"{k}/3", path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=_env()) for k in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert not sanitizer_report(err.encode()), err
        assert "2 files (0 from the persistent index, 2 read now)" in out, out


@pytest.mark.parametrize("framing", ["format=jsonl", "format=jsonl,rowid", "format=len32"])
def test_shards_in_parallel_build_one_index_a_mount_finds_whole(framing, ds, tmp_path):
    path = ds.path(SIX)
    opts = f"{framing},cache={tmp_path}/cache"
    _index_three_shards_at_once(path, opts)
    ix = _index_json(path, opts)
    assert ix["persistent_index"]["files_reused"] == 6, ix["persistent_index"]
    assert ix["bytes_scanned"] == 0, "the mount read pages although every file was indexed"
    ext = "len32" if "len32" in framing else "jsonl"
    for name in (f"epoch-0.{ext}", f"epoch-1.part-1-of-3.{ext}"):
        assert run_cat(path, name, opts).stdout == \
            run_cat(path, name, f"{framing},cache=none").stdout, name
    # a shard indexed again finds its files cached and leaves the index as it is
    again = _index(path, opts, "--shard", "1/3")
    assert "2 files (2 from the persistent index, 0 read now)" in again.stdout, again.stdout


@pytest.mark.parametrize("framing", ["format=jsonl", "format=jsonl,rowid"])
def test_shards_of_several_columns_build_the_index_a_mount_finds(framing, ds, tmp_path):
    """column=id:text:score: each shard decodes the other columns of every file (their values
    are part of the records' sizes, found by global row) and pages only its own files' text;
    the merged index is the one a mount with the same options finds, and serves its bytes."""
    path = ds.path(SIX)
    cols = "column=id:text:score"
    opts = f"{cols},{framing},cache={tmp_path}/cache"
    _index_three_shards_at_once(path, opts)
    ix = _index_json(path, opts)
    assert ix["persistent_index"]["files_reused"] == 6, ix["persistent_index"]
    # what the mount read is the other columns alone: as after one unsharded `index`
    whole = f"{cols},{framing},cache={tmp_path}/whole"
    _index(path, whole)
    assert ix["bytes_scanned"] == _index_json(path, whole)["bytes_scanned"]
    assert ix["bytes_scanned"] < _index_json(path, f"{cols},{framing},cache=none")["bytes_scanned"]
    for name in ("epoch-0.jsonl", "epoch-1.part-1-of-3.jsonl"):
        assert run_cat(path, name, opts).stdout == \
            run_cat(path, name, f"{cols},{framing},cache=none").stdout, name
    again = _index(path, opts, "--shard", "2/3")
    assert "2 files (2 from the persistent index, 0 read now)" in again.stdout, again.stdout


def test_one_process_indexes_everything_and_more_shards_than_files(ds, tmp_path):
    path = ds.path(SIX)
    opts = f"cache={tmp_path}/cache"
    out = _index(path, opts, "--shard", "7/8").stdout  # no file is in shard 7 of 8
    assert "0 files" in out, out
    out = _index(path, opts).stdout
    assert "6 files (0 from the persistent index, 6 read now)" in out, out
    assert _index_json(path, opts)["persistent_index"]["files_reused"] == 6


def test_refusals(ds, tmp_path):
    path = ds.path(SIX)
    for shard in ("3/3", "1/0", "x/2", "1/2/3", "-1/2"):
        p = _index(path, f"cache={tmp_path}", "--shard", shard, check=False)
        assert p.returncode == 2 and "--shard" in p.stderr, (shard, p.stderr)
    p = _index(path, "cache=none", check=False)
    assert p.returncode == 1 and "cache=none" in p.stderr, p.stderr
    p = _index(str(tmp_path / "missing"), f"cache={tmp_path}", check=False)
    assert p.returncode == 1 and "missing" in p.stderr, p.stderr
    p = subprocess.run([BIN, "index", path, "extra"], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr


def _needs_mem_line(stderr):
    """The line of a refusal that names the mem= needed, and that mem=."""
    lines = [ln for ln in stderr.decode().splitlines() if "needs mem=" in ln]
    assert len(lines) == 1, stderr
    return lines[0], re.search(r"needs mem=(\S+) or more", lines[0]).group(1)


def test_a_smaller_mem_than_the_index_had_refuses_a_dictionary_at_mount(tmp_path, mount,
                                                                        mount_fails):
    """`youmufs index` at the default mem= keeps a file whose one dictionary page (200,000
    distinct strings) takes about 8 MB to hold; a mount with that persistent index at mem=1M
    (a page may take a quarter of mem= and its slack, 4.25 MiB) refuses at mount with the
    message a mount that indexes the file afresh at mem=1M gives (the file, the page, the
    mem= it needs), where it used to mount and fail every read with EIO. At the mem= named,
    the mount takes the file from the index and serves it."""
    d = tmp_path / "dict"
    d.mkdir()
    words = [f"word-{i:07d}-{i * 7919 % 100003:06d}" for i in range(200000)]
    pq.write_table(pa.table({"text": words}), d / "dict.parquet",
                   dictionary_pagesize_limit=64 << 20)
    col = pq.ParquetFile(d / "dict.parquet").metadata.row_group(0).column(0)
    assert col.has_dictionary_page, col
    opts = f"cache={tmp_path}/cache"
    _index(str(d), opts)
    fresh, need = _needs_mem_line(mount_fails(d, "cache=none,mem=1M").stderr)
    p = mount_fails(d, f"{opts},mem=1M")
    assert p.returncode != 0
    cached, _ = _needs_mem_line(p.stderr)
    assert cached == fresh and "dict.parquet" in cached and "dictionary page" in cached, \
        (cached, fresh)
    with mount(d, f"{opts},mem={need}") as m:
        with open(m.p(".youmufs/index.json")) as f:
            assert json.load(f)["persistent_index"]["files_reused"] == 1
        got = [json.loads(line)["text"] for line in m.read("epoch-0.jsonl").splitlines()]
    assert sorted(got) == sorted(words)
