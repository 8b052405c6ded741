"""The examples in examples/ run against a real mount and pass their own checks.

Each example is run as a subprocess, the way a user runs it, against a mount of
examples/sample (or, for the token stream, a small tokenized dataset written by the example
itself). A test passes only when the example exits 0 AND printed every expected "OK ..."
line, so an example that silently does nothing (or skips its checks) fails. Record counts are
compared with pyarrow's, independently of the examples.

The examples need torch (CPU), datasets and numpy (scripts/install-deps.sh installs them);
without them these tests are skipped, or fail under YOUMUFS_REQUIRE=1.
"""

import importlib.machinery
import json
import os
import re
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from conftest import REPO, REQUIRE

EXAMPLES = os.path.join(REPO, "examples")
SAMPLE = os.path.join(EXAMPLES, "sample")
TIMEOUT = 180          # seconds per example run (the slowest, pytorch, takes ~20 s here)


def need(*modules):
    # Look past tests/integration/ on sys.path: its datasets.py (conftest's test-data helper)
    # would otherwise stand in for Hugging Face's `datasets`.
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    missing = [m for m in modules if importlib.machinery.PathFinder.find_spec(m, path) is None]
    if missing:
        msg = f"examples need {', '.join(missing)} (scripts/install-deps.sh installs them)"
        if REQUIRE:
            pytest.fail(msg + " (YOUMUFS_REQUIRE=1)", pytrace=False)
        pytest.skip(msg)


def sample_records():
    """Non-null `text` values of examples/sample, by pyarrow: the number of records."""
    col = pq.read_table(SAMPLE, columns=["text"]).column("text")
    return len(col) - col.null_count


def run(args, tmp_path, timeout=TIMEOUT):
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HOME=str(tmp_path / "hf-home"),
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OMP_NUM_THREADS="1")
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout, env=env, cwd=str(tmp_path))
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        pytest.fail(f"`{' '.join(args)}` did not finish within {timeout} s; stdout:\n{out[-3000:]}")
    p.out = p.stdout.decode("utf-8", "replace")
    p.err = p.stderr.decode("utf-8", "replace")
    return p


def expect_ok(p, *patterns, rc=0):
    """Exit status rc and one output line matching each regex pattern (anchored at the start)."""
    what = f"`{' '.join(p.args)}`"
    assert p.returncode == rc, (f"{what} exited {p.returncode}, expected {rc}\n--- stdout\n"
                                f"{p.out[-3000:]}\n--- stderr\n{p.err[-3000:]}")
    lines = p.out.splitlines()
    for pat in patterns:
        assert any(re.match(pat, line) for line in lines), \
            f"{what}: no output line matches {pat!r}\n--- stdout\n{p.out[-3000:]}\n" \
            f"--- stderr\n{p.err[-2000:]}"


def py(name, *args):
    return [sys.executable, os.path.join(EXAMPLES, name), *map(str, args)]


def test_example_shell_tour(mount, tmp_path):
    n = sample_records()
    with mount(SAMPLE, "column=text,buffer=500") as m:
        p = run(["bash", os.path.join(EXAMPLES, "shell.sh"), m.path], tmp_path)
    expect_ok(p, r"OK dd at an offset", rf"OK {n} records; the 3 parts together are exactly",
              r"OK st_size = bytes read", r"OK epoch 1 differs in order",
              rf"OK index.json reports {n} records", r"OK writes fail", r"OK shell tour$")
    assert "$ head -n 3" in p.out and "$ wc -l" in p.out and '"records"' in p.out


def test_example_pytorch_iterable(mount, tmp_path):
    need("torch")
    n = sample_records()
    with mount(SAMPLE, "column=text,rowid,buffer=500") as m:
        p = run(py("pytorch_iterable.py", m.path, "--epoch", 1), tmp_path)
    expect_ok(p, rf"OK epoch 1, 1 process x 2 workers: {n} records = the epoch, no duplicates",
              rf"OK epoch 1, 2 ranks x 2 workers \(gloo\): {n} records = the epoch, no dup",
              r"OK DDP: 2 ranks ran \d+ steps each", r"OK pytorch_iterable$")
    per_rank = [int(x) for x in re.findall(r"^rank \d: (\d+) records", p.out, re.M)]
    assert len(per_rank) == 2 and sum(per_rank) == n and min(per_rank) > 0, p.out


def test_example_mixture_dataloader(mount, tmp_path):
    """Two sources, the sample (0.7) and a small code-like dataset under its own column name
    (0.3), 2000 records an epoch: the code source repeats, the sample is a slice."""
    need("torch")
    import pyarrow as pa
    code = tmp_path / "code"
    code.mkdir()
    pq.write_table(pa.table({"content": [f"def f{i}(): return {i}" for i in range(300)]}),
                   str(code / "part-0.parquet"))
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"sources": [{"path": SAMPLE, "weight": 0.7},
                                           {"path": str(code), "weight": 0.3,
                                            "column": "content"}],
                               "records": 2000}))
    with mount(str(mix), "column=text,rowid,even=pad") as m:
        p = run(py("mixture_dataloader.py", m.path, "--weights", "0.7,0.3", "--records", 2000),
                tmp_path)
    expect_ok(p, r"OK 2000 records, per source \[1400, 600\] as weights 0.7,0.3 say",
              r"OK parts of 1000 records each",
              r"OK every 200-record window within 10 points of the weights",
              r"OK mixture_dataloader$")


