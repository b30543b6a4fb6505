"""Differential checks: each pipeline runs on Python's DirectRunner and on
the job server, and their outputs must be identical, line for line.

The source is a splittable DoFn over an offset range, cut into many initial
restrictions, so the runner runs the downstream stages as many bundles in
parallel and may split running ones: wrong counts hide at those sizes, not
in a 100-element Create. Outputs go through WriteToText (several shards)
and are compared as multisets of lines; user metrics must agree too.
"""
import collections
import glob
import os
import typing

import apache_beam as beam
import pytest
from apache_beam import window
from apache_beam.coders import VarIntCoder
from apache_beam.io.restriction_trackers import OffsetRange
from apache_beam.io.restriction_trackers import OffsetRestrictionTracker
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms import userstate
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.utils.timestamp import Duration

# Each test runs its pipeline twice; 30 s is its budget on a loaded
# 2-core machine, the limit only catches hangs.
timeout = pytest.mark.timeout(240, method="thread")

CHUNK = 1000  # offsets per initial restriction
NS = "differential"  # user metrics namespace


class _Ranges(beam.transforms.core.RestrictionProvider):
    def initial_restriction(self, n):
        return OffsetRange(0, n)

    def create_tracker(self, r):
        return OffsetRestrictionTracker(r)

    def split(self, n, r):
        for s in range(r.start, r.stop, CHUNK):
            yield OffsetRange(s, min(s + CHUNK, r.stop))

    def restriction_size(self, n, r):
        return r.size()


class _Gen(beam.DoFn):
    """Emits 0..n-1, element i at event time i/100 s."""
    def process(self, n, tracker=beam.DoFn.RestrictionParam(_Ranges())):
        i = tracker.current_restriction().start
        while tracker.try_claim(i):
            yield window.TimestampedValue(i, i / 100.0)
            i += 1


def gen(p, n, label="Gen"):
    return (p | f"{label}Seed" >> beam.Create([n])
            | label >> beam.ParDo(_Gen()))


def run(options, build, out_dir):
    """Runs build(pipeline) -> {name: PCollection}; returns the lines each
    output wrote and the user metrics' committed values."""
    p = beam.Pipeline(options=options)
    outs = build(p)
    for name, pc in outs.items():
        _ = (pc | f"Repr{name}" >> beam.Map(repr)
             | f"Write{name}" >> beam.io.WriteToText(os.path.join(out_dir, name)))
    result = p.run()
    result.wait_until_finish()
    lines = {}
    for name in outs:
        got = collections.Counter()
        for path in glob.glob(os.path.join(out_dir, name) + "*"):
            with open(path) as f:
                got.update(f.read().splitlines())
        lines[name] = got
    q = result.metrics().query(MetricsFilter().with_namespace(NS))
    metrics = {}
    for c in q["counters"]:
        metrics["counter " + c.key.metric.name] = c.committed
    for d in q["distributions"]:
        v = d.committed
        metrics["distribution " + d.key.metric.name] = (v.count, v.sum, v.min, v.max)
    return lines, metrics


def check_same(options, tmp_path, build):
    want, want_m = run(PipelineOptions(["--runner=DirectRunner"]), build,
                       str(tmp_path / "direct"))
    got, got_m = run(options, build, str(tmp_path / "runner"))
    for name in want:
        assert sum(want[name].values()) > 0, f"{name}: the direct runner wrote nothing"
        only_direct = list((want[name] - got[name]).items())[:5]
        only_runner = list((got[name] - want[name]).items())[:5]
        assert want[name] == got[name], (
            f"{name}: {sum(want[name].values())} lines from the direct runner, "
            f"{sum(got[name].values())} from the runner; only direct: "
            f"{only_direct}; only runner: {only_runner}")
    assert want_m == got_m


class _Tag(beam.DoFn):
    def process(self, i):
        Metrics.counter(NS, "seen").inc()
        Metrics.distribution(NS, "mod1000").update(i % 1000)
        if i % 3 == 0:
            yield beam.pvalue.TaggedOutput("three", i)
        if i % 2 == 0:
            yield beam.pvalue.TaggedOutput("two", i)
        yield i


@timeout
def test_multi_output_flatten_and_metrics(options, tmp_path):
    def build(p):
        r = gen(p, 100_000) | beam.ParDo(_Tag()).with_outputs("three", "two", main="main")
        every = (r.main, r.three, r.two) | "All" >> beam.Flatten()
        twice = (r.two, r.two) | "Twice" >> beam.Flatten()
        return {
            "every": every | "K1" >> beam.Map(lambda x: (x % 100, 1)) | "S1" >> beam.CombinePerKey(sum),
            "twice": twice | "K2" >> beam.Map(lambda x: (x % 50, 1)) | "S2" >> beam.CombinePerKey(sum),
            "three": r.three | beam.combiners.Count.Globally(),
        }
    check_same(options, tmp_path, build)


class _Mean(beam.CombineFn):
    def create_accumulator(self):
        return 0, 0

    def add_input(self, acc, x):
        return acc[0] + x, acc[1] + 1

    def merge_accumulators(self, accs):
        accs = list(accs)
        return sum(a[0] for a in accs), sum(a[1] for a in accs)

    def extract_output(self, acc):
        return acc


