"""A dataset of more files than the common default soft limit of 1024 open descriptors mounts
and serves every record: youmufs keeps each source open, so it raises its own soft limit to the
hard one. Run with the soft limit lowered to 1024, as many systems start processes."""

import contextlib
import resource

import pytest

from datasets import Spec, expected_records, split_records

SOFT_LIMIT = 1024
MANY_FILES = Spec(compression="none", files=1300, rows_per_file=4, row_group_size=4, seed=11)


@contextlib.contextmanager
def soft_open_file_limit(n):
    """Lower this process's soft RLIMIT_NOFILE to n; youmufs (a child) inherits it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < MANY_FILES.files + 64:
        pytest.skip(f"hard open-file limit {hard} is below {MANY_FILES.files} files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_more_files_than_the_default_soft_limit_mount(ds, mount):
    path = ds.path(MANY_FILES)
    expected = sorted(expected_records(ds.oracle(MANY_FILES), "jsonl", "text"))
    with soft_open_file_limit(SOFT_LIMIT), mount(path, "shuffle=page") as m:
        with open(m.p("epoch-0.jsonl"), "rb") as f:
            got = split_records(f.read(), "jsonl")
    assert len(got) == MANY_FILES.files * MANY_FILES.rows_per_file
    assert sorted(got) == expected, "records differ from pyarrow's"


def test_more_files_than_the_default_soft_limit_cat(ds, cat):
    path = ds.path(MANY_FILES)
    expected = sorted(expected_records(ds.oracle(MANY_FILES), "jsonl", "text"))
    with soft_open_file_limit(SOFT_LIMIT):
        p = cat(path, "epoch-0.jsonl")
    assert sorted(split_records(p.stdout, "jsonl")) == expected, "records differ from pyarrow's"
