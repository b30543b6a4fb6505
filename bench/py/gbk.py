"""GroupByKey of synthetic records, as Beam's Go load test does.

Reads --records records of --key_size + --value_size random bytes from
Beam's SyntheticSource (deterministic per record index, splittable), groups
them by key and writes one summary line: groups, records, bytes and an
order-independent checksum, so every runner's output compares exactly.

  python3 gbk.py --records 1000000 --key_size 10 --value_size 90 --output O [runner flags]
"""
import argparse
import sys
import zlib

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.synthetic_pipeline import SyntheticSource


def summarize(kv):
    key, values = kv
    n = size = 0
    for v in values:
        n += 1
        size += len(v)
    # One tuple per group: (groups, records, bytes, checksum of key and size).
    return 1, n, size, zlib.crc32(key) * (size + 1)


def add(a, b):
    return tuple(x + y for x, y in zip(a, b))


class Sum(beam.CombineFn):
    def create_accumulator(self):
        return 0, 0, 0, 0

    def add_input(self, acc, x):
        return add(acc, x)

    def merge_accumulators(self, accs):
        out = (0, 0, 0, 0)
        for a in accs:
            out = add(out, a)
        return out

    def extract_output(self, acc):
        return acc


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--key_size", type=int, default=10)
    ap.add_argument("--value_size", type=int, default=90)
    ap.add_argument("--output", required=True)
    args, rest = ap.parse_known_args(argv)
    spec = {"numRecords": args.records, "keySizeBytes": args.key_size,
            "valueSizeBytes": args.value_size}
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        _ = (p
             | "Read" >> beam.io.Read(SyntheticSource(spec))
             | "GroupByKey" >> beam.GroupByKey()
             | "Summarize" >> beam.Map(summarize)
             | "Sum" >> beam.CombineGlobally(Sum())
             | "Format" >> beam.MapTuple(
                 lambda g, n, b, c: f"groups={g} records={n} bytes={b} checksum={c % (1 << 61)}")
             | "Write" >> beam.io.WriteToText(args.output))


if __name__ == "__main__":
    main(sys.argv[1:])
