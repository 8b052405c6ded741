"""What the benchmark reports say of the machine they ran on."""


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or "?"."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return "?"


def report(text, out):
    """Print a benchmark's report, and write it to the file `out` when one is given."""
    if out:
        with open(out, "w") as f:
            f.write(text)
    print(text)
