#!/usr/bin/env python3
"""Elastic resume: a gloo job on 4 ranks stops mid-epoch and goes on with 2 ranks, no record
lost or repeated.

youmufs shows, by name, what is left of epoch k after each of the N parts
`epoch-<k>.part-<i>-of-<N>.jsonl` gave its first R records, dealt into any number M of parts:
`epoch-<k>.resume-<N>-<R>.part-<i>-of-<M>.jsonl`. A job only has to remember N and R (here:
steps x batch size, the same on every rank since they step together).

    youmufs -o column=text,rowid,buffer=500 examples/sample /tmp/yfs
    python3 examples/elastic_resume.py /tmp/yfs
    fusermount3 -u /tmp/yfs

It runs
  1. 4 processes (torch.multiprocessing.spawn, gloo, CPU): a DDP loop over part r of 4 that
     stops after --stop steps, as if the job were preempted; each rank reports the row ids it
     trained on, and rank 0 writes the checkpoint {N: 4, R: steps x batch};
  2. 2 new processes: a DDP loop over epoch-<k>.resume-4-<R>.part-<r>-of-2.jsonl to the end.
     The resumed parts may differ in length by up to a segment, so the loop runs under
     torch.distributed.algorithms.Join: a rank that runs out shadows the others' all_reduces
     and every record is trained on (mount with -o even=pad or even=drop for equal parts).
Then it checks that the records of both runs are exactly the epoch, each once (`rowid` gives
every record its source row number; a real job does not need it). Lines starting with "OK"
report passed checks; a failed check exits non-zero.
"""

import argparse
import datetime
import gc
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.algorithms.join import Join
from torch.utils.data import DataLoader, IterableDataset


class PartFile(IterableDataset):
    """The jsonl records of one file of the mount, in order."""

    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path, "rb", buffering=1 << 20) as f:
            for line in f:
                yield json.loads(line)


def collate(records):
    return {"text": [r["text"] for r in records],
            "_row": [r["_row"] for r in records]}


def step(model, opt, batch):
    # A toy model on toy features: the point is the loop shape (DDP all_reduces in backward).
    feats = torch.tensor([[len(t) / 100.0, len(t.split()) / 20.0] for t in batch["text"]])
    loss = model(feats).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def train(path, stop_steps, batch):
    """A DDP loop over the file at path for stop_steps steps (None: to the end, under Join);
    returns the row ids it trained on. The model, its reducer and the loader die on return."""
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # num_workers=0: the records trained on are exactly the first ones of the file.
    loader = DataLoader(PartFile(path), batch_size=batch, collate_fn=collate)
    rows = []
    if stop_steps is None:
        with Join([model]):
            for b in loader:
                step(model, opt, b)
                rows += b["_row"]
    else:
        it = iter(loader)
        for _ in range(stop_steps):
            b = next(it)          # every part holds at least stop_steps batches (checked)
            step(model, opt, b)
            rows += b["_row"]
    return rows


def run_rank(rank, world, init_file, path_of, stop_steps, batch, out_dir, tag):
    """One rank: train on path_of(rank), then write the row ids it trained on to
    out_dir/<tag>-<rank>.json."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        rows = train(path_of(rank), stop_steps, batch)
        with open(os.path.join(out_dir, f"{tag}-{rank}.json"), "w") as f:
            json.dump(rows, f)
        # The process group goes only after every rank is done with it and no DDP model
        # holds it any more: destroyed while the model still held it, gloo now and then
        # aborted a rank ("terminate called without an active exception", 1 run in 30).
        gc.collect()
        dist.barrier()
    finally:
        dist.destroy_process_group()


def spawn(world, path_of, stop_steps, batch, out_dir, tag):
    init = os.path.join(out_dir, f"init-{tag}")
    mp.spawn(run_rank, args=(world, init, path_of, stop_steps, batch, out_dir, tag),
             nprocs=world, join=True)
    per_rank = []
    for r in range(world):
        with open(os.path.join(out_dir, f"{tag}-{r}.json")) as f:
            per_rank.append(json.load(f))
    return per_rank


class Paths:
    """Picklable file-name makers for the spawned ranks."""

    def __init__(self, mount, name):
        self.mount, self.name = mount, name

    def __call__(self, rank):
        return os.path.join(self.mount, self.name.format(rank=rank))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mount", help="a youmufs mountpoint (mounted with -o rowid)")
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--before", type=int, default=4, help="ranks before the stop")
    ap.add_argument("--after", type=int, default=2, help="ranks after the stop")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--stop", type=int, default=5, help="steps before the stop")
    args = ap.parse_args()
    k, n, m = args.epoch, args.before, args.after

    with open(os.path.join(args.mount, f"epoch-{k}.jsonl"), "rb") as f:
        epoch = [json.loads(line)["_row"] for line in f]
    shortest = min(sum(1 for _ in open(os.path.join(args.mount, f"epoch-{k}.part-{i}-of-{n}.jsonl"),
                                       "rb")) for i in range(n))
    if shortest < args.stop * args.batch:
        sys.exit(f"FAIL: a part of {n} holds {shortest} records, fewer than {args.stop} steps of "
                 f"{args.batch}: pick a smaller --stop")

    with tempfile.TemporaryDirectory() as tmp:
        before = spawn(n, Paths(args.mount, f"epoch-{k}.part-{{rank}}-of-{n}.jsonl"), args.stop,
                       args.batch, tmp, "before")
        given = args.stop * args.batch          # the checkpoint: N and R
        print(f"OK stopped: {n} ranks trained {args.stop} steps of {args.batch} "
              f"({given} records each)", flush=True)
        after = spawn(m, Paths(args.mount, f"epoch-{k}.resume-{n}-{given}.part-{{rank}}-of-{m}"
                                           f".jsonl"), None, args.batch, tmp, "after")
        print(f"OK resumed on {m} ranks: " + ", ".join(f"rank {r} {len(rows)} records"
                                                       for r, rows in enumerate(after)),
              flush=True)

    union = [r for rows in before + after for r in rows]
    dup = len(union) - len(set(union))
    missing = set(epoch) - set(union)
    extra = set(union) - set(epoch)
    if dup or missing or extra or len(union) != len(epoch):
        sys.exit(f"FAIL: {len(union)} records trained on, {dup} repeated, {len(missing)} lost, "
                 f"{len(extra)} not in the epoch (epoch has {len(epoch)})")
    print(f"OK {n} ranks then {m} ranks: {len(union)} records = epoch {k}, none lost or "
          f"repeated", flush=True)
    print("OK elastic_resume", flush=True)


if __name__ == "__main__":
    main()
