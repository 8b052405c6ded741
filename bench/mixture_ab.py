#!/usr/bin/env python3
"""Mixtures, two binaries side by side (issue 14, acceptance 4): for each shape, the epoch of
the directory of its 8 files ("one") and of the mixture of those files weighted by their
records ("mix"), read whole with one reader (1 MiB reads) through each binary, alternating
(the order reversed every other round), median of --repeat reads of each. mixture/one is
meaningful only within one binary's row of one run; "one" runs the same code in both when
only the mixture's read path changed.

    python3 bench/mixture_ab.py --bins old=/tmp/youmufs-old,new=build-release/youmufs \\
        --root bench/data/shapes --repeat 3
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_shapes  # noqa: E402
from mixture_bench import files_of, mount, read_epoch, unmount, write_mix  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bins", required=True, help="name=path,name=path")
    ap.add_argument("--root", default="bench/data/shapes")
    ap.add_argument("--scale", type=float, default=1.0, help="for shapes not generated yet")
    ap.add_argument("--shapes", default="a-pyarrow-text-1m,b-pyarrow-text-64k,c-duckdb-text,"
                                        "d-pyarrow-tokens,e-pyarrow-int32-jsonl")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    bins = [tuple(x.split("=", 1)) for x in a.bins.split(",")]
    work = tempfile.mkdtemp(prefix="yfs-mixab-")
    mnt = os.path.join(work, "mnt")
    os.mkdir(mnt)
    cache = os.path.join(work, "cache")
    print("| shape | " + " | ".join(f"{b} one MB/s | {b} mix MB/s | {b} mix / one | {b} runs (one; mix)"
                                     for b, _ in bins) + " |")
    print("|---|" + "---|---|---|---|" * len(bins))
    for name in a.shapes.split(","):
        d = make_shapes.generate(os.path.abspath(a.root), name, a.scale)
        shape = make_shapes.SHAPES[name]
        mix = os.path.join(work, f"{name}.json")
        write_mix(mix, files_of(d))
        opts = f"{shape.mount_options()},cache={cache}"
        combos = [(b, kind) for b in bins for kind in ("one", "mix")]
        rates = {}
        for r in range(a.repeat):
            for (bn, bp), kind in combos if r % 2 == 0 else combos[::-1]:
                mount(bp, d if kind == "one" else mix, mnt, opts)
                try:
                    n, secs = read_epoch(os.path.join(mnt, f"epoch-0.{shape.ext}"))
                finally:
                    unmount(mnt)
                rates.setdefault((bn, kind), []).append(n / secs / 1e6)
        cells = []
        for bn, _ in bins:
            one, mx = (statistics.median(rates[(bn, k)]) for k in ("one", "mix"))
            runs = "; ".join(" ".join(f"{x:.0f}" for x in rates[(bn, k)]) for k in ("one", "mix"))
            cells.append(f"{one:.0f} | {mx:.0f} | **{mx / one:.2f}** | {runs}")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
