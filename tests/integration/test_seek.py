"""Invariant 3, seekability: st_size is exact, and a read at any offset returns the same bytes as a
sequential read (Python seek/read, os.pread, and dd with byte offsets)."""

import os
import random
import subprocess

import pytest

from datasets import BASIC, BASIC_NONL, check_rowid_jsonl

NAMES = ["epoch-0.jsonl", "epoch-1.jsonl", "epoch-0.part-1-of-3.jsonl",
         "epoch-4.part-7-of-8.jsonl"]


def _random_spans(size, rng, max_len):
    spans, pos = [], 0
    while pos < size:
        n = rng.randint(1, max_len)
        spans.append((pos, min(n, size - pos)))
        pos += n
    return spans


@pytest.mark.parametrize("name", NAMES)
def test_pread_random_order_reassembles(name, ds, mount):
    with mount(ds.path(BASIC), "rowid,buffer=300") as m:
        seq = m.read(name)
        size = m.size(name)
        assert size == len(seq), f"{name}: st_size {size} != bytes read sequentially {len(seq)}"
        rng = random.Random(name)
        spans = _random_spans(size, rng, 70000)
        rng.shuffle(spans)
        got = {}
        with open(m.p(name), "rb", buffering=0) as f:
            for off, n in spans:
                got[off] = os.pread(f.fileno(), n, off)
                assert len(got[off]) == n, f"{name}: short read at {off}: {len(got[off])} of {n}"
        again = b"".join(got[o] for o in sorted(got))
        assert again == seq, f"{name}: random-order reads differ from the sequential read"
        # arbitrary reads, including across and past EOF
        with open(m.p(name), "rb", buffering=0) as f:
            for _ in range(200):
                off = rng.randrange(size + 100)
                n = rng.choice([1, 2, 3, 4, 5, 100, 4095, 4096, 4097, 65536, 200000])
                b = os.pread(f.fileno(), n, off)
                assert b == seq[off:off + n], f"{name}: pread({n}, {off}) differs"
    if name.startswith("epoch-0.jsonl"):
        problem = check_rowid_jsonl(seq, ds.oracle(BASIC), "text")
        assert not problem, problem


def test_python_seek_read(ds, mount):
    with mount(ds.path(BASIC), "format=len32,epochs=2") as m:
        name = "epoch-1.len32"
        seq = m.read(name)
        rng = random.Random(3)
        with open(m.p(name), "rb") as f:          # buffered: exercises Python's own seeking
            for _ in range(300):
                whence = rng.choice([0, 1, 2])
                if whence == 0:
                    off = rng.randrange(len(seq))
                    f.seek(off, 0)
                elif whence == 1:
                    delta = rng.randrange(-min(f.tell(), 5000), 5000)
                    off = f.tell() + delta
                    f.seek(delta, 1)
                else:
                    back = rng.randrange(len(seq) + 1)
                    off = len(seq) - back
                    f.seek(-back, 2)
                assert f.tell() == off
                n = rng.randint(0, 30000)
                assert f.read(n) == seq[off:off + n], f"read({n}) after seek to {off} differs"


def _dd(path, skip, count, bs):
    p = subprocess.run(["dd", f"if={path}", "of=/dev/stdout", f"bs={bs}", f"skip={skip}",
                        f"count={count}", "iflag=skip_bytes,count_bytes", "status=none"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 0, f"dd failed: {p.stderr.decode(errors='replace')}"
    return p.stdout


def test_dd_byte_offsets(ds, mount):
    with mount(ds.path(BASIC_NONL), "format=text,seed=4") as m:
        for name in ("epoch-0.txt", "epoch-2.part-0-of-3.txt"):
            seq = m.read(name)
            size = m.size(name)
            assert size == len(seq)
            rng = random.Random(name)
            # reassemble from dd pieces of random sizes and block sizes
            pieces, pos = [], 0
            while pos < size:
                n = rng.randint(1, 50000)
                pieces.append(_dd(m.p(name), pos, n, rng.choice([1, 512, 4096, 65536, 1 << 20])
                                  if n < 20000 else rng.choice([4096, 65536, 1 << 20])))
                pos += n
            assert b"".join(pieces) == seq, f"{name}: dd pieces differ from the sequential read"
            for off, n in [(0, 1), (size - 1, 1), (size - 10, 100), (size, 10), (size + 5000, 10),
                           (size // 2, 4096 * 3 + 7)]:
                off = max(0, off)
                assert _dd(m.p(name), off, n, 4096) == seq[off:off + n], f"{name}: dd {off}+{n}"


FORMATS = [("jsonl", "jsonl", BASIC, "rowid"), ("len32", "len32", BASIC, ""),
           ("text", "txt", BASIC_NONL, "")]


@pytest.mark.parametrize("fmt,ext,spec,extra", FORMATS, ids=[f[0] for f in FORMATS])
def test_st_size_exact(fmt, ext, spec, extra, ds, mount, cat):
    """st_size equals the bytes read, for epoch files (listed and not) and part files."""
    opts = ",".join(filter(None, [f"format={fmt}", "epochs=2", "buffer=250", extra]))
    names = [f"epoch-0.{ext}", f"epoch-1.{ext}", f"epoch-6.{ext}"]
    names += [f"epoch-1.part-{i}-of-3.{ext}" for i in range(3)]
    names += [f"epoch-0.part-{i}-of-8.{ext}" for i in (0, 5, 7)]
    with mount(ds.path(spec), opts) as m:
        for n in names:
            st = os.stat(m.p(n))
            data = m.read(n)
            assert st.st_size == len(data), f"{n}: st_size {st.st_size} != {len(data)} bytes read"
            with open(m.p(n), "rb") as f:
                assert os.fstat(f.fileno()).st_size == len(data), f"{n}: fstat size differs"
            if n in (f"epoch-0.{ext}", f"epoch-0.part-5-of-8.{ext}"):
                assert len(cat(ds.path(spec), n, opts).stdout) == st.st_size, f"{n}: cat size"


def test_fresh_mount_tail_first(ds, mount):
    """The first read of a fresh mount is at the very end of the file; then a backwards scan."""
    path = ds.path(BASIC)
    with mount(path, "rowid,epochs=2") as a:
        seq = a.read("epoch-1.jsonl")
    with mount(path, "rowid,epochs=2") as b:
        with open(b.p("epoch-1.jsonl"), "rb", buffering=0) as f:
            fd = f.fileno()
            assert os.pread(fd, 100, len(seq) - 100) == seq[-100:]
            parts, end = [], len(seq)
            while end > 0:
                start = max(0, end - 12345)
                parts.append(os.pread(fd, end - start, start))
                end = start
    assert b"".join(reversed(parts)) == seq
