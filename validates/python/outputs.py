"""Reading what a pipeline wrote, for the checks."""
import glob


def read_lines(prefix):
    """The lines of every file whose name starts with prefix, in file order."""
    lines = []
    for path in sorted(glob.glob(prefix + "*")):
        with open(path) as f:
            lines.extend(line.rstrip("\n") for line in f)
    return lines
