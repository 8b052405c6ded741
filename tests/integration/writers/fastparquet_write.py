"""Writes the logical table with fastparquet (pure Python/numpy writer) from pandas.

    python3 fastparquet_write.py SPEC.json  (SPEC as in pyarrow_write.py; options are
                                              fastparquet.write keyword arguments, plus
                                              "categorical": [columns] to store as pandas
                                              categoricals, which fastparquet dictionary-encodes)
fastparquet cannot write list columns (it would store them as JSON strings): leave them out.
Nullable integers and booleans go through pandas' nullable dtypes so nulls stay nulls.
"""
import json
import os
import sys

import fastparquet
import pandas as pd
import pyarrow as pa
import pyarrow.ipc as ipc

_MAP = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}


def write(spec):
    opts = dict(spec["options"])
    categorical = opts.pop("categorical", [])
    opts.setdefault("stats", True)
    for i, src in enumerate(spec["sources"]):
        with ipc.open_stream(src["arrows"]) as r:
            t = r.read_all().select(spec["columns"])
        df = t.to_pandas(types_mapper=_MAP.get)
        for c in df.columns:
            if pa.types.is_string(t.schema.field(c).type):
                df[c] = df[c].astype(object)
        for c in categorical:
            df[c] = df[c].astype("category")
        fastparquet.write(os.path.join(spec["out_dir"], f"part-{i:03d}.parquet"), df,
                          write_index=False, object_encoding="utf8", **opts)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        write(json.load(f))
