"""Submits a version of a streaming pipeline to a beam-runner job server
and exits without waiting (os._exit: the job outlives the client; an
update stops it): PeriodicImpulse from --start for --seconds every
--interval; each tick keyed by (its timestamp in ms // interval ms) % 3;
a stateful DoFn keeping each key's running count (distribution
"seen_k<key>") and flushing it from an event-time timer chain while the key's
ticks flow ("flushed_k<key>"); one-second fixed windows, a GroupByKey, and per key
and window the count (counter "count_w<window start ms>_k<key>") and
how many times it fired ("fires_w..."), all in namespace "counting", as
testsupport/counting's Go pipeline reports them. --version 2 adds a
stateless step after the stateful one; --version 3 also names the
stateful step "Tally" instead of "Running". Other flags (--job_name,
--update, --transform_name_mapping) go to the pipeline options, where
Beam's GoogleCloudOptions declares them. Prints the job id."""

import argparse
import os
import typing

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.portable_runner import PortableRunner
from apache_beam.transforms import userstate
from apache_beam.transforms import window
from apache_beam.transforms.periodicsequence import PeriodicImpulse

NS = "counting"


class Running(beam.DoFn):
    """testsupport/counting's runningFn: each key's running count, and a
    timer chain armed by its first element that re-arms a second later
    while the key had an element within the second before the firing
    (LAST: its latest element's time in ms), so that its last firing,
    past every element, finds the key's total."""
    SEEN = userstate.ReadModifyWriteStateSpec("seen", VarIntCoder())
    LAST = userstate.ReadModifyWriteStateSpec("last", VarIntCoder())
    FLUSH = userstate.TimerSpec("flush", userstate.TimeDomain.WATERMARK)

    def process(self, kv, ts=beam.DoFn.TimestampParam, seen=beam.DoFn.StateParam(SEEN),
                last=beam.DoFn.StateParam(LAST), flush=beam.DoFn.TimerParam(FLUSH)):
        k, v = kv
        n = (seen.read() or 0) + 1
        seen.write(n)
        if n == 1:
            flush.set(ts + 1)
        ms = ts.micros // 1000
        if last.read() is None or last.read() < ms:
            last.write(ms)
        Metrics.distribution(NS, "seen_k%d" % k).update(n)
        yield k, v

    @userstate.on_timer(FLUSH)
    def on_flush(self, key=beam.DoFn.KeyParam, ts=beam.DoFn.TimestampParam, seen=beam.DoFn.StateParam(SEEN),
                 last=beam.DoFn.StateParam(LAST), flush=beam.DoFn.TimerParam(FLUSH)):
        Metrics.distribution(NS, "flushed_k%d" % key).update(seen.read() or 0)
        if ts.micros // 1000 - 1000 <= (last.read() or 0):
            flush.set(ts + 1)


class Report(beam.DoFn):
    def process(self, kv, w=beam.DoFn.WindowParam):
        k, vs = kv
        suffix = "_w%d_k%d" % (int(round(float(w.start) * 1000)), k)
        Metrics.counter(NS, "count" + suffix).inc(sum(1 for _ in vs))
        Metrics.counter(NS, "fires" + suffix).inc()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--worker_pool", required=True)
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--interval", type=float, required=True)
    ap.add_argument("--version", type=int, default=1)
    a, rest = ap.parse_known_args()
    opts = PipelineOptions([
        "--job_endpoint=" + a.endpoint,
        "--environment_type=EXTERNAL",
        "--environment_config=" + a.worker_pool,
        "--streaming",
    ] + rest)
    interval_ms = int(round(a.interval * 1000))

    def keyed(ts):
        return int(round(float(ts) * 1000)) // interval_ms % 3, 1

    p = beam.Pipeline(runner=PortableRunner(), options=opts)
    seen = (p
            | "Ticks" >> PeriodicImpulse(start_timestamp=a.start, stop_timestamp=a.start + a.seconds,
                                         fire_interval=a.interval)
            | "Key" >> beam.Map(keyed).with_output_types(typing.Tuple[int, int])
            | ("Tally" if a.version >= 3 else "Running") >> beam.ParDo(Running()).with_output_types(
                typing.Tuple[int, int]))
    if a.version >= 2:
        seen = seen | "Scale" >> beam.Map(lambda kv: kv).with_output_types(typing.Tuple[int, int])
    _ = (seen
         | "Window" >> beam.WindowInto(window.FixedWindows(1))
         | "Group" >> beam.GroupByKey()
         | "Report" >> beam.ParDo(Report()))
    res = p.run()
    print(res._job_id, flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
