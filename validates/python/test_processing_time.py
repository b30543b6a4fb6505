"""Processing time on the wall clock: a streaming job that reads a real
unbounded source (PeriodicImpulse, no TestStream) fires its
AfterProcessingTime early panes as wall-clock time passes.

There is no oracle run here: what is checked is when the panes come, as
seen by a DoFn that notes time.time() for each one.
"""
import json
import os
import time
import uuid

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import trigger, window
from apache_beam.transforms.periodicsequence import PeriodicImpulse, RebaseMode
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.utils.timestamp import Duration, Timestamp

timeout = pytest.mark.timeout(180, method="thread")

EARLY, ON_TIME = 0, 1  # PaneInfoTiming


class PaneClock(beam.DoFn):
    """Writes, per pane, the wall-clock time it reached this DoFn, its
    timing and its count, to a file of its own under out_dir."""

    def __init__(self, out_dir):
        self.out_dir = out_dir

    def process(self, kv, pane=beam.DoFn.PaneInfoParam):
        rec = {"at": time.time(), "timing": pane.timing, "count": kv[1]}
        with open(os.path.join(self.out_dir, uuid.uuid4().hex), "w") as f:
            json.dump(rec, f)


def panes(out_dir):
    out = []
    for name in os.listdir(out_dir):
        with open(os.path.join(out_dir, name)) as f:
            out.append(json.load(f))
    return sorted(out, key=lambda r: r["at"])


@timeout
def test_early_panes_every_two_seconds(job_endpoint, tmp_path):
    """AfterWatermark(early=AfterProcessingTime(2)), discarding, over 12 s
    of PeriodicImpulse: early panes about 2 s apart (1-4 s, room for a
    loaded machine), at least three, then the on-time pane when the source
    ends; each element is in exactly one pane."""
    period, length = 0.5, 12
    # Rebased to when the job runs: a job slow to start (a loaded machine)
    # would otherwise catch up on the ticks already due, all in one pane.
    start = Timestamp.of(time.time())
    opts = PipelineOptions(["--runner=PortableRunner", f"--job_endpoint={job_endpoint}",
                            "--environment_type=LOOPBACK", "--streaming"])
    out = str(tmp_path / "panes")
    os.mkdir(out)
    with beam.Pipeline(options=opts) as p:
        _ = (p
             | PeriodicImpulse(start_timestamp=start, stop_timestamp=start + length,
                               fire_interval=period, rebase=RebaseMode.REBASE_ALL)
             # One window, starting at start, holds the whole run (if it
             # starts within 48 s).
             | beam.WindowInto(window.FixedWindows(60, offset=start.micros / 1e6 % 60),
                               trigger=trigger.AfterWatermark(early=trigger.AfterProcessingTime(2)),
                               accumulation_mode=trigger.AccumulationMode.DISCARDING)
             | beam.Map(lambda _: ("n", 1))
             | beam.CombinePerKey(sum)
             | beam.ParDo(PaneClock(out)))

    got = panes(out)
    assert sum(r["count"] for r in got) == int(length / period), got
    assert got and got[-1]["timing"] == ON_TIME, got
    early = [r["at"] for r in got if r["timing"] == EARLY]
    assert len(early) >= 3, f"{len(early)} early panes: {got}"
    gaps = [round(b - a, 2) for a, b in zip(early, early[1:])]
    assert all(1 <= g <= 4 for g in gaps), f"early panes {gaps} s apart, want about 2 s"


class TickClock(beam.DoFn):
    """Writes, per element, its timestamp and the wall-clock time it
    reached this DoFn, to a file of its own under out_dir."""

    def __init__(self, out_dir):
        self.out_dir = out_dir

    def process(self, _, ts=beam.DoFn.TimestampParam):
        rec = {"at": time.time(), "ts": ts.micros / 1e6}
        with open(os.path.join(self.out_dir, uuid.uuid4().hex), "w") as f:
            json.dump(rec, f)