@timeout
def test_combines(options, tmp_path):
    def build(p):
        src = gen(p, 60_000)
        kv = src | "KV" >> beam.Map(lambda i: (i % 101, i))
        win = src | "Fixed50" >> beam.WindowInto(window.FixedWindows(50))
        return {
            "per_key": kv | "SumPerKey" >> beam.CombinePerKey(sum),
            "custom": kv | "Custom" >> beam.CombinePerKey(_Mean()),
            "global": src | "Global" >> beam.CombineGlobally(_Mean()),
            "empty_default": (src | "None" >> beam.Filter(lambda x: x < 0)
                              | "Default" >> beam.CombineGlobally(sum)),
            "windowed": (win | "NoDefault" >> beam.CombineGlobally(sum).without_defaults()
                         | "Win" >> beam.ParDo(lambda x, w=beam.DoFn.WindowParam: [(str(w), x)])),
            "top": kv | beam.combiners.Top.PerKey(3),
            "mean": kv | beam.combiners.Mean.PerKey(),
        }
    check_same(options, tmp_path, build)


class _Describe(beam.DoFn):
    """One line per grouped (key, window): pane timing, counts, sums."""
    def process(self, kv, w=beam.DoFn.WindowParam, ts=beam.DoFn.TimestampParam,
                pane=beam.DoFn.PaneInfoParam):
        k, vs = kv
        if isinstance(vs, dict):
            vs = {tag: (len(list(v)), sum(v)) for tag, v in sorted(vs.items())}
        else:
            vs = (len(list(vs)), sum(vs))
        yield str(w), float(ts), k, pane.timing, vs


