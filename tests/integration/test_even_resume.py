"""Equal parts (-o even=pad|drop) and elastic resume (epoch-K.resume-N-R.part-I-of-M.<ext>),
checked against the epoch file and the pyarrow oracle (rowid).

even=pad: every part of N holds ceil(R/N) records, the extra ones repeating the first records of
the epoch; even=drop: floor(R/N), the rest left out. A resume part holds what is left of the
epoch after each of the N parts gave its first R records; before + after is the epoch."""

import errno
import os
import random
from collections import Counter

import pytest

from datasets import BASIC, BASIC_NONL, check_rowid_jsonl, multiset_diff, split_records


def _records(m, name, fmt="jsonl"):
    data = m.read(name)
    assert m.size(name) == len(data), f"{name}: st_size {m.size(name)} != {len(data)} bytes read"
    return split_records(data, fmt)


@pytest.mark.parametrize("n", [3, 7, 8, 64])
@pytest.mark.parametrize("even", ["pad", "drop"])
def test_even_parts_hold_equal_counts(n, even, ds, mount):
    with mount(ds.path(BASIC), f"rowid,buffer=100,even={even}") as m:
        epoch = _records(m, "epoch-0.jsonl")
        total = len(epoch)
        q = -(-total // n) if even == "pad" else total // n
        parts = [_records(m, f"epoch-0.part-{i}-of-{n}.jsonl") for i in range(n)]
        counts = [len(p) for p in parts]
        assert counts == [q] * n, f"even={even}, n={n}: record counts {counts}, expected {q} each"
        got = Counter(r for p in parts for r in p)
        if even == "pad":
            # every record once, and the first n*q - total records of the epoch once more
            expected = Counter(epoch) + Counter(epoch[:n * q - total])
            diff = multiset_diff(got.elements(), expected.elements())
            assert not diff, f"n={n}: padded parts != epoch + its first records: {diff}"
        else:
            assert max(got.values()) == 1, "drop: a record appears twice"
            assert not (set(got) - set(epoch)), "drop: a record that is not in the epoch"
            assert sum(got.values()) == total - total % n


def test_even_off_keeps_todays_parts(ds, mount):
    """even=off (the default) gives the same part files as no option at all."""
    with mount(ds.path(BASIC), "rowid,buffer=100") as plain, \
            mount(ds.path(BASIC), "rowid,buffer=100,even=off") as off:
        for i in range(3):
            name = f"epoch-1.part-{i}-of-3.jsonl"
            assert plain.read(name) == off.read(name), f"{name} differs under even=off"


@pytest.mark.parametrize("fmt,ext,extra", [("len32", "len32", ""), ("text", "txt", ""),
                                           ("len32", "len32", ",shuffle=row")])
def test_even_parts_seek_and_formats(fmt, ext, extra, ds, mount):
    """Sizes are exact and reads at any offset give the sequential bytes, for parts and
    resumed parts that cut segments."""
    spec = BASIC if fmt != "text" else BASIC_NONL
    opts = f"format={fmt},buffer=70,even=pad{extra}"
    n = 7
    with mount(ds.path(spec), opts) as m:
        epoch = _records(m, f"epoch-0.{ext}", fmt)
        q = -(-len(epoch) // n)
        names = [f"epoch-0.part-{i}-of-{n}.{ext}" for i in range(n)]
        resumed = [f"epoch-0.resume-{n}-{q // 3}.part-{j}-of-2.{ext}" for j in range(2)]
        ref = {name: m.read(name) for name in names + resumed}
        for name, data in ref.items():
            assert m.size(name) == len(data), f"{name}: st_size != bytes read"
            if name in names:
                assert len(split_records(data, fmt)) == q
    rng = random.Random(1)
    with mount(ds.path(spec), opts) as m:        # a fresh mount: no page cached by the kernel
        for name, data in ref.items():
            with open(m.p(name), "rb", buffering=0) as f:
                for _ in range(40):
                    off = rng.randrange(0, len(data))
                    size = rng.choice([1, 7, 100, 4096, 70000])
                    assert os.pread(f.fileno(), size, off) == data[off:off + size], \
                        f"{name}: pread({size}, {off}) differs from the sequential bytes"


@pytest.mark.parametrize("n,m_parts", [(4, 2), (2, 3), (8, 8)])
def test_resume_before_plus_after_is_the_epoch(n, m_parts, ds, mount):
    orc = ds.oracle(BASIC)
    with mount(ds.path(BASIC), "rowid,buffer=100") as m:
        epoch = _records(m, "epoch-2.jsonl")
        parts = [_records(m, f"epoch-2.part-{i}-of-{n}.jsonl") for i in range(n)]
        longest = max(len(p) for p in parts)
        for r in (0, 1, 37, 150, longest // 2, longest, longest + 5):
            before = [rec for p in parts for rec in p[:r]]
            after = [rec for j in range(m_parts)
                     for rec in _records(m, f"epoch-2.resume-{n}-{r}.part-{j}-of-{m_parts}.jsonl")]
            diff = multiset_diff(before + after, epoch)
            assert not diff, f"N={n}, R={r}, M={m_parts}: before + after != epoch: {diff}"
            problem = check_rowid_jsonl(b"".join(before + after), orc, "text")
            assert not problem, f"N={n}, R={r}, M={m_parts}: {problem}"
            if r >= longest:
                assert not after, "parts read to their end leave nothing"


def test_resume_with_even_gives_equal_parts_and_is_deterministic(ds, mount, cat):
    with mount(ds.path(BASIC), "rowid,buffer=100,even=drop") as m:
        parts = [_records(m, f"epoch-0.part-{i}-of-4.jsonl") for i in range(4)]
        left = sum(len(p) for p in parts) - 4 * 100
        names = [f"epoch-0.resume-4-100.part-{j}-of-3.jsonl" for j in range(3)]
        resumed = [_records(m, name) for name in names]
        assert [len(p) for p in resumed] == [left // 3] * 3
        assert not set(r for p in resumed for r in p) & set(r for p in parts for r in p[:100]), \
            "a resumed part repeats a record read before the stop"
        again = cat(ds.path(BASIC), names[1], "rowid,buffer=100,even=drop")
        assert again.stdout == b"".join(resumed[1]), "cat and the mount disagree"


BAD_RESUME = ["epoch-0.resume-0-10.part-0-of-2.jsonl", "epoch-0.resume-4-10.jsonl",
              "epoch-0.resume-4-10.part-2-of-2.jsonl", "epoch-0.resume-4-01.part-0-of-2.jsonl",
              "epoch-0.resume-4.part-0-of-2.jsonl"]


def test_bad_resume_names_enoent(ds, mount, expect_errno):
    with mount(ds.path(BASIC)) as m:
        assert os.path.isfile(m.p("epoch-0.resume-4-10.part-1-of-2.jsonl"))
        for name in BAD_RESUME:
            expect_errno(lambda: os.stat(m.p(name)), errno.ENOENT, f"stat {name}")


def test_sizing_a_cut_part_of_changed_sources_fails_with_eio(tmp_path, mount):
    """A part that cuts a segment is sized by building it: if the sources changed, stat fails
    with EIO and a log line naming the file (unless the segments it needs were built before
    the change), and reads fail with EIO: never a crash, never a size or bytes from changed
    data."""
    import test_reliability as rel
    d = rel._change_dataset(str(tmp_path / "ds"))
    names = [f"epoch-0.part-{i}-of-7.jsonl" for i in range(7)] + \
            [f"epoch-0.resume-3-50.part-{j}-of-2.jsonl" for j in range(2)]
    with mount(d, "buffer=100,mem=4M,even=pad") as m:
        before = m.size("epoch-0.part-0-of-3.jsonl")
        for name in ("a", "b", "c"):
            rel._rewrite(os.path.join(d, f"{name}.parquet"))
        failed = 0
        for name in names:
            try:
                os.stat(m.p(name))
            except OSError as e:
                assert e.errno == errno.EIO, f"stat {name}: {e}"
                failed += 1
                continue
            with pytest.raises(OSError) as e:
                m.read(name)
            assert e.value.errno == errno.EIO, f"read {name}: {e.value}"
        assert failed, "every cut part was sized from segments built before the change"
        assert m.size("epoch-0.part-0-of-3.jsonl") == before, "a size known before changed"
        assert m.proc.poll() is None, "the daemon died"
        log = m.stderr()
        assert "unknown" in log and "changed since mount" in log, log[-2000:]


def test_cut_parts_are_deterministic_across_threads_and_memory(ds, mount):
    """The bytes of a cut part depend on the dataset, the options and the epoch only: not on
    threads=, mem= or what was read before."""
    names = ["epoch-3.part-5-of-8.jsonl", "epoch-3.resume-8-20.part-1-of-3.jsonl"]
    with mount(ds.path(BASIC), "rowid,buffer=100,even=pad") as a:
        first = {n: a.read(n) for n in names}
    with mount(ds.path(BASIC), "rowid,buffer=100,even=pad,threads=1,mem=2M,readahead=0") as b:
        b.read("epoch-3.jsonl")                      # other segments built and dropped first
        for n in reversed(names):
            assert b.read(n) == first[n], f"{n} differs under threads=1,mem=2M"
