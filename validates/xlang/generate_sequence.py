"""Java's GenerateSequence in a Python pipeline, through an expansion
service: the squares of [START, STOP) must come out exactly.

Usage: generate_sequence.py EXPANSION START STOP [pipeline options]
"""
import sys

import apache_beam as beam
from apache_beam.io.external.generate_sequence import GenerateSequence
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that
from apache_beam.testing.util import equal_to


def main(argv):
  expansion, start, stop = argv[0], int(argv[1]), int(argv[2])
  with beam.Pipeline(options=PipelineOptions(argv[3:])) as p:
    squares = (
        p
        | GenerateSequence(
            start=start, stop=stop, expansion_service=expansion)
        | beam.Map(lambda x: x * x))
    assert_that(squares, equal_to([i * i for i in range(start, stop)]))


if __name__ == '__main__':
  main(sys.argv[1:])
