"""Custom WindowFns: merging ones (the runner asks the SDK's merge_windows),
ones of a window type of the pipeline's own (the SDK's window coder), and
both. Thousands of elements over several keys, so windows merge across
bundles. See winmodel.py for how outputs are compared."""
import collections
import json

import apache_beam as beam
import pytest
from apache_beam import coders
from apache_beam.coders.coders import IntervalWindowCoder
from apache_beam.internal import pickler
from apache_beam.transforms import window
from apache_beam.utils.timestamp import Timestamp

from winmodel import (Record, keyed_input, last_pane_final, millis, pane_record, records,
                      run_batch, timestamped)
from test_model import portable

timeout = pytest.mark.timeout(300, method="thread")


class StartBucketMergingWindowFn(window.WindowFn):
    """A merging WindowFn that is not Sessions: each element gets [t, t+1s);
    windows starting in the same 10 s bucket merge into their span, whether
    they overlap or not. Merging merged windows again changes nothing, so
    the result does not depend on how the runner batches merges."""

    def assign(self, c):
        return [window.IntervalWindow(c.timestamp, c.timestamp + 1)]

    def merge(self, mc):
        buckets = collections.defaultdict(list)
        for w in mc.windows:
            buckets[w.start.micros // 10_000_000].append(w)
        for ws in buckets.values():
            if len(ws) > 1:
                mc.merge(ws, window.IntervalWindow(min(w.start for w in ws), max(w.end for w in ws)))

    def get_window_coder(self):
        return IntervalWindowCoder()


class LabeledWindow(window.BoundedWindow):
    """A window type of the pipeline's own: an end and a label."""
    record_fields = ("label",)

    def __init__(self, end, label):
        super().__init__(end)
        self.label = label

    def __hash__(self):
        return hash((self.end, self.label))

    def __eq__(self, other):
        return type(self) is type(other) and (self.end, self.label) == (other.end, other.label)

    def __repr__(self):
        return f"LabeledWindow({self.end}, {self.label})"


class LabeledWindowCoder(coders.Coder):
    _fields = coders.TupleCoder([coders.TimestampCoder(), coders.StrUtf8Coder()])

    def encode(self, w):
        return self._fields.encode((w.end, w.label))

    def decode(self, b):
        return LabeledWindow(*self._fields.decode(b))

    def is_deterministic(self):
        return True


def parity(t):
    return "odd" if t.micros // 1_000_000 % 2 else "even"


class ParityWindows(window.NonMergingWindowFn):
    """Non-merging, of the custom window type: each element is in a 20 s
    window labelled by the parity of its second, and in a 60 s one labelled
    'all'."""

    def assign(self, c):
        t = c.timestamp
        return [LabeledWindow(t - t % 20 + 20, parity(t)), LabeledWindow(t - t % 60 + 60, "all")]

    def get_window_coder(self):
        return LabeledWindowCoder()


class LabeledMergingWindowFn(window.WindowFn):
    """Merging, of the custom window type: each element gets a window ending
    1 s after it, labelled by the parity of its second; windows of one label
    whose ends are in the same 30 s bucket merge into the latest."""

    @staticmethod
    def group(label, end):
        return label, end.micros // 30_000_000

    def assign(self, c):
        return [LabeledWindow(c.timestamp + 1, parity(c.timestamp))]

    def merge(self, mc):
        groups = collections.defaultdict(list)
        for w in mc.windows:
            groups[self.group(w.label, w.end)].append(w)
        for (label, _), ws in groups.items():
            if len(ws) > 1:
                mc.merge(ws, LabeledWindow(max(w.end for w in ws), label))

    def get_window_coder(self):
        return LabeledWindowCoder()


def check_merge_payload(fn):
    """Returns fn, failing first unless the SDK can unpickle it for
    merge_windows.

    Python's windowing strategy wraps a pickled WindowFn in a BytesValue,
    but its merge_windows operation (bundle_processor.create_merge_windows)
    base64-decodes that whole BytesValue. The decoder skips the tag byte,
    and the length bytes when the pickle is 128 bytes or more (each is then
    outside base64's alphabet); a shorter pickle's length byte may be a
    base64 character, which corrupts the pickle on every runner, FnApiRunner
    included. The merging WindowFns here have names long enough to stay
    clear of that SDK bug."""
    if fn.is_merging():
        n = len(pickler.dumps(fn))
        assert n >= 128, f"{type(fn).__name__} pickles to {n} bytes: the SDK's merge_windows cannot unpickle it"
    return fn


def group_by_window(p, out, rows, fn):
    _ = (timestamped(p, rows)
         | beam.WindowInto(check_merge_payload(fn))
         | beam.GroupByKey()
         | beam.Map(pane_record)
         | beam.ParDo(Record(out)))


@timeout
@pytest.mark.parametrize("fn", [StartBucketMergingWindowFn, ParityWindows], ids=["merging", "custom-type"])
def test_custom_window_fn(job_endpoint, tmp_path, fn):
    """A custom merging WindowFn, and one of a custom window type: the
    groups, windows, panes and timestamps equal FnApiRunner's."""
    rows = keyed_input(3000, keys=6, span_s=600, seed=1)
    got, want = run_batch(lambda p, out: group_by_window(p, out, rows, fn()), job_endpoint, tmp_path)
    assert got == last_pane_final(want)
    assert sum(len(r[2]) for r in want) >= 3000  # every element grouped


@timeout
def test_merging_custom_window_type(job_endpoint, tmp_path):
    """A merging WindowFn of a custom window type: each (key, label, bucket)
    is one merged window ending at the latest end among its elements', with
    one final on-time pane at its end (the default timestamp combiner).

    Computed here rather than by FnApiRunner: merging windows of a custom
    type, FnApiRunner keeps them as its opaque stand-in (coder_impl's
    _OpaqueWindow) and fails encoding that with the pipeline's window coder.
    """
    rows = keyed_input(3000, keys=6, span_s=600, seed=2)
    out = tmp_path / "server"
    out.mkdir()
    with beam.Pipeline(options=portable(job_endpoint)) as p:
        group_by_window(p, str(out), rows, LabeledMergingWindowFn())
    groups = collections.defaultdict(list)
    for k, v, t in rows:
        ts = Timestamp.of(t)
        groups[(k,) + LabeledMergingWindowFn.group(parity(ts), ts + 1)].append((v, ts + 1))
    want = []
    for (k, label, _), vs in groups.items():
        end = millis(max(e for _, e in vs))
        want.append([k, ["LabeledWindow", end, label], sorted(v for v, _ in vs), 1, True, True, 0, 0, end - 1])
    assert sorted(records(str(out)), key=json.dumps) == sorted(want, key=json.dumps)
