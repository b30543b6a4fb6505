"""Beam's model in Python pipelines: TestStream, triggers and panes,
streaming with an unbounded splittable source, ordered-list state.

Each pipeline runs twice, on the job server and on Python's own DirectRunner
(the oracle), and the two outputs must match. Output is recorded by a DoFn
writing one file per element, so the comparison happens after both runs, in
plain Python, whatever the runner does with assertions.
"""
import json
import os
import time
import uuid

import apache_beam as beam
import pytest
from apache_beam import coders
from apache_beam.coders import FastPrimitivesCoder
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing import test_stream  # not imported by name: pytest would collect it
from apache_beam.transforms import trigger, userstate, window
from apache_beam.transforms.periodicsequence import PeriodicImpulse
from apache_beam.utils.timestamp import Duration, Timestamp

TIMEOUT_S = 180
timeout = pytest.mark.timeout(TIMEOUT_S, method="thread")


def portable(job_endpoint, streaming=False):
    args = ["--runner=PortableRunner", f"--job_endpoint={job_endpoint}",
            "--environment_type=LOOPBACK"]
    return PipelineOptions(args + (["--streaming"] if streaming else []))


def direct(streaming=False):
    return PipelineOptions(["--runner=DirectRunner"] + (["--streaming"] if streaming else []))


class Record(beam.DoFn):
    """Writes each element, as JSON, to a file of its own under out_dir."""

    def __init__(self, out_dir):
        self.out_dir = out_dir

    def process(self, rec):
        with open(os.path.join(self.out_dir, uuid.uuid4().hex), "w") as f:
            json.dump(rec, f)


def records(out_dir):
    out = []
    for name in os.listdir(out_dir):
        with open(os.path.join(out_dir, name)) as f:
            out.append(json.load(f))
    return out


def run_both(build, job_endpoint, tmp_path, streaming):
    """Runs build(pipeline, out_dir) on the server and on the DirectRunner;
    returns (server records, DirectRunner records)."""
    got = []
    for name, opts in (("server", portable(job_endpoint, streaming)), ("direct", direct(streaming))):
        out = tmp_path / name
        out.mkdir()
        with beam.Pipeline(options=opts) as p:
            build(p, str(out))
        got.append(records(str(out)))
    return got


def millis(ts):
    # The portable wire carries milliseconds; the DirectRunner keeps micros.
    return Timestamp.of(ts).micros // 1000


TV = window.TimestampedValue


@timeout
def test_teststream_elements_watermark_processing_time(job_endpoint, tmp_path):
    """Elements of several Python types, watermark and processing-time events
    of a TestStream reach the pipeline with their timestamps."""
    # A TestStream belongs to the pipeline it is applied to: one per run.
    stream = lambda: (test_stream.TestStream()
              .add_elements(["a", 1, (2, "b")])
              .advance_watermark_to(10)
              .add_elements([TV(b"raw", 12), TV({"k": [1, 2]}, 15)])
              .advance_processing_time(30)
              .add_elements([TV(3.5, 20)])
              .advance_watermark_to_infinity())

    def build(p, out):
        _ = (p | stream()
             | beam.Map(lambda x, t=beam.DoFn.TimestampParam: [repr(x), millis(t)])
             | beam.ParDo(Record(out)))

    got, want = run_both(build, job_endpoint, tmp_path, streaming=True)
    assert sorted(got) == sorted(want)
    assert len(want) == 6


TYPED_STREAMS = {
    "str": lambda: test_stream.TestStream(coder=coders.StrUtf8Coder()).add_elements(["x", "yy"]),
    "str-typed": lambda: test_stream.TestStream(coder=coders.StrUtf8Coder()).add_elements(["x", "yy"]).with_output_types(str),
    "kv-bytes": lambda: test_stream.TestStream(coder=coders.TupleCoder([coders.StrUtf8Coder(), coders.BytesCoder()])).add_elements([("k", b"vv")]),
    "kv-pickled": lambda: test_stream.TestStream(coder=coders.TupleCoder([coders.StrUtf8Coder(), coders.FastPrimitivesCoder()])).add_elements([TV(("k", {"d": [1]}), 7)]),
}


