"""What the benchmark reports say of the machine they ran on."""


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or "?"."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return "?"
