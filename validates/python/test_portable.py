"""Python pipelines submitted through PortableRunner to the job server.

Each test checks its output twice: inside the pipeline with assert_that, and
after the run by reading what it wrote, compared with an answer computed in
plain Python, so a runner that silently drops the assertion still fails.
"""
import collections
import os
import random

import apache_beam as beam
import pytest
from outputs import read_lines
from apache_beam.testing.util import assert_that, equal_to

# Per-test limit (pytest-timeout): a hung job must not stall CI. The thread
# method is needed because a job waiting on a dead server blocks inside gRPC,
# where the default SIGALRM method never gets to run; it dumps all stacks and
# exits pytest.
TIMEOUT_S = 180
timeout = pytest.mark.timeout(TIMEOUT_S, method="thread")


@timeout
def test_group_and_combine(options, tmp_path):
    numbers = list(range(1, 101))
    # Expected: group n by n % 3, sum each group, then combine the sums of
    # groups by parity of the group key.
    groups = collections.defaultdict(int)
    for n in numbers:
        groups[n % 3] += n
    want = collections.defaultdict(int)
    for k, s in groups.items():
        want["even" if k % 2 == 0 else "odd"] += s
    want = sorted(want.items())
    out = str(tmp_path / "combined")

    with beam.Pipeline(options=options) as p:
        got = (
            p
            | beam.Create(numbers)
            | "Key" >> beam.Map(lambda n: (n % 3, n))
            | beam.GroupByKey()
            | "SumGroup" >> beam.Map(
                lambda kv: ("even" if kv[0] % 2 == 0 else "odd", sum(kv[1])))
            | beam.CombinePerKey(sum))
        assert_that(got, equal_to(want))
        _ = (got
             | "Format" >> beam.MapTuple(lambda k, v: f"{k}\t{v}")
             | beam.io.WriteToText(out))

    written = sorted(tuple(l.split("\t")) for l in read_lines(out))
    assert written == [(k, str(v)) for k, v in want]


def write_corpus(path, seed=7, lines=2000):
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(50)] + ["the", "beam", "runner"]
    with open(path, "w") as f:
        for _ in range(lines):
            f.write(" ".join(rng.choice(vocab)
                             for _ in range(rng.randint(0, 12))) + "\n")


@timeout
def test_wordcount_text_io(options, tmp_path):
    src = str(tmp_path / "input.txt")
    write_corpus(src)
    with open(src) as f:
        want = collections.Counter(w for line in f for w in line.split())
    out = str(tmp_path / "counts")

    with beam.Pipeline(options=options) as p:
        counts = (
            p
            | beam.io.ReadFromText(src)
            | beam.FlatMap(str.split)
            | beam.combiners.Count.PerElement())
        assert_that(counts, equal_to(list(want.items())))
        _ = (counts
             | beam.MapTuple(lambda w, c: f"{w}: {c}")
             | beam.io.WriteToText(out))

    got = {}
    for line in read_lines(out):
        word, count = line.rsplit(": ", 1)
        assert word not in got, f"duplicate output for {word!r}"
        got[word] = int(count)
    assert got == dict(want)
    assert os.path.getsize(src) > 0 and sum(got.values()) == sum(want.values())


class _SumOnWindowEnd(beam.DoFn):
    """Buffers each key's values in bag state and emits their sum from an
    event-time timer at the end of the window."""
    from apache_beam.coders import VarIntCoder as _VarInt
    from apache_beam.transforms.timeutil import TimeDomain as _TD
    from apache_beam.transforms import userstate as _us
    BAG = _us.BagStateSpec('bag', _VarInt())
    END = _us.TimerSpec('end', _TD.WATERMARK)

    def process(self, kv, bag=beam.DoFn.StateParam(BAG),
                end=beam.DoFn.TimerParam(END), w=beam.DoFn.WindowParam):
        bag.add(kv[1])
        end.set(w.max_timestamp())

    @_us.on_timer(END)
    def fire(self, key=beam.DoFn.KeyParam, bag=beam.DoFn.StateParam(BAG)):
        yield key, sum(bag.read())


@pytest.mark.timeout(TIMEOUT_S)
def test_state_and_timers(options):
    data = [(f"k{i % 7}", i) for i in range(200)]
    want = collections.defaultdict(int)
    for k, v in data:
        want[k] += v
    with beam.Pipeline(options=options) as p:
        got = p | beam.Create(data) | beam.ParDo(_SumOnWindowEnd())
        assert_that(got, equal_to(sorted(want.items())))