@timeout
@pytest.mark.parametrize("name", sorted(TYPED_STREAMS))
def test_teststream_typed_coders(job_endpoint, tmp_path, name):
    """TestStream elements are encoded with the payload's coder in the outer
    context: known coders (strings, KVs) and coders the runner does not
    know, with the output's coder the same or inferred differently. (The
    DirectRunner runs one TestStream per pipeline.)"""

    def build(p, out):
        _ = (p | TYPED_STREAMS[name]()
             | beam.Map(lambda x, t=beam.DoFn.TimestampParam: [repr(x), millis(t)])
             | beam.ParDo(Record(out)))

    got, want = run_both(build, job_endpoint, tmp_path, streaming=True)
    assert sorted(got) == sorted(want)
    assert want


def pane_record(kv, w=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam, t=beam.DoFn.TimestampParam):
    return [kv[0], millis(w.start), sorted(kv[1]), pane.timing, pane.is_first,
            pane.is_last, pane.index, pane.nonspeculative_index, millis(t)]


def with_closing_panes(panes, accumulating):
    """Adds to the DirectRunner's panes the closing pane Beam's model gives.

    Python writes ClosingBehavior EMIT_ALWAYS into every windowing strategy
    (WindowInto has no option for it). Under it a runner emits, when it
    garbage-collects a window whose trigger has not finished, one last LATE
    pane even with no new elements (Java's ReduceFnRunner.needToEmit): the
    accumulated values, or none when discarding. Python's DirectRunner
    ignores the closing behavior and never emits that pane.
    """
    last = {}
    for p in panes:
        key = (p[0], p[1])
        if key not in last or p[6] > last[key][6]:
            last[key] = p
    out = list(panes)
    for (k, start), p in last.items():
        if p[5]:
            continue  # already final
        values = p[2] if accumulating else []
        nonspec = p[7] + 1 if p[7] >= 0 else 0
        out.append([k, start, values, 2, False, True, p[6] + 1, nonspec, p[8]])
    return out


@timeout
@pytest.mark.parametrize("accumulating", [False, True], ids=["discarding", "accumulating"])
@pytest.mark.parametrize("early", ["count", "processing_time"])
def test_teststream_early_and_late_panes(job_endpoint, tmp_path, accumulating, early):
    """AfterWatermark with early and late firings and allowed lateness: the
    panes (values, timing, first/last, indexes, timestamps) match the
    DirectRunner's, plus the closing panes of EMIT_ALWAYS.

    Fixed windows only: sessions have checks of their own
    (test_sessions.py), and with sliding windows the DirectRunner takes late
    data for a window already past its allowed lateness, so there it is no
    oracle for Beam's model."""
    stream = lambda: (test_stream.TestStream()
              .advance_watermark_to(0)
              .add_elements([TV(("k", 1), 1), TV(("k", 2), 2)])
              .add_elements([TV(("k", 3), 3)])
              .advance_processing_time(6)
              .add_elements([TV(("k", 4), 4), TV(("j", 5), 5)])
              .advance_watermark_to(12)
              .add_elements([TV(("k", 6), 6)])
              .add_elements([TV(("k", 7), 7), TV(("j", 8), 8)])
              .add_elements([TV(("k", 21), 21)])
              .advance_watermark_to(25)
              .add_elements([TV(("k", 9), 9)])  # past the allowed lateness: dropped
              # Between the end of [20, 30) and its expiry: its on-time and
              # closing panes come apart (one watermark step passing both
              # gives one on-time final pane, as in Java).
              .advance_watermark_to(32)
              .advance_watermark_to_infinity())
    early_trigger = trigger.AfterCount(2) if early == "count" else trigger.AfterProcessingTime(5)
    mode = trigger.AccumulationMode.ACCUMULATING if accumulating else trigger.AccumulationMode.DISCARDING

    def build(p, out):
        _ = (p | stream()
             | beam.WindowInto(window.FixedWindows(10),
                               trigger=trigger.AfterWatermark(early=early_trigger, late=trigger.AfterCount(1)),
                               accumulation_mode=mode, allowed_lateness=Duration(seconds=10))
             | beam.GroupByKey()
             | beam.Map(pane_record)
             | beam.ParDo(Record(out)))

    got, want = run_both(build, job_endpoint, tmp_path, streaming=True)
    want = with_closing_panes(want, accumulating)
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, want))
    # The scenario must exercise early, on-time and late panes.
    assert {p[3] for p in want} == {0, 1, 2}


