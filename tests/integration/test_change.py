"""Change detection that fires only on change (issue 10, invariant 7). One test per case, each
on a mounted dataset while an epoch is being read:

- what changes no byte of a source -- chmod 600, chown, touch -a, a hard link made and removed
  -- never fails a read: every read returns exactly the bytes `youmufs cat` gave before;
- a source renamed over or deleted while mounted: the daemon's open descriptor still reads the
  old inode, so reads return the old bytes (never the new file's);
- a same-size rewrite in place with the mtime put back (only the ctime shows it; the footer is
  unchanged, so each page's checksum is what must catch it): reads that need the changed pages
  fail with EIO and the daemon logs a line naming the file, never a wrong byte. Checked on a
  jsonl mount (pages decoded at mount, checksums taken then), on a len32 mount of a dataset
  with a page index (pages sized from metadata, checksums learned at their first read), and
  across a remount from the persistent index (cache=).

The helpers (dataset, edit, scan) are those of test_reliability.py.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import test_reliability as rel

OPTS = rel.OPTS_CHANGE          # epochs=2,buffer=100,mem=4M: segments are rebuilt from storage
AFTER = ["epoch-1.jsonl", "epoch-2.jsonl", "epoch-0.part-1-of-3.jsonl"]


def _refs(cat, d, names, opts):
    """What every epoch file holds before any change: `youmufs cat`, no mount involved."""
    return {n: cat(d, n, opts).stdout for n in names}


def _read_half(m, name, ref):
    """Read and check the first half of `name` (the epoch being read when the change comes)."""
    half = len(ref) // 2
    with open(m.p(name), "rb", buffering=0) as f:
        off = 0
        while off < half:
            got = os.pread(f.fileno(), rel.STEP, off)
            assert got == ref[off:off + len(got)], f"{name} @ {off}: wrong bytes before any change"
            off += len(got)


def _read_through(m, first, names, refs, mutate):
    """Read half of `first`, apply the change, then read `first` and every other name whole.
    Returns (bytes_ok, eio_count, bytes read from storage after the change)."""
    _read_half(m, first, refs[first])
    before = rel._stats(m)["bytes_read"]
    mutate()
    ok = eio = 0
    for n in [first] + names:
        o, e = rel._scan(m, n, refs[n])
        ok += o
        eio += e
    return ok, eio, rel._stats(m)["bytes_read"] - before


def _footer(path):
    data = open(path, "rb").read()
    return data[rel._footer_start(data):]


def _rewrite_pages_keep_mtime(path):
    """rel._rewrite_keep_mtime (same size, same inode, mtime put back), checked to leave the
    footer byte for byte as it was: only page bytes change."""
    footer = _footer(path)
    rel._rewrite_keep_mtime(path)
    assert _footer(path) == footer, "the edit changed the footer: it must change pages only"


# ---------------------------------------------------------------------------------------------
# changes of no byte: every read exact

def _chown_other(c):
    st = os.stat(c)
    os.chown(c, st.st_uid + 4242, st.st_gid + 4242)


def _touch_atime(c):
    st = os.stat(c)
    subprocess.run(["touch", "-a", "-d", "2001-02-03 04:05:06", c], check=True)
    st2 = os.stat(c)
    assert st2.st_mtime_ns == st.st_mtime_ns and st2.st_atime_ns != st.st_atime_ns


def _hard_link(c):
    os.link(c, c + ".link")
    os.unlink(c + ".link")


def _chmod(c):
    os.chmod(c, 0o600)


NO_BYTE_CHANGED = {
    "chmod_600": _chmod,
    "chown_other_uid": _chown_other,
    "touch_a": _touch_atime,
    "hard_link_made_and_removed": _hard_link,
    "renamed_over": rel._replace,       # a new file renamed onto the source path
    "deleted": rel._delete,
}


@pytest.mark.parametrize("kind", list(NO_BYTE_CHANGED))
def test_no_byte_changed_reads_stay_exact(kind, tmp_path, mount, cat):
    """The source's ctime moves (and for rename-over and delete, the path no longer names the
    indexed inode), but the bytes the daemon's descriptor reads are the indexed ones: no read
    may fail, every byte must equal what `youmufs cat` gave before the change."""
    if kind == "chown_other_uid" and os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")
    d = rel._change_dataset(str(tmp_path / "ds"))
    c = os.path.join(d, "c.parquet")
    names = ["epoch-0.jsonl"] + AFTER
    refs = _refs(cat, d, names, OPTS)
    ctime = os.stat(c).st_ctime_ns
    with mount(d, OPTS) as m:
        ok, eio, read_after = _read_through(m, "epoch-0.jsonl", AFTER, refs,
                                            lambda: NO_BYTE_CHANGED[kind](c))
        log = m.stderr()
        stats = rel._stats(m)
    if os.path.exists(c):
        assert os.stat(c).st_ctime_ns != ctime or kind == "renamed_over", "the ctime did not move"
    assert read_after > 0, "nothing was read from storage after the change: the test proves nothing"
    assert eio == 0, f"{kind}: {eio} reads failed, yet no byte changed:\n{log}"
    assert ok == sum(len(refs[n]) for n in names)
    assert stats.get("read_errors", 0) == 0
    assert "NEWVALUE" not in log


# ---------------------------------------------------------------------------------------------
# same-size rewrites with the mtime put back: EIO and a log line, never the new bytes

def _assert_caught(m, kind, ok, eio, log):
    assert eio > 0, (f"{kind}: c.parquet's pages were rewritten (same size, mtime and footer), "
                     f"yet every read succeeded: the page checksums did not catch it")
    assert ok > 0, f"{kind}: reads that do not need c.parquet must still work"
    assert rel._stats(m).get("read_errors", 0) > 0
    lines = [ln for ln in log.splitlines() if "c.parquet" in ln and "changed since mount" in ln]
    assert lines, f"{kind}: reads failed with EIO but no log line names c.parquet:\n{log}"


def test_rewrite_keep_mtime_jsonl(tmp_path, mount, cat):
    """Pages decoded at mount: their checksums are known before any read."""
    d = rel._change_dataset(str(tmp_path / "ds"))
    c = os.path.join(d, "c.parquet")
    names = ["epoch-0.jsonl"] + AFTER
    refs = _refs(cat, d, names, OPTS)
    with mount(d, OPTS) as m:
        ok, eio, _ = _read_through(m, "epoch-0.jsonl", AFTER, refs,
                                   lambda: _rewrite_pages_keep_mtime(c))
        log = m.stderr()
        _assert_caught(m, "jsonl", ok, eio, log)
        assert m.proc.poll() is None


ROWS_PI = 3000


def _page_index_dataset(root):
    """Three files with a page index and size statistics (pages sized from metadata under
    len32, none read at mount), uncompressed PLAIN pages of column "text" as in
    rel._change_dataset, so rel._edit_values changes values in place."""
    os.makedirs(root)
    words = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega".split()
    for f, name in enumerate("abc"):
        vals = [f"{name}{i:05d} " + " ".join(words[(i * 7 + k * f + k) % len(words)]
                                             for k in range(3 + i % 20))
                for i in range(ROWS_PI)]
        pq.write_table(pa.table({"text": pa.array(vals)}), os.path.join(root, f"{name}.parquet"),
                       compression="none", use_dictionary=False, data_page_size=8192,
                       write_batch_size=16, row_group_size=1000, write_page_index=True)
    return root


def test_rewrite_keep_mtime_len32_sized_from_metadata(tmp_path, mount, cat):
    """Pages sized from the page index are never read at mount: their checksums are learned at
    the first read (epoch-0 in full), and a rewrite after that is caught by them."""
    d = _page_index_dataset(str(tmp_path / "ds"))
    c = os.path.join(d, "c.parquet")
    opts = "format=len32,epochs=2,buffer=100,mem=4M,cache=none"   # no page read at mount
    names = ["epoch-0.len32", "epoch-1.len32", "epoch-2.len32", "epoch-0.part-1-of-3.len32"]
    refs = _refs(cat, d, names, opts)
    with mount(d, opts) as m:
        idx = json.loads(m.read(".youmufs/index.json"))
        assert idx["metadata_sized_chunks"] == idx["row_groups"] and idx["bytes_scanned"] < 20000, (
            f"pages were read at mount, so this does not test learned checksums: {idx}")
        assert idx["pages"] >= 3 * idx["row_groups"], idx
        assert m.read("epoch-0.len32") == refs["epoch-0.len32"]      # the first full read
        before = rel._stats(m)["bytes_read"]
        _rewrite_pages_keep_mtime(c)
        ok = eio = 0
        for n in names[1:]:
            o, e = rel._scan(m, n, refs[n])
            ok += o
            eio += e
        assert rel._stats(m)["bytes_read"] > before
        _assert_caught(m, "len32", ok, eio, m.stderr())


def test_rewrite_keep_mtime_between_mounts_with_persistent_index(tmp_path, mount, cat):
    """The persistent index keeps each page's checksum and the ctime it was taken at. Rewritten
    while unmounted (same size, mtime and footer: the cache entry still matches and is used),
    the file has another ctime at the next mount, so its pages are compared when read."""
    d = rel._change_dataset(str(tmp_path / "ds"))
    c = os.path.join(d, "c.parquet")
    opts = OPTS + f",cache={tmp_path / 'cache'}"
    names = ["epoch-0.jsonl"] + AFTER
    refs = _refs(cat, d, names, OPTS + ",cache=none")
    with mount(d, opts) as m:
        for n in names:
            assert m.read(n) == refs[n]
    _rewrite_pages_keep_mtime(c)
    with mount(d, opts) as m:
        idx = json.loads(m.read(".youmufs/index.json"))
        assert idx["persistent_index"]["files_reused"] == 3, idx["persistent_index"]
        ok = eio = 0
        for n in names:
            o, e = rel._scan(m, n, refs[n])
            ok += o
            eio += e
        _assert_caught(m, "cache", ok, eio, m.stderr())
