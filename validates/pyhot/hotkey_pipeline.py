"""A Python GroupByKey with one hot key, for the validates memory check.

A splittable DoFn emits --values values of --value_size bytes, all under
one key, a few MiB per bundle (it checkpoints itself), so no bundle's
output is large. After the GroupByKey a DoFn counts the values, sums their
sizes and adds up their CRC-32s (an order-independent checksum) and writes
one line:

  key=hot count=N bytes=B crc32sum=S iterable=T

where T is the type the SDK gave the values (_ConcatSequence when it reads
some of them over the State API).

Value i is its index as 8 big-endian bytes, repeated to --value_size
(a multiple of 8), so the harness computes the expected line on its own.

  python3 hotkey_pipeline.py --values 1048576 --value_size 1024 --output O [runner flags]
"""
import argparse
import struct
import sys
import zlib

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange
from apache_beam.io.restriction_trackers import OffsetRestrictionTracker
from apache_beam.options.pipeline_options import PipelineOptions

HOT_KEY = "hot"
# Bytes of output per bundle before the generator checkpoints.
BUNDLE_BYTES = 4 << 20


def value(i, size):
    return struct.pack(">Q", i) * (size // 8)


class Positions(beam.transforms.core.RestrictionProvider):
    """Positions 0 to n-1, for an element n."""
    def initial_restriction(self, n):
        return OffsetRange(0, n)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, element, restriction):
        return restriction.size()


class Generate(beam.DoFn):
    """Emits value i under the hot key for each position i it claims."""
    def __init__(self, size):
        self._size = size

    def process(self, _, tracker=beam.DoFn.RestrictionParam(Positions())):
        pos = tracker.current_restriction().start
        per_bundle = max(1, BUNDLE_BYTES // self._size)
        for _ in range(per_bundle):
            if not tracker.try_claim(pos):
                return
            yield HOT_KEY, value(pos, self._size)
            pos += 1
        tracker.defer_remainder()


def summarize(kv):
    key, values = kv
    n = size = csum = 0
    for v in values:
        n += 1
        size += len(v)
        csum += zlib.crc32(v)
    # A list if the runner sent the values inline, a lazy sequence if some
    # come over the State API.
    return f"key={key} count={n} bytes={size} crc32sum={csum} iterable={type(values).__name__}"


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--values", type=int, required=True)
    ap.add_argument("--value_size", type=int, default=1024)
    ap.add_argument("--output", required=True)
    args, rest = ap.parse_known_args(argv)
    if args.value_size <= 0 or args.value_size % 8:
        ap.error(f"--value_size={args.value_size}: want a positive multiple of 8")
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        _ = (p
             | "Size" >> beam.Create([args.values])
             | "Generate" >> beam.ParDo(Generate(args.value_size)).with_output_types(beam.typehints.Tuple[str, bytes])
             | "GroupByKey" >> beam.GroupByKey()
             | "Summarize" >> beam.Map(summarize)
             | "Write" >> beam.io.WriteToText(args.output, shard_name_template=""))


if __name__ == "__main__":
    main(sys.argv[1:])
