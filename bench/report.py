"""What the benchmarks share: the machine's name and writing their section
of a Markdown report."""

import os


def cpu_name(default="unknown CPU"):
    """The CPU's model name from /proc/cpuinfo, else `default`."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        return default


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