@timeout
def test_windowed_group_and_cogroup(options, tmp_path):
    def build(p):
        kv = gen(p, 20_000) | "KV" >> beam.Map(lambda i: (i % 13, i))
        gapped = kv | "Gaps" >> beam.Filter(lambda kv: (kv[1] // 500) % 3 != 0)
        other = (gen(p, 10_000, "Gen2") | "KV2" >> beam.Map(lambda i: (i % 13, -i))
                 | "Fixed100b" >> beam.WindowInto(window.FixedWindows(100)))
        return {
            "fixed": (kv | "Fixed" >> beam.WindowInto(window.FixedWindows(37))
                      | "G1" >> beam.GroupByKey() | "D1" >> beam.ParDo(_Describe())),
            "sliding": (kv | "Sliding" >> beam.WindowInto(window.SlidingWindows(60, 20))
                        | "G2" >> beam.GroupByKey() | "D2" >> beam.ParDo(_Describe())),
            "sessions": (gapped | "Sessions" >> beam.WindowInto(window.Sessions(4))
                         | "G3" >> beam.GroupByKey() | "D3" >> beam.ParDo(_Describe())),
            "cogroup": ({"a": kv | "Fixed100" >> beam.WindowInto(window.FixedWindows(100)),
                         "b": other} | beam.CoGroupByKey() | "D4" >> beam.ParDo(_Describe())),
        }
    check_same(options, tmp_path, build)


@timeout
def test_side_inputs(options, tmp_path):
    # Iterable and multimap side inputs are read through the state API for
    # each element, so this one stays small.
    def build(p):
        src = gen(p, 5_000)
        total = src | "Total" >> beam.CombineGlobally(sum)
        digits = p | "Digits" >> beam.Create(list(range(10)))
        squares = p | "Squares" >> beam.Create([(i, str(i * i)) for i in range(10)])
        sevens = p | "Sevens" >> beam.Create([(i % 7, i) for i in range(50)])
        both = (digits, digits) | "Twice" >> beam.Flatten()

        def use(x, tot, it, lst, dct, mm, twice):
            return (x % 10, x + tot + sum(it) + len(lst) + len(dct[x % 10])
                    + sum(mm[x % 7]) + len(twice))
        out = src | "Use" >> beam.Map(
            use, beam.pvalue.AsSingleton(total), beam.pvalue.AsIter(digits),
            beam.pvalue.AsList(digits), beam.pvalue.AsDict(squares),
            beam.pvalue.AsMultiMap(sevens), beam.pvalue.AsList(both))
        return {"side": out | beam.CombinePerKey(sum),
                "flattened_main": both | "Count" >> beam.combiners.Count.PerElement()}
    check_same(options, tmp_path, build)


@timeout
def test_windowed_side_input(options, tmp_path):
    def build(p):
        src = gen(p, 40_000)
        sums = (src | "Fixed60" >> beam.WindowInto(window.FixedWindows(60))
                | "Sum" >> beam.CombineGlobally(sum).without_defaults())
        out = (src | "Fixed30" >> beam.WindowInto(window.FixedWindows(30))
               | "Use" >> beam.Map(lambda x, s: (x // 3000, x + s), beam.pvalue.AsSingleton(sums))
               | "Global" >> beam.WindowInto(window.GlobalWindows()))
        return {"windowed_side": out | beam.CombinePerKey(sum)}
    check_same(options, tmp_path, build)


@timeout
def test_reshuffle_distinct_partition(options, tmp_path):
    def build(p):
        src = gen(p, 60_000)
        outs = {
            "reshuffle": (src | beam.Reshuffle() | "K" >> beam.Map(lambda x: (x % 17, x))
                          | beam.CombinePerKey(sum)),
            "distinct": src | "Mod" >> beam.Map(lambda x: x % 977) | beam.Distinct(),
        }
        for i, part in enumerate(src | beam.Partition(lambda x, k: x % k, 4)):
            outs[f"part{i}"] = part | f"Count{i}" >> beam.combiners.Count.Globally()
        return outs
    check_same(options, tmp_path, build)


class _SelfCheckpoint(beam.DoFn):
    """Claims at most 997 offsets per call, then defers the rest."""
    def process(self, n, tracker=beam.DoFn.RestrictionParam(_Ranges())):
        i = tracker.current_restriction().start
        for _ in range(997):
            if not tracker.try_claim(i):
                return
            yield i
            i += 1
        tracker.defer_remainder(Duration(0))


@timeout
def test_self_checkpointing_sdf(options, tmp_path):
    def build(p):
        out = p | beam.Create([150_000, 50_000, 7]) | beam.ParDo(_SelfCheckpoint())
        return {"by_digit": out | "K" >> beam.Map(lambda x: (x % 10, 1)) | beam.CombinePerKey(sum),
                "total": out | beam.combiners.Count.Globally()}
    check_same(options, tmp_path, build)


class _AllState(beam.DoFn):
    """Bag, value, combining and set state of a key, emitted and cleared by
    an event-time timer at the end of the window."""
    BAG = userstate.BagStateSpec("bag", VarIntCoder())
    MAX = userstate.ReadModifyWriteStateSpec("max", VarIntCoder())
    SUM = userstate.CombiningValueStateSpec("sum", combine_fn=sum)
    DIGITS = userstate.SetStateSpec("digits", VarIntCoder())
    END = userstate.TimerSpec("end", TimeDomain.WATERMARK)

    def process(self, kv, bag=beam.DoFn.StateParam(BAG), mx=beam.DoFn.StateParam(MAX),
                sm=beam.DoFn.StateParam(SUM), digits=beam.DoFn.StateParam(DIGITS),
                end=beam.DoFn.TimerParam(END), w=beam.DoFn.WindowParam):
        v = kv[1]
        cur = mx.read()
        if cur is None:
            # Once per key: Python's DirectRunner fails to decode thousands
            # of timer writes from one bundle.
            end.set(w.max_timestamp())
            cur = v
        mx.write(max(cur, v))
        bag.add(v)
        sm.add(v)
        digits.add(v % 10)

    @userstate.on_timer(END)
    def fire(self, key=beam.DoFn.KeyParam, bag=beam.DoFn.StateParam(BAG),
             mx=beam.DoFn.StateParam(MAX), sm=beam.DoFn.StateParam(SUM),
             digits=beam.DoFn.StateParam(DIGITS)):
        values = list(bag.read())
        yield key, len(values), sum(values), mx.read(), sm.read(), sorted(digits.read())


class _TimerLoop(beam.DoFn):
    """Each key's event-time timer fires five times, 10 s apart."""
    COUNT = userstate.ReadModifyWriteStateSpec("count", VarIntCoder())
    T = userstate.TimerSpec("t", TimeDomain.WATERMARK)

    def process(self, kv, count=beam.DoFn.StateParam(COUNT), t=beam.DoFn.TimerParam(T),
                ts=beam.DoFn.TimestampParam):
        if count.read() is None:
            count.write(0)
            t.set(ts + 10)

    @userstate.on_timer(T)
    def fire(self, key=beam.DoFn.KeyParam, count=beam.DoFn.StateParam(COUNT),
             t=beam.DoFn.TimerParam(T), ts=beam.DoFn.TimestampParam):
        c = count.read() + 1
        count.write(c)
        yield key, c, float(ts)
        if c < 5:
            t.set(ts + 10)


@timeout
def test_user_state_and_timers(options, tmp_path):
    def build(p):
        kv = (gen(p, 5_000) | "KV" >> beam.Map(lambda i: (i % 11, i))
              .with_output_types(typing.Tuple[int, int]))
        return {"state": kv | "State" >> beam.ParDo(_AllState()),
                "timers": kv | "Timers" >> beam.ParDo(_TimerLoop())}
    check_same(options, tmp_path, build)


@timeout
def test_read_several_text_files(options, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for f in range(3):
        with open(src / f"part{f}.txt", "w") as out:
            for i in range(40_000):
                out.write(" ".join(f"w{(i * 7 + j * f) % 3001}" for j in range(i % 6)) + "\n")

    def build(p):
        lines = p | beam.io.ReadFromText(str(src / "part*.txt"))
        return {"words": lines | beam.FlatMap(str.split) | beam.combiners.Count.PerElement(),
                "lines": lines | "Lines" >> beam.combiners.Count.Globally()}
    check_same(options, tmp_path, build)
