"""A CPU-bound Python ParDo for the multi-host check (multihost_test.go).

usage: pipeline.py OUT ELEMENTS ROUNDS PAD [pipeline options]

Each element is a record of PAD bytes that costs ROUNDS rounds of
pure-Python arithmetic, so the job's time is its workers' CPU; the output
is one line per element. SIGUSR1 dumps the client's threads (a client
that does not exit after its job ended).
"""

import faulthandler
import signal
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def burn(record, rounds):
  x, _ = record
  acc = x
  for _ in range(rounds):
    acc = (acc * 1103515245 + 12345) % 2147483648
  return '%d %d' % (x, acc)


def main(argv):
  faulthandler.register(signal.SIGUSR1, all_threads=True)
  out, n, rounds, pad = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
  with beam.Pipeline(options=PipelineOptions(argv[5:])) as p:
    _ = (
        p
        | beam.Create(range(n))
        | beam.Map(lambda x: (x, b' ' * pad))
        | beam.Reshuffle()
        | beam.Map(burn, rounds)
        | beam.io.WriteToText(out, shard_name_template=''))


if __name__ == '__main__':
  main(sys.argv)
