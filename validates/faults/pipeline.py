"""A batch job for the fault-injection check: GroupByKey, CombinePerKey and
a side input over N generated elements, written as sorted text so runs can
be compared byte for byte.

usage: pipeline.py OUT_PREFIX N [PortableRunner options...]
"""
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

SEEDS = 100
KEYS = 997


def expand(seed, per_seed):
  # Elements are generated on the workers: the job is big, its proto small.
  for i in range(seed * per_seed, (seed + 1) * per_seed):
    yield ('k%d' % (i * 7919 % KEYS), i)


def describe_group(kv, scale):
  key, values = kv
  values = sorted(values)
  return '%s gbk n=%d min=%d max=%d scaled=%d' % (
      key, len(values), values[0], values[-1], len(values) * scale)


def main(argv):
  out, n = argv[0], int(argv[1])
  opts = PipelineOptions(argv[2:])
  with beam.Pipeline(options=opts) as p:
    elems = (
        p | 'Seeds' >> beam.Create(range(SEEDS))
        | 'Expand' >> beam.FlatMap(expand, n // SEEDS)
        | 'Spread' >> beam.Reshuffle())
    scale = p | 'Scale' >> beam.Create([3])
    groups = (
        elems | beam.GroupByKey()
        | 'DescribeGroup' >> beam.Map(
            describe_group, scale=beam.pvalue.AsSingleton(scale)))
    sums = (
        elems | beam.CombinePerKey(sum)
        | 'DescribeSum' >> beam.MapTuple(lambda k, s: '%s sum=%d' % (k, s)))
    ((groups, sums) | beam.Flatten()
     | beam.io.WriteToText(out, shard_name_template=''))


if __name__ == '__main__':
  main(sys.argv[1:])
