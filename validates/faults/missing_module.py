"""A job whose DoFn lives in a module only the client can import.

usage: missing_module.py MODULE_DIR [PortableRunner options...]
MODULE_DIR holds secretmod.py; the workers do not have it on their path.
"""
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


sys.path.insert(0, sys.argv[1])
import secretmod  # pylint: disable=wrong-import-position


def main(argv):
  with beam.Pipeline(options=PipelineOptions(argv)) as p:
    _ = p | beam.Create([1, 2, 3]) | beam.ParDo(secretmod.Double())


if __name__ == '__main__':
  main(sys.argv[2:])
