"""A job whose DoFn lives in a module only the client can import.

usage: missing_module.py MODULE_DIR [PortableRunner options...]
MODULE_DIR holds secretmod.py; the workers do not have it on their path.
"""
import os
import sys
import traceback

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

sys.path.insert(0, sys.argv[1])
import secretmod  # pylint: disable=wrong-import-position


def main(argv):
  with beam.Pipeline(options=PipelineOptions(argv)) as p:
    _ = p | beam.Create([1, 2, 3]) | beam.ParDo(secretmod.Double())


def run_and_exit(run):
  """Runs the job and exits at once with its status. The exit skips the
  interpreter's finalization, where the client sometimes deadlocks (a
  finalizer waits forever on an RLock in Py_FinalizeEx) after the job has
  ended and its output is written."""
  status = 0
  try:
    run()
  except BaseException:  # pylint: disable=broad-except
    traceback.print_exc()
    status = 1
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access


if __name__ == '__main__':
  run_and_exit(lambda: main(sys.argv[2:]))
