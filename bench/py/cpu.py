"""A CPU-bound Python ParDo, to show what several SDK worker processes buy.

--elements elements, each padded with --pad_kb KiB, are reshuffled, then
each costs --rounds rounds of SHA-256 in a Python loop. The padding makes
the ParDo's input several MiB: beam-runner keeps inputs under 1 MiB in one
bundle, and only several bundles can go to several workers. The sum of
the digests' first bytes is written, so every runner's output compares
exactly. Python threads
share one interpreter lock: only several worker processes (an EXTERNAL
worker pool or PROCESS environment) run such a ParDo in parallel.

  python3 cpu.py --elements 200 --rounds 100000 --output O [runner flags]
"""
import argparse
import hashlib
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def burn(kv, rounds):
    h = kv[0].to_bytes(8, "little")
    for _ in range(rounds):
        h = hashlib.sha256(h).digest()
    return h[0]


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--pad_kb", type=int, default=32)
    ap.add_argument("--output", required=True)
    args, rest = ap.parse_known_args(argv)
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        _ = (p
             | "Create" >> beam.Create(range(args.elements))
             | "Pad" >> beam.Map(lambda i: (i, bytes(args.pad_kb << 10)))
             | "Spread" >> beam.Reshuffle()
             | "Burn" >> beam.Map(burn, args.rounds)
             | "Sum" >> beam.CombineGlobally(sum)
             | "Format" >> beam.Map(lambda s: f"elements={args.elements} sum={s}")
             | "Write" >> beam.io.WriteToText(args.output))


if __name__ == "__main__":
    main(sys.argv[1:])
