"""Writes python_gbk.pb: a batch Python pipeline with three GroupByKeys, as
a fixture for the tests of state-backed iterables: "Main"'s output is read
by a Python stage as its main input, "Side"'s by one as its main input and
by another as a side input, and a CombinePerKey's (lifted by the runner)
by its merging stage. Regenerate with
  python3 runner/plan/testdata/python_gbk.py runner/plan/testdata/python_gbk.pb
"""
import sys
from typing import Tuple

import apache_beam as beam
from apache_beam.transforms import environments

p = beam.Pipeline()
kvs = (
    p
    | beam.Create([b"a", b"bb", b"cc"])
    | beam.Map(lambda v: (str(len(v)), v)).with_output_types(Tuple[str, bytes]))
main = kvs | "Main" >> beam.GroupByKey()
_ = main | "Sizes" >> beam.MapTuple(lambda k, vs: (k, sum(len(v) for v in vs)))
side = kvs | "Side" >> beam.GroupByKey()
_ = side | "Counts" >> beam.MapTuple(lambda k, vs: (k, sum(1 for _ in vs)))
_ = kvs | beam.Map(lambda kv, side: kv, side=beam.pvalue.AsList(side))
_ = kvs | beam.CombinePerKey(lambda vs: b"".join(vs))
with open(sys.argv[1], "wb") as f:
    # EXTERNAL, as PortableRunner sets for LOOPBACK (an environment the
    # runner can start), with the SDK's capabilities as PortableRunner
    # gives them: the runner tells Python stages by their sdk_base.
    env = environments.ExternalEnvironment(
        "localhost:1", capabilities=environments.python_sdk_capabilities())
    f.write(p.to_runner_api(default_environment=env).SerializeToString())
