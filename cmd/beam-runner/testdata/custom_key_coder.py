"""Python pipelines with a key whose coder is a custom Coder subclass,
which the runner cannot read (the pipeline names it
beam:coder:pickled_python:v1), and an empty pipeline.

  custom_key_coder.py batch --out PREFIX [pipeline flags]
      N numbers, reshuffled, keyed slowly (so the runner splits the
      keying stage's bundles) by Key(n % 7), through a GroupByKey
      (count and sum per key) and a stateful DoFn (each key's running
      count in its state; the largest is kept). Writes sorted lines to
      PREFIX-*; run it on DirectRunner and on the job server and compare.
  custom_key_coder.py teststream [pipeline flags]
      The same keys from a TestStream whose payload coder is
      KV<Key's coder, varint>: elements the runner must not split
      itself. assert_that checks the groups and counts; exit status 1
      unless the job ends DONE.
  custom_key_coder.py empty [pipeline flags]
      A pipeline with no transforms; prints its final state.
"""

import sys
import time

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.options.pipeline_options import StandardOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec
from apache_beam.transforms import window
from apache_beam.transforms.window import TimestampedValue
from typing import Tuple

N = 1500
KEYS = 7


class Key(object):
    def __init__(self, i):
        self.i = i

    def __eq__(self, other):
        return isinstance(other, Key) and other.i == self.i

    def __hash__(self):
        return hash(self.i)


class KeyCoder(coders.Coder):
    """Encodes Key(i) as b"key-<i>": unknown to the runner, deterministic."""

    def encode(self, k):
        return b"key-%d" % k.i

    def decode(self, b):
        return Key(int(b[4:]))

    def is_deterministic(self):
        return True


beam.coders.registry.register_coder(Key, KeyCoder)


class CountFn(beam.DoFn):
    COUNT = ReadModifyWriteStateSpec("count", coders.VarIntCoder())

    def process(self, kv, count=beam.DoFn.StateParam(COUNT)):
        c = (count.read() or 0) + 1
        count.write(c)
        yield "key-%d" % kv[0].i, c


def slow_key(n):
    time.sleep(0.001)
    return Key(n % KEYS), n


def group_line(kv):
    k, vs = kv
    vs = list(vs)
    return "group key-%d:%d:%d" % (k.i, len(vs), sum(vs))


def expected():
    lines = []
    for k in range(KEYS):
        vs = list(range(k, N, KEYS))
        lines.append("group key-%d:%d:%d" % (k, len(vs), sum(vs)))
        lines.append("count key-%d:%d" % (k, len(vs)))
    return lines


def key_and_count(keyed):
    groups = keyed | beam.GroupByKey() | beam.Map(group_line)
    counts = (keyed | beam.ParDo(CountFn()) | beam.CombinePerKey(max)
              | beam.MapTuple(lambda k, c: "count %s:%d" % (k, c)))
    return (groups, counts) | beam.Flatten()


def batch(p, out):
    keyed = (p | beam.Create(range(N)) | beam.Reshuffle()
             | beam.Map(slow_key).with_output_types(Tuple[Key, int]))
    lines = key_and_count(keyed)
    lines | beam.io.WriteToText(out)


def teststream(p):
    coder = coders.TupleCoder([KeyCoder(), coders.VarIntCoder()])
    ts = TestStream(coder=coder)
    ts.add_elements([TimestampedValue((Key(n % KEYS), n), n) for n in range(N)])
    ts.advance_watermark_to_infinity()
    # One window holds every element: GroupByKey needs a window that ends.
    keyed = (p | ts.with_output_types(Tuple[Key, int])
             | beam.WindowInto(window.FixedWindows(10 * N)))
    assert_that(key_and_count(keyed), equal_to(expected()))


def main(argv):
    mode, rest = argv[0], argv[1:]
    out = None
    if mode == "batch":
        i = rest.index("--out")
        out, rest = rest[i + 1], rest[:i] + rest[i + 2:]
    opts = PipelineOptions(rest)
    if mode == "teststream":
        opts.view_as(StandardOptions).streaming = True
    p = beam.Pipeline(options=opts)
    if mode == "batch":
        batch(p, out)
    elif mode == "teststream":
        teststream(p)
    elif mode != "empty":
        sys.exit("unknown mode %r" % mode)
    state = p.run().wait_until_finish()
    print(state)
    sys.exit(0 if state == "DONE" else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