@timeout
def test_periodic_impulse_paced_on_wall_clock(job_endpoint, tmp_path):
    """PeriodicImpulse(fire_interval=0.5) resumes itself with
    defer_remainder until its next tick is due: the runner must hold the
    residual until then, and resume it then, so the ticks come one per
    interval on the wall clock, not all at once at the end. The ticks are
    rebased to when the job runs (a slow start would make the source
    catch up, several ticks at once); from the first tick seen on, each
    later one comes at least a quarter interval after the one before (a
    resume may be late on a loaded machine; a held-back one would come
    with the next tick)."""
    period, length = 0.5, 4
    start = Timestamp.of(time.time())
    opts = PipelineOptions(["--runner=PortableRunner", f"--job_endpoint={job_endpoint}",
                            "--environment_type=LOOPBACK", "--streaming"])
    out = str(tmp_path / "ticks")
    os.mkdir(out)
    with beam.Pipeline(options=opts) as p:
        _ = (p
             | PeriodicImpulse(start_timestamp=start, stop_timestamp=start + length,
                               fire_interval=period, rebase=RebaseMode.REBASE_ALL)
             | beam.ParDo(TickClock(out)))

    got = panes(out)
    assert len(got) == int(length / period), got
    for r in got:
        assert r["at"] >= r["ts"], f"tick due at {r['ts']} seen before its time: {got}"
    running = got[0]["at"]
    paced = [r["at"] for r in got if r["ts"] > running]
    assert len(paced) >= 3, f"only {len(paced)} ticks due after the job ran: {got}"
    gaps = [round(b - a, 3) for a, b in zip(paced, paced[1:])]
    assert all(g >= period / 4 for g in gaps), f"ticks {gaps} s apart, want about {period} s"


class DelayedResumer(beam.DoFn, beam.transforms.core.RestrictionProvider):
    """Claims one position of [0, n) per call and defers the rest by
    delay seconds, noting when each call began and returned."""

    def __init__(self, out_dir, n, delay):
        self.out_dir, self.n, self.delay = out_dir, n, delay

    def initial_restriction(self, _):
        return OffsetRange(0, self.n)

    def create_tracker(self, restriction):
        return OffsetRestrictionTracker(restriction)

    def restriction_size(self, _, restriction):
        return restriction.size()

    @beam.DoFn.unbounded_per_element()
    def process(self, _, tracker=beam.DoFn.RestrictionParam()):
        began = time.time()
        pos = tracker.current_restriction().start
        if tracker.try_claim(pos):
            yield pos
            tracker.defer_remainder(Duration.of(self.delay))
        rec = {"began": began, "returned": time.time()}
        with open(os.path.join(self.out_dir, uuid.uuid4().hex), "w") as f:
            json.dump(rec, f)


@timeout
def test_defer_remainder_waits_on_wall_clock(job_endpoint, tmp_path):
    """A splittable DoFn that defers its remainder by 0.4 s is not resumed
    before 0.4 s has passed on the wall clock, after each deferral."""
    n, delay = 4, 0.4
    opts = PipelineOptions(["--runner=PortableRunner", f"--job_endpoint={job_endpoint}",
                            "--environment_type=LOOPBACK", "--streaming"])
    out = str(tmp_path / "calls")
    os.mkdir(out)
    fn = DelayedResumer(out, n, delay)
    with beam.Pipeline(options=opts) as p:
        _ = p | beam.Impulse() | beam.ParDo(fn, tracker=beam.DoFn.RestrictionParam(fn))

    calls = []
    for name in os.listdir(out):
        with open(os.path.join(out, name)) as f:
            calls.append(json.load(f))
    calls.sort(key=lambda r: r["began"])
    assert len(calls) >= n, calls
    waits = [round(b["began"] - a["returned"], 3) for a, b in zip(calls, calls[1:])]
    assert all(w >= delay for w in waits), f"resumed {waits} s after deferring {delay} s"
