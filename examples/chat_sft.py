#!/usr/bin/env python3
"""Chat SFT data: a `messages` column (list<struct<role, content>>) beside an `id`, served as
one JSON object per conversation, read by Hugging Face `datasets` and a PyTorch IterableDataset.

    python3 examples/chat_sft.py make /tmp/chat               # a small chat dataset
    youmufs -o column=id:messages /tmp/chat /tmp/yfs
    python3 examples/chat_sft.py /tmp/yfs --source /tmp/chat
    fusermount3 -u /tmp/yfs

Each line of an epoch file is {"id":7,"messages":[{"role":"user","content":"..."},...]}, the
conversation as pyarrow's to_pylist() gives it (a null role or content is null, an empty
conversation []; a row whose id and messages are both null is no record).

  1. `datasets`' stock "json" loader reads epoch-0.jsonl; every conversation equals the source's
     for its id (--source: read with pyarrow), and every non-null row is there once.
  2. A PyTorch IterableDataset over epoch-0.part-<i>-of-<n>.jsonl (one part per DataLoader
     worker) renders each conversation with a chat template, tokenizes it (bytes), masks the
     prompt so only assistant turns are trained, and runs training steps of a tiny model.

Exits non-zero if a check fails; lines starting with "OK" report passed checks.
"""

import argparse
import glob
import json
import os
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")         # the json builder needs no network
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

ROLES = ["system", "user", "assistant"]


def make(out, rows=2000, files=2, seed=0):
    """Conversations of 0..6 turns, long and short contents, with nulls at every level."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = random.Random(seed)
    words = "the a cat sat on mat why how ok yes no please thanks ünïcode \"quoted\"".split()
    os.makedirs(out, exist_ok=True)
    msg_type = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    per = -(-rows // files)
    for f in range(files):
        ids, convs = [], []
        for r in range(f * per, min(rows, (f + 1) * per)):
            ids.append(None if r % 211 == 0 else r)
            if r % 97 == 0:
                convs.append(None)
                continue
            turns = []
            for t in range(rng.choice([0, 2, 2, 4, 6])):
                role = ROLES[1 + t % 2] if rng.random() > 0.03 else None
                n = rng.choice([1, 5, 40, 300])
                content = " ".join(rng.choice(words) for _ in range(n))
                turns.append({"role": role, "content": content if rng.random() > 0.02 else None})
            convs.append(turns)
        table = pa.table({"id": pa.array(ids, pa.int64()), "messages": pa.array(convs, msg_type)})
        pq.write_table(table, os.path.join(out, f"chat-{f}.parquet"), row_group_size=500,
                       data_page_size=16 << 10)
    print(f"wrote {rows} conversations in {files} files to {out}")


def source_rows(source):
    """{id: messages} and the number of records, from the Parquet files by pyarrow."""
    import pyarrow.parquet as pq
    files = sorted(glob.glob(os.path.join(source, "**", "*.parquet"), recursive=True))
    rows = pq.read_table(files, columns=["id", "messages"]).to_pylist()
    kept = [r for r in rows if r["id"] is not None or r["messages"] is not None]
    return {r["id"]: r["messages"] for r in kept if r["id"] is not None}, len(kept)


def check_hf(mount, source):
    import datasets
    from datasets import load_dataset
    datasets.disable_progress_bars()
    want, records = source_rows(source)
    with tempfile.TemporaryDirectory() as cache:
        ds = load_dataset("json", data_files=os.path.join(mount, "epoch-0.jsonl"),
                          split="train", cache_dir=cache)
        got = ds.to_list()
    if len(got) != records:
        sys.exit(f"FAIL: datasets loaded {len(got)} rows, the source has {records} records")
    ids = [r["id"] for r in got if r["id"] is not None]
    if len(set(ids)) != len(ids) or set(ids) != set(want):
        sys.exit("FAIL: the ids loaded are not the source's, once each")
    for r in got:
        if r["id"] is not None and r["messages"] != want[r["id"]]:
            sys.exit(f"FAIL id {r['id']}: {r['messages']!r:.200} != {want[r['id']]!r:.200}")
    print(f"OK datasets json loader: {len(got)} conversations = the source's, messages equal",
          flush=True)
    return records


def render(messages):
    """A chat template: (text, prompt mask) with only assistant contents trained."""
    text, train = [], []
    for m in messages or []:
        head = f"<|{m['role'] or 'unknown'}|>\n"
        body = (m["content"] or "") + "\n"
        text += [head, body]
        train += [False, m["role"] == "assistant"]
    return text, train


def tokenize(messages, max_len=256):
    import torch
    ids, labels = [], []
    for piece, trained in zip(*render(messages)):
        b = list(piece.encode("utf-8"))
        ids += b
        labels += b if trained else [-100] * len(b)
    ids, labels = ids[:max_len], labels[:max_len]
    return torch.tensor(ids or [0]), torch.tensor(labels or [-100])


def train(mount, records, workers=2):
    import torch
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class ChatParts(IterableDataset):
        """One part file per DataLoader worker: the parts together are the epoch."""

        def __iter__(self):
            info = get_worker_info()
            i, n = (info.id, info.num_workers) if info else (0, 1)
            with open(os.path.join(mount, f"epoch-0.part-{i}-of-{n}.jsonl"), "rb") as f:
                for line in f:
                    rec = json.loads(line)
                    x, y = tokenize(rec["messages"])
                    yield rec["id"], x, y

    def collate(batch):
        pad = torch.nn.utils.rnn.pad_sequence
        return ([b[0] for b in batch], pad([b[1] for b in batch], batch_first=True),
                pad([b[2] for b in batch], batch_first=True, padding_value=-100))

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(256, 32), torch.nn.Linear(32, 256))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen, steps, losses = [], 0, []
    for ids, x, y in DataLoader(ChatParts(), batch_size=32, num_workers=workers,
                                collate_fn=collate):
        seen += ids
        if (y != -100).any():
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten(),
                                                     ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            steps += 1
    if len(seen) != records:
        sys.exit(f"FAIL: {workers} workers read {len(seen)} records, the epoch has {records}")
    real = [i for i in seen if i is not None]
    if len(set(real)) != len(real):
        sys.exit("FAIL: a conversation was read twice")
    print(f"OK IterableDataset, {workers} workers over the parts: {records} conversations once",
          flush=True)
    if not steps or not all(l == l for l in losses):
        sys.exit("FAIL: no training step, or a NaN loss")
    print(f"OK {steps} training steps on assistant tokens, loss {losses[0]:.2f} -> "
          f"{losses[-1]:.2f}", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "make":
        ap = argparse.ArgumentParser(description="write a small chat dataset")
        ap.add_argument("cmd")
        ap.add_argument("out")
        ap.add_argument("--rows", type=int, default=2000)
        a = ap.parse_args()
        make(a.out, a.rows)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mount", help="a youmufs mountpoint with -o column=id:messages")
    ap.add_argument("--source", required=True, help="the Parquet dataset mounted")
    args = ap.parse_args()
    records = check_hf(args.mount, args.source)
    train(args.mount, records)
    print("OK chat_sft")


if __name__ == "__main__":
    main()
