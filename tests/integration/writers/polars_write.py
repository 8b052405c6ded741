"""Writes the logical table with polars' own Rust writer (polars-parquet, not pyarrow).

    python3 polars_write.py SPEC.json      (SPEC as in pyarrow_write.py; options are
                                             DataFrame.write_parquet keyword arguments)
"""
import json
import os
import sys

import polars as pl


def write(spec):
    opts = dict(spec["options"])
    opts["use_pyarrow"] = False
    for i, src in enumerate(spec["sources"]):
        df = pl.read_ipc_stream(src["arrows"]).select(spec["columns"])
        df.write_parquet(os.path.join(spec["out_dir"], f"part-{i:03d}.parquet"), **opts)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        write(json.load(f))
