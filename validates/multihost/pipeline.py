"""A CPU-bound Python ParDo for the multi-host check (multihost_test.go).

usage: pipeline.py OUT ELEMENTS ROUNDS [pipeline options]

Each element costs ROUNDS rounds of pure-Python arithmetic, so the job's
time is its workers' CPU; the output is one line per element.
"""

import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def burn(x, rounds):
  acc = x
  for _ in range(rounds):
    acc = (acc * 1103515245 + 12345) % 2147483648
  return '%d %d' % (x, acc)


def main(argv):
  out, n, rounds = argv[1], int(argv[2]), int(argv[3])
  with beam.Pipeline(options=PipelineOptions(argv[4:])) as p:
    _ = (
        p
        | beam.Create(range(n))
        | beam.Reshuffle()
        | beam.Map(burn, rounds)
        | beam.io.WriteToText(out, shard_name_template=''))


if __name__ == '__main__':
  main(sys.argv)
