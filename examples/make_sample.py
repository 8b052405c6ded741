#!/usr/bin/env python3
"""Write the sample dataset of the README quickstart: examples/sample/part-{0,1,2}.parquet.

Three small snappy-compressed files (a few thousand rows in total) with an `id` int64 column and a
`text` string column of synthetic, readable sentences of varied length; a few `text` values are
null. Deterministic: running it again writes the same rows.

    python3 examples/make_sample.py            # (re)writes examples/sample/
    youmufs examples/sample /tmp/yfs           # then: head -3 /tmp/yfs/epoch-0.jsonl
"""

import os
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq

SUBJECTS = ["The old lighthouse keeper", "A curious fox", "Our neighbour's cat", "The river",
            "A tired student", "The little robot", "Grandmother", "The morning train",
            "A flock of starlings", "The baker on the corner", "Nobody", "The committee",
            "A violin teacher", "The mountain village", "Every compiler"]
VERBS = ["remembers", "watches", "carries", "forgets", "paints", "follows", "explains",
         "counts", "hides", "discovers", "repairs", "imagines", "measures", "sings about"]
OBJECTS = ["the last warm day of autumn", "a map with no names on it", "seven blue umbrellas",
           "the sound of distant thunder", "an unfinished letter", "the shortest path home",
           "a box of forgotten photographs", "the price of bread", "a lantern in the fog",
           "the rules of a game nobody plays", "three questions and one answer",
           "the smell of rain on hot stones", "a page torn from an atlas"]
TAILS = ["before breakfast", "every single Tuesday", "without saying a word",
         "while the kettle boils", "as if nothing had happened", "in the quiet hour after noon",
         "for the hundredth time", "under a sky the colour of slate", "with great care",
         "and then laughs"]
CONNECT = ["Meanwhile", "Later", "Of course", "Somehow", "Still", "In the end", "Sometimes"]


def sentence(rng):
    s = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    if rng.random() < 0.6:
        s += " " + rng.choice(TAILS)
    return s + rng.choice([".", ".", ".", "!", "?"])


def paragraph(rng):
    n = rng.choices([1, 2, 3, 5, 8], weights=[30, 30, 20, 12, 8])[0]
    parts = [sentence(rng)]
    for _ in range(n - 1):
        s = sentence(rng)
        if rng.random() < 0.3:
            s = f"{rng.choice(CONNECT)}, {s[0].lower()}{s[1:]}"
        parts.append(s)
    return " ".join(parts)


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(20240601)
    row = 0
    for f, nrows in enumerate((1200, 900, 1400)):
        ids = list(range(row, row + nrows))
        texts = [None if rng.random() < 0.01 else paragraph(rng) for _ in ids]
        row += nrows
        table = pa.table({"id": pa.array(ids, pa.int64()), "text": pa.array(texts, pa.string())})
        pq.write_table(table, os.path.join(out_dir, f"part-{f}.parquet"), compression="snappy",
                       row_group_size=500, data_page_size=8192)
    total = sum(os.path.getsize(os.path.join(out_dir, f"part-{f}.parquet")) for f in range(3))
    print(f"wrote {row} rows in 3 files, {total} bytes, to {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample"))