def test_example_elastic_resume(mount, tmp_path):
    need("torch")
    n = sample_records()
    with mount(SAMPLE, "column=text,rowid,buffer=500") as m:
        p = run(py("elastic_resume.py", m.path), tmp_path)
    expect_ok(p, r"OK stopped: 4 ranks trained 5 steps of 32 \(160 records each\)",
              r"OK resumed on 2 ranks: rank 0 \d+ records, rank 1 \d+ records",
              rf"OK 4 ranks then 2 ranks: {n} records = epoch 0, none lost or repeated",
              r"OK elastic_resume$")
    after = [int(x) for x in re.findall(r"rank \d (\d+) records", p.out)]
    assert sum(after) == n - 4 * 160 and min(after) > 0, p.out


def test_example_hf_datasets_stream(mount, tmp_path):
    need("datasets")
    with mount(SAMPLE, "column=text,buffer=500") as m:
        part_lines = sum(1 for _ in open(m.p("epoch-0.part-1-of-2.jsonl"), "rb"))
        p = run(py("hf_datasets_stream.py", m.path), tmp_path)
    expect_ok(p, r"OK streaming: first 50 records of epoch-0.jsonl match the file",
              rf"OK non-streaming: epoch-0.part-1-of-2.jsonl loaded as {part_lines} rows",
              r"OK hf_datasets_stream$")
    assert part_lines > 0


def test_example_nanogpt_memmap(mount, tmp_path):
    need("torch", "numpy")
    src = tmp_path / "tokens"
    p = run(py("nanogpt_memmap.py", "make", src, "--docs", 2000), tmp_path)
    expect_ok(p, r"wrote 2000 documents")
    col = pq.read_table(str(src), columns=["input_ids"]).column("input_ids")
    valid = [len(ids) for ids in col.to_pylist() if ids is not None]
    tokens = sum(n + 1 for n in valid)
    with mount(str(src), "column=input_ids,format=raw,dtype=u16,sep=50256") as m:
        assert m.size("epoch-0.bin") == 2 * tokens
        p = run(py("nanogpt_memmap.py", m.p("epoch-0.bin"), "--source", src, "--eos", 50256),
                tmp_path)
    expect_ok(p, rf"OK token count {tokens} = sum\(len\(ids\)\+1\) over {len(valid)} documents",
              rf"OK same multiset of tokens as the source; {len(valid)} EOS",
              r"OK get_batch: x, y of shape \(8, 64\)", r"OK one training step",
              r"OK nanogpt_memmap$")


def test_example_resume_in_one_run(mount, tmp_path):
    with mount(SAMPLE, "column=text,buffer=500") as m:
        size = m.size("epoch-0.jsonl")
        p = run(py("resume.py", m.path), tmp_path)
        expect_ok(p, r"crashing after \d+ records at byte \d+", r"resuming epoch-0.jsonl at byte",
                  rf"OK resumed: {sample_records()} records, {size} bytes", r"OK resume$")
        p = run(py("resume.py", m.path, "--file", "epoch-2.part-1-of-3.jsonl", "--every", 50),
                tmp_path)
        expect_ok(p, r"resuming epoch-2.part-1-of-3.jsonl at byte", r"OK resumed: \d+ records",
                  r"OK resume$")


def test_example_resume_across_remount(mount, tmp_path):
    work = tmp_path / "ckpt"
    opts = "column=text,buffer=500,seed=5"
    with mount(SAMPLE, opts) as m:
        p = run(py("resume.py", m.path, "--phase", "crash", "--workdir", work,
                   "--stop-after", 1234), tmp_path)
        expect_ok(p, r"crashing after 1234 records at byte \d+", rc=3)
    # A mount with other options (another seed) must be refused: its offsets mean other records.
    with mount(SAMPLE, "column=text,buffer=500,seed=6") as m:
        p = run(py("resume.py", m.path, "--phase", "resume", "--workdir", work), tmp_path)
        assert p.returncode != 0 and "not the one the checkpoint was taken on" in p.err, p.err
    with mount(SAMPLE, opts) as m:
        p = run(py("resume.py", m.path, "--phase", "resume", "--workdir", work), tmp_path)
        expect_ok(p, r"resuming epoch-0.jsonl at byte \d+ \(record 1200;",
                  rf"OK resumed: {sample_records()} records", r"OK resume$")


def test_example_chat_sft(mount, tmp_path):
    """Issue 13: chat `messages` (list<struct<role, content>>) beside an id, through the
    Hugging Face json loader and a PyTorch IterableDataset over the parts."""
    need("torch", "datasets")
    src = tmp_path / "chat"
    p = run(py("chat_sft.py", "make", src, "--rows", 2000), tmp_path)
    expect_ok(p, r"wrote 2000 conversations")
    t = pq.read_table(str(src))
    records = sum(1 for r in t.to_pylist() if r["id"] is not None or r["messages"] is not None)
    with mount(str(src), "column=id:messages") as m:
        assert sum(1 for _ in open(m.p("epoch-0.jsonl"), "rb")) == records
        p = run(py("chat_sft.py", m.path, "--source", src), tmp_path)
    expect_ok(p, rf"OK datasets json loader: {records} conversations = the source's",
              rf"OK IterableDataset, 2 workers over the parts: {records} conversations once",
              r"OK \d+ training steps on assistant tokens", r"OK chat_sft$")
