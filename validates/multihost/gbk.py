"""A GroupByKey for the multi-host check's data-plane measurement.

usage: gbk.py OUT ELEMENTS BYTES [pipeline options]

ELEMENTS values of BYTES bytes each, over 1000 keys, go through a
GroupByKey: every byte crosses the data plane to the job server and back.
The output is each key's count of values and bytes.
"""

import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

KEYS = 1000
CHUNKS = 100


def values(chunk, per_chunk, size):
  payload = b'x' * size
  for i in range(per_chunk):
    yield (chunk * per_chunk + i) % KEYS, payload


def describe(key, vs):
  vs = list(vs)
  return '%d %d %d' % (key, len(vs), sum(len(v) for v in vs))


def main(argv):
  out, n, size = argv[1], int(argv[2]), int(argv[3])
  with beam.Pipeline(options=PipelineOptions(argv[4:])) as p:
    _ = (
        p
        | beam.Create(range(CHUNKS))
        | beam.Reshuffle()
        | beam.FlatMap(values, n // CHUNKS, size)
        | beam.GroupByKey()
        | beam.MapTuple(describe)
        | beam.io.WriteToText(out, shard_name_template=''))


if __name__ == '__main__':
  main(sys.argv)
