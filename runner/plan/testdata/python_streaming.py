"""Writes python_streaming.pb: the pipeline proto Python's PortableRunner
submits for a --streaming job (no pre-optimization in streaming), as a
fixture for the planner's tests. Regenerate with
  python3 runner/plan/testdata/python_streaming.py runner/plan/testdata/python_streaming.pb
"""
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import environments
from apache_beam.transforms import window
from apache_beam.transforms.periodicsequence import PeriodicImpulse

p = beam.Pipeline(options=PipelineOptions(["--streaming"]))
_ = (
    p
    | PeriodicImpulse(fire_interval=1, stop_timestamp=1e9 + 10, start_timestamp=1e9)
    | beam.Map(lambda t: ("k", 1))
    | beam.WindowInto(window.FixedWindows(2))
    | beam.CombinePerKey(sum))
# A one-element Create: its MaybeReshuffle passes its input through.
_ = p | beam.Create([None]) | beam.Map(str)
with open(sys.argv[1], "wb") as f:
    # EXTERNAL, as PortableRunner sets for LOOPBACK: an environment the
    # runner can start.
    env = environments.ExternalEnvironment("localhost:1")
    f.write(p.to_runner_api(default_environment=env).SerializeToString())
