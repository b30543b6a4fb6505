"""A CPU-bound ParDo that writes, per element, the id of the worker
process that ran it: with local SDK worker processes (Python's default
environment, or PROCESS without a command) elements reach several."""
import argparse
import os
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def burn(n):
    # Busy for a while: an interpreter lock would serialize this.
    end = time.process_time() + 0.02
    x = 0
    while time.process_time() < end:
        x += 1
    return '%d %d' % (n, os.getpid())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--output', required=True)
    parser.add_argument('--elements', type=int, default=400)
    known, rest = parser.parse_known_args()
    with beam.Pipeline(options=PipelineOptions(rest)) as p:
        _ = (
            p
            | beam.Create(list(range(known.elements)))
            | beam.Reshuffle()
            | beam.Map(burn)
            | beam.io.WriteToText(known.output))


if __name__ == '__main__':
    main()
