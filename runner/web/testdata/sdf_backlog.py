"""A Python splittable DoFn slow enough to report its remaining work.

Reads an OffsetRange of 1,500 offsets at 5 ms each (about 7 s), so that
the runner's progress requests, once a second, see its
ptransform_progress:remaining. Usage: sdf_backlog.py --job_endpoint=HOST:PORT
"""
import sys
import time

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.options.pipeline_options import PipelineOptions


class Offsets(beam.transforms.core.RestrictionProvider):
  def initial_restriction(self, n):
    return OffsetRange(0, n)

  def create_tracker(self, restriction):
    return OffsetRestrictionTracker(restriction)

  def restriction_size(self, n, restriction):
    return restriction.size()


class SlowRead(beam.DoFn):
  def process(self, n, tracker=beam.DoFn.RestrictionParam(Offsets())):
    i = tracker.current_restriction().start
    while tracker.try_claim(i):
      time.sleep(0.005)
      yield i
      i += 1


def main(argv):
  opts = PipelineOptions(
      argv + ["--runner=PortableRunner", "--environment_type=LOOPBACK", "--job_name=sdf-backlog"])
  with beam.Pipeline(options=opts) as p:
    _ = p | beam.Create([1500]) | "SlowRead" >> beam.ParDo(SlowRead()) | beam.Map(lambda x: x)


if __name__ == "__main__":
  main(sys.argv[1:])
