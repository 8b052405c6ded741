#!/usr/bin/env python3
"""PyTorch: one youmufs part file per (rank, DataLoader worker), on CPU.

youmufs shows `epoch-<k>.part-<i>-of-<n>.jsonl` for any n: the n parts are disjoint and together
hold exactly epoch k. With `world` ranks of `workers` DataLoader workers each, worker w of rank r
reads part r*workers + w of world*workers -- no sampler, no index bookkeeping, no coordination.

    youmufs -o column=text,rowid,buffer=500 examples/sample /tmp/yfs
    python3 examples/pytorch_iterable.py /tmp/yfs          # epoch 0, 2 ranks x 2 workers
    fusermount3 -u /tmp/yfs

(`rowid` adds the source row number as "_row" to each record; the script uses it only to check
that the union over all ranks and workers is exactly the epoch, with no duplicates. A real job
does not need it.)

It runs
  1. one process, a DataLoader with num_workers=2: the records of parts 0 and 1 of 2;
  2. two processes (torch.multiprocessing.spawn, gloo backend, CPU), each with a DataLoader of 2
     workers (parts 0..3 of 4), first collecting every record, then a short DDP "training" loop
     that stops all ranks at the same step (parts hold different numbers of records; see
     train_steps()).
and exits non-zero if a check fails. Lines starting with "OK" report passed checks.
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
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class YoumuEpoch(IterableDataset):
    """The records of epoch `epoch` that belong to this (rank, worker), parsed from jsonl."""

    def __init__(self, mount, epoch=0, workers=1):
        self.mount, self.epoch, self.workers = mount, epoch, workers

    def part_path(self):
        # rank/world from torch.distributed when it is initialised, else a single process.
        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
        else:
            rank, world = 0, 1
        # worker id from the DataLoader (None in the main process when num_workers=0).
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        assert workers == self.workers, f"DataLoader has {workers} workers, expected {self.workers}"
        i, n = rank * workers + worker, world * workers
        return os.path.join(self.mount, f"epoch-{self.epoch}.part-{i}-of-{n}.jsonl")

    def __iter__(self):
        # An ordinary buffered file read: youmufs serves it sequentially from its prepared
        # segments; the kernel's readahead keeps requests large.
        with open(self.part_path(), "rb", buffering=1 << 20) as f:
            for line in f:
                yield json.loads(line)


def collate(records):
    """Keep the text as a list of str; the row ids as a tensor (used only for the checks)."""
    return {"text": [r["text"] for r in records],
            "_row": torch.tensor([r["_row"] for r in records], dtype=torch.int64)}


def loader(mount, epoch, workers=2, batch_size=64):
    return DataLoader(YoumuEpoch(mount, epoch, workers), batch_size=batch_size,
                      num_workers=workers, collate_fn=collate,
                      # 'fork' lets workers start without re-importing torch (fast on CPU).
                      multiprocessing_context="fork" if workers else None)


def epoch_rowids(mount, epoch):
    """The reference: row ids of the whole-epoch file, read in one go."""
    with open(os.path.join(mount, f"epoch-{epoch}.jsonl"), "rb") as f:
        return [json.loads(line)["_row"] for line in f]


def check_union(rowids, reference, what):
    dup = len(rowids) - len(set(rowids))
    missing = set(reference) - set(rowids)
    extra = set(rowids) - set(reference)
    if dup or missing or extra or len(rowids) != len(reference):
        sys.exit(f"FAIL {what}: {len(rowids)} records, {dup} duplicated, {len(missing)} missing, "
                 f"{len(extra)} not in the epoch (epoch has {len(reference)})")
    print(f"OK {what}: {len(rowids)} records = the epoch, no duplicates", flush=True)


# --------------------------------------------------------------------------------------------
# Equal step counts under DDP. Part files hold different numbers of records, so ranks would run
# out of batches at different steps, and a rank that stops early leaves the others waiting in
# an all_reduce forever. The common fix, used here: before each step, all ranks agree (all_reduce
# MIN of "I have a batch") whether everyone still has one; the epoch ends at the first step where
# some rank has none, and the remainder of the other ranks is dropped for this epoch (the next
# epoch's shuffle puts other records last). If the part sizes are known ahead (e.g. counted once
# per epoch with `wc -l`), all_reduce the MIN of the batch counts instead and stop there; or wrap
# the loop in torch.distributed.algorithms.Join to use every record; or mount with
# -o even=pad (or even=drop) so that every part holds the same number of records.

def train_steps(model, opt, batches):
    steps = records = 0
    it = iter(batches)
    while True:
        batch = next(it, None)
        have = torch.tensor([0 if batch is None else 1])
        dist.all_reduce(have, op=dist.ReduceOp.MIN)
        if have.item() == 0:
            return steps, records
        # A toy model on toy features (text length, word count): the point is the loop shape.
        feats = torch.tensor([[len(t) / 100.0, len(t.split()) / 20.0] for t in batch["text"]])
        loss = model(feats).pow(2).mean()
        opt.zero_grad()
        loss.backward()          # DDP all_reduces the gradients here: every rank must get here
        opt.step()
        steps += 1
        records += len(batch["text"])


def train(mount, epoch):
    """A DDP loop over this rank's parts of epoch; returns (steps, records). The model, its
    reducer and the loader die on return."""
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return train_steps(model, opt, loader(mount, epoch))


def ddp_worker(rank, world, init_file, mount, epoch, out_dir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=120))
    try:
        # 1. Collect every record this rank's two workers read.
        rows = [r for b in loader(mount, epoch) for r in b["_row"].tolist()]
        everything = [None] * world
        dist.all_gather_object(everything, rows)
        if rank == 0:                        # one printer: lines of two processes interleave
            for r, per_rank in enumerate(everything):
                print(f"rank {r}: {len(per_rank)} records from parts {2 * r},{2 * r + 1} of "
                      f"{2 * world}", flush=True)
            union = [r for per_rank in everything for r in per_rank]
            check_union(union, epoch_rowids(mount, epoch), f"epoch {epoch}, {world} ranks x 2 "
                        f"workers (gloo)")
        # 2. A DDP loop over the same loader: every rank runs the same number of steps.
        steps, records = train(mount, epoch)
        counts = [None] * world
        dist.all_gather_object(counts, (steps, records))
        if rank == 0:
            if len({s for s, _ in counts}) != 1:
                sys.exit(f"FAIL ranks ran different step counts: {counts}")
            dropped = sum(len(r) for r in everything) - sum(n for _, n in counts)
            print(f"OK DDP: {world} ranks ran {steps} steps each; {dropped} records of the "
                  f"longer parts dropped (remainder)", flush=True)
            with open(os.path.join(out_dir, "ok"), "w") as f:
                f.write("ok\n")
        # The process group goes only after every rank is done with it and no DDP model
        # holds it any more (as in elastic_resume.py).
        gc.collect()
        dist.barrier()
    finally:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mount", help="a youmufs mountpoint (mounted with -o rowid)")
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--world", type=int, default=2, help="ranks for the distributed run")
    args = ap.parse_args()
    torch.set_num_threads(1)

    # 1. Single process, DataLoader with 2 workers: parts 0 and 1 of 2.
    rows = [r for b in loader(args.mount, args.epoch) for r in b["_row"].tolist()]
    check_union(rows, epoch_rowids(args.mount, args.epoch),
                f"epoch {args.epoch}, 1 process x 2 workers")

    # 2. Two ranks on the gloo backend (CPU), each with 2 workers: parts 0..3 of 4.
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(ddp_worker, args=(args.world, os.path.join(tmp, "init"), args.mount,
                                   args.epoch, tmp), nprocs=args.world, join=True)
        if not os.path.exists(os.path.join(tmp, "ok")):
            sys.exit("FAIL: the distributed run did not complete its checks")
    print("OK pytorch_iterable", flush=True)


if __name__ == "__main__":
    main()
