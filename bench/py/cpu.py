"""A CPU-bound Python ParDo, to show what several SDK worker processes buy.

--elements elements are reshuffled (so they are spread over bundles), then
each costs --rounds rounds of SHA-256 in a Python loop; the sum of the digests' first
bytes is written, so every runner's output compares exactly. Python threads
share one interpreter lock: only several worker processes (an EXTERNAL
worker pool or PROCESS environment) run such a ParDo in parallel.

  python3 cpu.py --elements 200 --rounds 20000 --output O [runner flags]
"""
import argparse
import hashlib
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

def burn(i, rounds):
    h = i.to_bytes(8, "little")
    for _ in range(rounds):
        h = hashlib.sha256(h).digest()
    return h[0]


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=20000)
    ap.add_argument("--output", required=True)
    args, rest = ap.parse_known_args(argv)
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        _ = (p
             | "Create" >> beam.Create(range(args.elements))
             | "Burn" >> beam.Map(burn, args.rounds)
             | "Sum" >> beam.CombineGlobally(sum)
             | "Format" >> beam.Map(lambda s: f"elements={args.elements} sum={s}")
             | "Write" >> beam.io.WriteToText(args.output))


if __name__ == "__main__":
    main(sys.argv[1:])
