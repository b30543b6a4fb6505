"""Writes python_custom_windows.pb: a Python pipeline grouping in custom
windows, fn_runner_test's CustomMergingWindowFn (merging, interval windows)
and EvenOddWindows (non-merging, a window type and coder of its own), as a
fixture for the planner's tests. Regenerate with
  python3 runner/plan/testdata/python_custom_windows.py runner/plan/testdata/python_custom_windows.pb
"""
import sys

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner.fn_runner_test import CustomMergingWindowFn, EvenOddWindows
from apache_beam.transforms import environments, window

p = beam.Pipeline()
for name, fn in (("merging", CustomMergingWindowFn()), ("evenodd", EvenOddWindows())):
    _ = (
        p
        | name + "/Create" >> beam.Create([1, 2, 100, 101, 102])
        | name + "/Stamp" >> beam.Map(lambda t: window.TimestampedValue(("k", t), t))
        | name + "/Window" >> beam.WindowInto(fn)
        | name + "/GBK" >> beam.GroupByKey())
with open(sys.argv[1], "wb") as f:
    env = environments.ExternalEnvironment("localhost:1")
    f.write(p.to_runner_api(default_environment=env).SerializeToString())
