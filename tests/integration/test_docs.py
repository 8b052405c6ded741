"""--help, the man page and README.md list exactly the options the code knows
(fs/yfs_options.c's yfs_option_names), with the defaults and limits the code has."""
import json
import os
import re
import subprocess

from conftest import BIN, REPO, require_binary


def _code_options():
    src = open(os.path.join(REPO, "fs", "yfs_options.c")).read()
    block = re.search(r"yfs_option_names\[\] = \{(.*?)\};", src, re.S).group(1)
    return set(re.findall(r'"([a-z_]+)"', block))


def test_help_man_and_readme_agree_with_the_code():
    require_binary()
    code = _code_options()
    assert {"column", "format", "seed", "epochs", "shuffle", "mem", "buffer", "rowid"} <= code
    help_text = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    help_opts = set(re.findall(r"^    ([a-z_]+)(?:=|\s)", help_text.split("Mount options")[0], re.M))
    man = open(os.path.join(REPO, "man", "youmufs.1")).read()
    man_opts = set(re.findall(r"^\.TP\n\.BI? ([a-z_]+)(?:=|$)", man.split(".SH OPTIONS")[1].split(".SH")[0], re.M))
    readme = open(os.path.join(REPO, "README.md")).read()
    readme_opts = set(re.findall(r"^\| `([a-z_]+)(?:=[A-Z]+)?` \|", readme, re.M))
    assert help_opts == code, f"--help: missing {code - help_opts}, extra {help_opts - code}"
    assert man_opts == code, f"man page: missing {code - man_opts}, extra {man_opts - code}"
    assert readme_opts == code, f"README: missing {code - readme_opts}, extra {readme_opts - code}"


# What the docs state of each numeric option: its lowest and highest value (None: no upper
# limit) as the docs write them, and its default. Each is checked against the binary (it
# accepts the limits and refuses one past them; index.json shows the default), then each
# doc's entry for the option must state them.
LIMITS = {
    "mem": ("1M", None, "256M"),
    "chunk": ("0", "1G", "1M"),
    "readahead": ("0", "64", "8"),
    "io_depth": ("0", "128", "0"),
    "kernel_readahead": ("0", "64M", "256K"),
    "epochs": ("0", "1000000", "1"),
    "buffer": ("1", "4294967295", "10000"),
    "threads": ("1", "256", "max(4, cores)"),
}
SIZES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
SAMPLE = os.path.join(REPO, "examples", "sample")


def _number(text):
    return int(text[:-1]) * SIZES[text[-1]] if text[-1] in SIZES else int(text)


def _cat_index(option):
    return subprocess.run([BIN, "cat", "-o", f"column=text,cache=none,{option}", SAMPLE,
                           ".youmufs/index.json"], capture_output=True, text=True, timeout=120)


def _entries():
    """Each doc's text for each option: --help's lines, the man page's .TP block, README's
    table row."""
    help_text = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    help_opts = help_text.split("youmufs options")[1].split("Mount options")[0]
    man = open(os.path.join(REPO, "man", "youmufs.1")).read()
    man_opts = man.split(".SH OPTIONS")[1].split("\n.SH")[0]
    readme = open(os.path.join(REPO, "README.md")).read()
    out = {}
    for opt in LIMITS:
        h = re.search(rf"^    {opt}=.*?(?=^    [a-z_]+[=\s])", help_opts, re.M | re.S)
        m = re.search(rf"^\.BI {opt}= .*?(?=^\.TP)", man_opts, re.M | re.S)
        r = re.search(rf"^\| `{opt}=[A-Z]+` \|.*$", readme, re.M)
        out[opt] = {"--help": h and h.group(0), "man page": m and m.group(0),
                    "README": r and r.group(0)}
    return out


def _states(text, value):
    plain = re.sub(r"\\f[BIR]|\\-|\s+", lambda mt: "-" if mt.group(0) == "\\-" else " ", text)
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w])", plain) is not None


def test_option_limits_and_defaults_are_the_codes_and_every_doc_states_them():
    require_binary()
    defaults = json.loads(_cat_index("seed=0").stdout)["options"]
    code_defaults = {"mem": 256 << 20, "chunk": 1 << 20, "readahead": 8, "io_depth": 0, "epochs": 1,
                     "buffer": 10000, "threads": max(4, os.cpu_count() or 1)}
    for opt, value in code_defaults.items():
        assert defaults[opt] == value, f"{opt}: index.json says {defaults[opt]}, docs {value}"
    for opt, (lo, hi, _) in LIMITS.items():
        for ok in (lo, hi):
            if ok is not None:
                p = _cat_index(f"{opt}={ok}")
                assert p.returncode == 0, f"{opt}={ok} refused: {p.stderr}"
        for bad in ([_number(lo) - 1] if _number(lo) > 0 else []) + \
                ([_number(hi) + 1] if hi is not None else []):
            p = _cat_index(f"{opt}={bad}")
            assert p.returncode == 2 and f"{opt}=" in p.stderr, f"{opt}={bad} accepted"
    entries = _entries()
    for opt, (lo, hi, default) in LIMITS.items():
        for doc, text in entries[opt].items():
            assert text, f"{doc} has no entry for {opt}"
            for value in (lo, hi, default):
                if value is not None:
                    assert _states(text, value), f"{doc}'s {opt} does not state {value}:\n{text}"


def test_epoch_and_part_number_limits_are_stated_and_hold(tmp_path):
    require_binary()
    from conftest import mounted
    with mounted(SAMPLE, "column=text,cache=none") as m:
        for name, exists in (("epoch-4194303.jsonl", True), ("epoch-4194304.jsonl", False),
                             ("epoch-0.part-0-of-1048575.jsonl", True),
                             ("epoch-0.part-0-of-1048576.jsonl", False)):
            assert os.path.exists(m.p(name)) == exists, name
    help_text = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    man = open(os.path.join(REPO, "man", "youmufs.1")).read()
    readme = open(os.path.join(REPO, "README.md")).read()
    for doc, text in (("--help", help_text), ("man page", man), ("README", readme)):
        for value in ("4194303", "1048575"):
            assert _states(text, value), f"{doc} does not state {value}"
