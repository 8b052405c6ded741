"""--help, the man page and README.md list exactly the options the code knows
(fs/yfs_options.c's yfs_option_names)."""
import os
import re
import subprocess

from conftest import BIN, REPO, require_binary


def _code_options():
    src = open(os.path.join(REPO, "fs", "yfs_options.c")).read()
    block = re.search(r"yfs_option_names\[\] = \{(.*?)\};", src, re.S).group(1)
    return set(re.findall(r'"([a-z]+)"', block))


def test_help_man_and_readme_agree_with_the_code():
    require_binary()
    code = _code_options()
    assert {"column", "format", "seed", "epochs", "shuffle", "mem", "buffer", "rowid"} <= code
    help_text = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    help_opts = set(re.findall(r"^    ([a-z]+)(?:=|\s)", help_text.split("Mount options")[0], re.M))
    man = open(os.path.join(REPO, "man", "youmufs.1")).read()
    man_opts = set(re.findall(r"^\.TP\n\.BI? ([a-z]+)(?:=|$)", man.split(".SH OPTIONS")[1].split(".SH")[0], re.M))
    readme = open(os.path.join(REPO, "README.md")).read()
    readme_opts = set(re.findall(r"^\| `([a-z]+)(?:=[A-Z]+)?` \|", readme, re.M))
    assert help_opts == code, f"--help: missing {code - help_opts}, extra {help_opts - code}"
    assert man_opts == code, f"man page: missing {code - man_opts}, extra {man_opts - code}"
    assert readme_opts == code, f"README: missing {code - readme_opts}, extra {readme_opts - code}"
