#!/usr/bin/env python3
"""Writes fixtures/logical_types.parquet: one column per logical annotation that changes
how youmufs writes a value, for tests/decode/test_logical.c (which checks the schema)."""
import datetime
import decimal
import os

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))

table = pa.table({
    "s": pa.array(["a", None], pa.string()),
    "u8": pa.array([1, 255], pa.uint8()),
    "i16": pa.array([-1, 2], pa.int16()),
    "u64": pa.array([0, 2**64 - 1], pa.uint64()),
    "dec": pa.array([decimal.Decimal("-12.50"), decimal.Decimal("0.05")], pa.decimal128(9, 2)),
    "date": pa.array([datetime.date(2024, 2, 29), None], pa.date32()),
    "ts_ms_utc": pa.array([0, 1], pa.timestamp("ms", tz="UTC")),
    "ts_us": pa.array([0, 1], pa.timestamp("us")),
    "ts_ns": pa.array([0, 1], pa.timestamp("ns")),
    "t_ms": pa.array([0, 1], pa.time32("ms")),
    "t_us": pa.array([0, 1], pa.time64("us")),
    "ids": pa.array([[1, 2], None], pa.list_(pa.int32())),
    "req_ids": pa.array([[1, None], []], pa.list_(pa.field("element", pa.int32()))),
})
schema = table.schema.set(table.schema.get_field_index("req_ids"),
                          pa.field("req_ids", pa.list_(pa.int32()), nullable=False))
pq.write_table(table.cast(schema), os.path.join(HERE, "fixtures", "logical_types.parquet"))
