#!/usr/bin/env python3
"""nanoGPT-style training data: a tokenized Parquet column as a numpy.memmap token stream.

nanoGPT's train.py reads `train.bin`, a flat array of uint16 token ids with an EOS token after
each document, through np.memmap, and samples random (x, y) blocks from it. youmufs serves that
file straight from a Parquet column of token lists -- no prepare.py pass, no second copy, and a
new document order every epoch:

    python3 examples/nanogpt_memmap.py make /tmp/tok        # a small tokenized dataset
    youmufs -o column=input_ids,format=raw,dtype=u16,sep=50256 /tmp/tok /tmp/yfs
    python3 examples/nanogpt_memmap.py /tmp/yfs/epoch-0.bin --source /tmp/tok --eos 50256
    fusermount3 -u /tmp/yfs

`format=raw,dtype=u16,sep=50256` writes each row's list<int32> values as little-endian uint16
followed by one 50256 (GPT-2's <|endoftext|>); a token id that does not fit uint16 stops the
mount with a message. With --source, the script checks the stream against the Parquet files:
token count = sum(len(ids) + 1), one EOS per document, the same multiset of tokens.

Exits non-zero if a check fails; lines starting with "OK" report passed checks.
"""

import argparse
import glob
import os
import sys

import numpy as np
import torch

EOS = 50256          # GPT-2 <|endoftext|>
VOCAB = 50257


def make(out, docs=3000, files=2, seed=0):
    """Write `docs` token lists (lengths 0..300, ids < EOS) as a list<int32> column input_ids,
    the way a tokenizer pipeline would store them; one document in 500 is null (no record)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    per = -(-docs // files)
    for f in range(files):
        n = min(per, docs - f * per)
        lens = rng.integers(0, 301, size=n)             # an empty document is still a record
        null = rng.random(n) < 0.002
        lens[null] = 0
        flat = rng.integers(0, EOS, size=int(lens.sum()), dtype=np.int32)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.int32()),
                                       mask=pa.array(null))
        table = pa.table({"doc": pa.array(np.arange(f * per, f * per + n)), "input_ids": ids})
        pq.write_table(table, os.path.join(out, f"tokens-{f}.parquet"), row_group_size=400,
                       data_page_size=64 << 10)
    print(f"wrote {docs} documents in {files} files to {out}")


def get_batch(data, block_size, batch_size, device="cpu"):
    """nanoGPT's get_batch: random windows of block_size tokens; y is x shifted by one."""
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64))
                     for i in ix])
    return x.to(device), y.to(device)


def check_against_source(data, source, eos):
    import pyarrow.parquet as pq
    files = sorted(glob.glob(os.path.join(source, "**", "*.parquet"), recursive=True))
    col = pq.read_table(files, columns=["input_ids"]).column("input_ids").combine_chunks()
    col = col.filter(col.is_valid())                     # null rows are not records
    lens = np.asarray(col.value_lengths())
    flat = np.asarray(col.flatten().drop_null()).astype(np.int64)
    expect = int(lens.sum()) + len(lens)                 # sum(len(ids) + 1)
    if len(data) != expect:
        sys.exit(f"FAIL token count: {len(data)} in the stream, expected sum(len(ids)+1) = "
                 f"{expect}")
    print(f"OK token count {len(data)} = sum(len(ids)+1) over {len(lens)} documents", flush=True)
    n_eos = int((np.asarray(data) == eos).sum())
    if (flat != eos).all() and n_eos != len(lens):
        sys.exit(f"FAIL: {n_eos} EOS tokens, expected one per document ({len(lens)})")
    got = np.bincount(np.asarray(data, dtype=np.int64), minlength=VOCAB)
    want = np.bincount(flat, minlength=VOCAB)
    want[eos] += len(lens)
    if not np.array_equal(got, want):
        sys.exit("FAIL: the stream's tokens are not the source's tokens (as a multiset)")
    print(f"OK same multiset of tokens as the source; {n_eos} EOS", flush=True)
    # Not the natural order: the stream is page-shuffled (unless mounted with shuffle=none).
    natural = np.empty(expect, dtype=np.uint16)
    ends = np.cumsum(lens + 1)
    mask = np.ones(expect, bool)
    mask[ends - 1] = False
    natural[mask], natural[~mask] = flat, eos
    print(f"   differs from the natural order: {not np.array_equal(natural, data)}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "make":
        ap = argparse.ArgumentParser(prog="nanogpt_memmap.py make")
        ap.add_argument("out")
        ap.add_argument("--docs", type=int, default=3000)
        a = ap.parse_args(sys.argv[2:])
        return make(a.out, a.docs)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin", help="epoch-<k>.bin of a mount with format=raw,dtype=u16,sep=EOS")
    ap.add_argument("--source", help="the Parquet dataset it was mounted from (for the checks)")
    ap.add_argument("--eos", type=int, default=EOS)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)

    # Exactly nanoGPT's train.py: a read-only memmap of uint16 tokens. st_size is exact, so the
    # length is known up front and every slice is a read at an arbitrary offset.
    data = np.memmap(args.bin, dtype=np.uint16, mode="r")
    print(f"{args.bin}: {len(data)} tokens; first 12: {data[:12].tolist()}")
    if args.source:
        check_against_source(data, args.source, args.eos)

    # A few random batches, as a training loop would draw them.
    for step in range(3):
        x, y = get_batch(data, args.block_size, args.batch_size)
        if x.shape != (args.batch_size, args.block_size) or not torch.equal(x[:, 1:], y[:, :-1]):
            sys.exit("FAIL get_batch: y is not x shifted by one")
    # ... and that the slices are the bytes of the file (memmap pages vs. plain reads).
    with open(args.bin, "rb") as f:
        for i in torch.randint(len(data) - args.block_size, (16,)).tolist():
            f.seek(2 * i)
            if f.read(2 * args.block_size) != data[i:i + args.block_size].tobytes():
                sys.exit(f"FAIL: memmap slice at token {i} differs from a read at byte {2 * i}")
    print(f"OK get_batch: x, y of shape {tuple(x.shape)}, y = x shifted by one; slices equal "
          f"pread()", flush=True)

    # One step of a (tiny) bigram language model on those batches, to show the shapes fit.
    model = torch.nn.Embedding(VOCAB, 16)
    head = torch.nn.Linear(16, VOCAB)
    logits = head(model(x))
    loss = torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
    loss.backward()
    print(f"OK one training step, loss {loss.item():.2f} (ln(vocab) = {np.log(VOCAB):.2f})",
          flush=True)
    print("OK nanogpt_memmap", flush=True)


if __name__ == "__main__":
    main()