@timeout
def test_periodic_impulse_streaming(job_endpoint, tmp_path):
    """--streaming with PeriodicImpulse (an unbounded splittable DoFn with a
    watermark estimator that checkpoints itself with resume delays) into
    fixed windows of 2 s and CombinePerKey: one count per window, as the
    DirectRunner computes, and each window's count comes out as its window
    closes, not all at the end."""
    period, windows = 0.5, 3

    def build(p, out):
        # Align to window boundaries, a little in the future, per run.
        start = Timestamp.of((int(time.time()) // 2 + 2) * 2)
        _ = (p
             | PeriodicImpulse(start_timestamp=start, stop_timestamp=start + 2 * windows,
                               fire_interval=period)
             | beam.WindowInto(window.FixedWindows(2))
             | beam.Map(lambda _: ("n", 1))
             | beam.CombinePerKey(sum)
             | beam.Map(lambda kv, w=beam.DoFn.WindowParam:
                        [millis(w.start) - millis(start), kv[1], time.time()])
             | beam.ParDo(Record(out)))

    got, want = run_both(build, job_endpoint, tmp_path, streaming=True)
    assert sorted(r[:2] for r in got) == sorted(r[:2] for r in want)
    assert sorted(r[:2] for r in got) == [[2000 * i, int(2 / period)] for i in range(windows)]
    emitted = sorted(r[2] for r in got)
    assert emitted[-1] - emitted[0] >= 2, f"windows emitted together at {emitted}: not streaming"


class OrderedListFn(beam.DoFn):
    """Adds each value to an ordered list keyed by its number; an
    end-of-window timer clears a range, then reads all and a range."""
    LIST = userstate.OrderedListStateSpec("list", FastPrimitivesCoder())
    END = userstate.TimerSpec("end", userstate.TimeDomain.WATERMARK)

    def process(self, kv, w=beam.DoFn.WindowParam,
                lst=beam.DoFn.StateParam(LIST), end=beam.DoFn.TimerParam(END)):
        _, n = kv
        lst.add((Timestamp.of(n), {"n": n, "s": "v" * (n % 5)}))
        end.set(w.max_timestamp())

    @userstate.on_timer(END)
    def on_end(self, key=beam.DoFn.KeyParam, lst=beam.DoFn.StateParam(LIST)):
        lst.clear_range(Timestamp.of(4), Timestamp.of(7))
        every = [[t.micros, v] for t, v in lst.read()]
        some = [[t.micros, v] for t, v in lst.read_range(Timestamp.of(2), Timestamp.of(12))]
        yield [key, every, some]


@timeout
def test_ordered_list_state(job_endpoint, tmp_path):
    """Ordered-list state (Python length-prefixes its values) adds, reads in
    order, reads and clears ranges as on the DirectRunner."""
    values = [("a", n) for n in [9, 3, 14, 1, 7, 5, 12, 2, 4]] + [("b", n) for n in [6, 2, 11]]

    def build(p, out):
        _ = (p | beam.Create(values) | beam.ParDo(OrderedListFn()) | beam.ParDo(Record(out)))

    got, want = run_both(build, job_endpoint, tmp_path, streaming=False)
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, want))
    assert len(want) == 2
