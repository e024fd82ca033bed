"""What the benchmarks share: the machine's name, how a run is pinned, a
model folder's inputs, and writing their section of a Markdown report."""

import json
import os


def cpu_name(default="unknown CPU"):
    """The CPU's model name from /proc/cpuinfo, else `default`."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        return default


def pinned(threads):
    """1-thread runs are pinned to one core (every peer the same one): the
    taskset prefix of a command, empty for more threads."""
    return ["taskset", "-c", str(min(os.sched_getaffinity(0)))] if threads == 1 else []


def input_names(folder):
    """A model folder's inputs, in order: inputs.json (bench/exported.py),
    else x."""
    path = os.path.join(folder, "inputs.json")
    if not os.path.exists(path):
        return ["x"]
    with open(path) as f:
        return json.load(f)


def replace_section(path, begin, end, section):
    """Replaces the text from `begin` to `end` (markers on their own lines,
    `section` includes both) in the file at `path`, or appends `section`
    when the file has no such part yet."""
    text = open(path).read() if os.path.exists(path) else ""
    if begin in text and end in text:
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


def emit_section(lines, begin, end, write=None):
    """Closes `lines` (which open with `begin`) with `end`, prints the
    section, and with `write` replaces its part of that file."""
    section = "\n".join(lines + ["", end]) + "\n"
    print(section)
    if write:
        replace_section(write, begin, end, section)
