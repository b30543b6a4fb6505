package org.beamrunner.validates;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.apache.beam.sdk.testing.NeedsRunner;
import org.apache.beam.sdk.testing.PAssert;
import org.apache.beam.sdk.testing.TestPipeline;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.GroupByKey;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.PeriodicSequence;
import org.apache.beam.sdk.transforms.SerializableFunction;
import org.apache.beam.sdk.transforms.WithKeys;
import org.apache.beam.sdk.transforms.windowing.FixedWindows;
import org.apache.beam.sdk.transforms.windowing.Window;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.TimestampedValue;
import org.apache.beam.sdk.values.TypeDescriptor;
import org.apache.beam.vendor.guava.v32_1_2_jre.com.google.common.collect.Iterables;
import org.joda.time.Duration;
import org.joda.time.Instant;
import org.junit.Rule;
import org.junit.Test;
import org.junit.experimental.categories.Category;
import org.junit.runner.RunWith;
import org.junit.runners.JUnit4;

/**
 * Resume delays on the wall clock, Java's test of issue 39 item 3 (as
 * runner/execute/resumedelay_test.go is Go's and validates/python/test_processing_time.py
 * Python's). Beam's own PeriodicSequence, not caught up to now (its catchUpToNow=false), claims
 * one tick per call and returns resume().withResumeDelay(interval), setting its manual watermark
 * estimate to the tick it is about to claim. So:
 *
 * <ul>
 *   <li>its outputs, seen in a DoFn fused after it, come at least one interval apart on the wall
 *       clock: a runner that resumed a residual before its delay would bring two closer;
 *   <li>after fixed windows of one interval and a GroupByKey, every tick comes out (a runner
 *       that let the watermark run ahead of the estimate would drop later ticks as late), and
 *       the windows fire as the watermark passes each, spread over the run: a runner that held
 *       them to the end would hand them out together.
 * </ul>
 *
 * Beam's PeriodicSequenceTest#testOutputsProperElements checks the second with a sequence that
 * starts 2 s after the pipeline is built, which a portable client's submission outlasts (see
 * validates/expected_java_needsrunner.txt); here the sequence starts in the past and paces itself.
 */
@RunWith(JUnit4.class)
public class PeriodicPacingTest {
  private static final Duration INTERVAL = Duration.millis(400);
  private static final int TICKS = 10;

  @Rule public final transient TestPipeline p = TestPipeline.create();

  /** Each element with the wall-clock time it reached this DoFn. */
  static class SeenAt<T> extends DoFn<T, TimestampedValue<T>> {
    @ProcessElement
    public void process(@Element T e, OutputReceiver<TimestampedValue<T>> out) {
      out.output(TimestampedValue.of(e, Instant.now()));
    }
  }

  @Test
  @Category(NeedsRunner.class)
  public void testResumedOutputsPacedAndWindowsFireInTurn() {
    Instant first = new Instant(Instant.now().getMillis() / 1000 * 1000 - 10_000);
    Instant last = first.plus(INTERVAL.multipliedBy(TICKS - 1));
    List<Instant> ticks = new ArrayList<>();
    for (int i = 0; i < TICKS; i++) {
      ticks.add(first.plus(INTERVAL.multipliedBy(i)));
    }
    PCollection<Instant> seq =
        p.apply(Create.of(new PeriodicSequence.SequenceDefinition(first, last, INTERVAL, false)))
            .apply(PeriodicSequence.create());

    PCollection<TimestampedValue<Instant>> direct = seq.apply("SeenDirect", ParDo.of(new SeenAt<>()));
    PAssert.that(direct).satisfies(check(ticks, INTERVAL.getMillis(), 0));

    PCollection<TimestampedValue<Instant>> grouped =
        seq.apply(Window.<Instant>into(FixedWindows.of(INTERVAL)))
            .apply(WithKeys.of("k"))
            .apply(GroupByKey.create())
            .apply(
                MapElements.into(TypeDescriptor.of(Instant.class))
                    .via((KV<String, Iterable<Instant>> kv) -> Iterables.getOnlyElement(kv.getValue())))
            .apply("SeenGrouped", ParDo.of(new SeenAt<>()));
    PAssert.that(grouped).satisfies(check(ticks, 0, 2 * INTERVAL.getMillis()));

    p.run().waitUntilFinish();
  }

  /**
   * Requires exactly the ticks, consecutive ones (in wall-clock order) at least minGap ms apart,
   * and the first and last more than minSpread ms apart.
   */
  static SerializableFunction<Iterable<TimestampedValue<Instant>>, Void> check(
      List<Instant> ticks, long minGap, long minSpread) {
    return seen -> {
      List<TimestampedValue<Instant>> byWall =
          StreamSupport.stream(seen.spliterator(), false)
              .sorted(Comparator.comparing(TimestampedValue::getTimestamp))
              .collect(Collectors.toList());
      List<Instant> values =
          byWall.stream().map(TimestampedValue::getValue).sorted().collect(Collectors.toList());
      assertEquals(ticks, values);
      List<Long> gaps = new ArrayList<>();
      for (int i = 1; i < byWall.size(); i++) {
        gaps.add(byWall.get(i).getTimestamp().getMillis() - byWall.get(i - 1).getTimestamp().getMillis());
      }
      assertTrue("outputs " + gaps + " ms apart, want each >= " + minGap,
          gaps.stream().allMatch(g -> g >= minGap));
      long spread = gaps.stream().mapToLong(Long::longValue).sum();
      assertTrue("outputs " + gaps + " ms apart, " + spread + " in all, want > " + minSpread,
          spread > minSpread);
      return null;
    };
  }
}
