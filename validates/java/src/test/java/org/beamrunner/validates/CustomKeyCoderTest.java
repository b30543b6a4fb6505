package org.beamrunner.validates;

import static org.junit.Assert.assertTrue;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.beam.sdk.coders.AtomicCoder;
import org.apache.beam.sdk.coders.CoderException;
import org.apache.beam.sdk.coders.KvCoder;
import org.apache.beam.sdk.coders.VarLongCoder;
import org.apache.beam.sdk.coders.VoidCoder;
import org.apache.beam.sdk.metrics.Counter;
import org.apache.beam.sdk.metrics.MetricNameFilter;
import org.apache.beam.sdk.metrics.MetricResult;
import org.apache.beam.sdk.metrics.Metrics;
import org.apache.beam.sdk.metrics.MetricsFilter;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.state.StateSpec;
import org.apache.beam.sdk.state.StateSpecs;
import org.apache.beam.sdk.state.ValueState;
import org.apache.beam.sdk.testing.NeedsRunner;
import org.apache.beam.sdk.testing.PAssert;
import org.apache.beam.sdk.testing.TestPipeline;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.GroupByKey;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.Reshuffle;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.junit.Rule;
import org.junit.Test;
import org.junit.experimental.categories.Category;
import org.junit.runner.RunWith;
import org.junit.runners.JUnit4;

/**
 * Keys whose coder the runner cannot read (issue 39): a Java-only AtomicCoder, which the runner
 * must length-prefix and then group and key state by its bytes alone, and VoidCoder, whose keys
 * encode to no bytes at all. Many elements behind a Reshuffle give the runner a long keying stage
 * (the Reshuffle's expansion, which keys elements for the stateful DoFn) to split, and the
 * custom-key stateful stage several bundles; per-key state must carry across bundles and each
 * element be processed exactly once, so the stateful DoFn's running counts of a key are exactly
 * 1..n. Beam's own suite has no such test that ends on a portable runner (see
 * validates/expected_java_needsrunner.txt). NeedsRunner: the lane runs only the listed ones.
 */
@RunWith(JUnit4.class)
public class CustomKeyCoderTest {
  private static final int ELEMENTS = 20_000;
  private static final int KEYS = 13;
  private static final int VOID_ELEMENTS = ELEMENTS;
  private static final int PAUSE_EVERY = 100;
  private static final long PAUSE_MILLIS = 5;
  private static final String BUNDLES = "runningCountBundles";

  private static final KvCoder<Key, Long> KEYED = KvCoder.of(new KeyCoder(), VarLongCoder.of());

  @Rule public final transient TestPipeline p = TestPipeline.create();

  /** A key of the test's own type, so no standard coder can encode it. */
  static final class Key implements Serializable {
    final int id;

    Key(int id) {
      this.id = id;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key && ((Key) o).id == id;
    }

    @Override
    public int hashCode() {
      return id;
    }

    @Override
    public String toString() {
      return "Key(" + id + ")";
    }
  }

  /**
   * A tag byte then the id as 4 big-endian bytes: fixed-width, deterministic, and not
   * self-delimiting in the runner's eyes (it knows only the Java class name).
   */
  static final class KeyCoder extends AtomicCoder<Key> {
    private static final int TAG = 0x4b;

    @Override
    public void encode(Key key, OutputStream out) throws IOException {
      DataOutputStream data = new DataOutputStream(out);
      data.writeByte(TAG);
      data.writeInt(key.id);
      data.flush();
    }

    @Override
    public Key decode(InputStream in) throws IOException {
      DataInputStream data = new DataInputStream(in);
      int tag = data.readUnsignedByte();
      if (tag != TAG) {
        throw new CoderException("KeyCoder: tag " + tag + ", want " + TAG);
      }
      return new Key(data.readInt());
    }
  }

  /**
   * Outputs, per element, how many elements of its key it has seen so far (state per key). It
   * pauses now and then so that its stage's bundles run long enough for the runner to split them;
   * it counts its bundles, which must be more than one for state to be carried across bundles.
   */
  static final class RunningCount<K> extends DoFn<KV<K, Long>, KV<K, Long>> {
    private final Counter bundles = Metrics.counter(CustomKeyCoderTest.class, BUNDLES);

    @StateId("count")
    private final StateSpec<ValueState<Long>> countSpec = StateSpecs.value(VarLongCoder.of());

    @FinishBundle
    public void finishBundle() {
      bundles.inc();
    }

    @ProcessElement
    public void process(
        @Element KV<K, Long> element,
        @StateId("count") ValueState<Long> count,
        OutputReceiver<KV<K, Long>> out) {
      Long seen = count.read();
      long next = (seen == null ? 0 : seen) + 1;
      count.write(next);
      if (next % PAUSE_EVERY == 0) {
        try {
          Thread.sleep(PAUSE_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new RuntimeException(e);
        }
      }
      out.output(KV.of(element.getKey(), next));
    }
  }

  /** A group's size: each key's one group must hold all its elements. */
  static final class GroupSize<K> extends DoFn<KV<K, Iterable<Long>>, KV<K, Long>> {
    @ProcessElement
    public void process(@Element KV<K, Iterable<Long>> group, OutputReceiver<KV<K, Long>> out) {
      long n = 0;
      for (Long ignored : group.getValue()) {
        n++;
      }
      out.output(KV.of(group.getKey(), n));
    }
  }

  private static long perKey(int key) {
    return ELEMENTS / KEYS + (key < ELEMENTS % KEYS ? 1 : 0);
  }

  @Test
  @Category(NeedsRunner.class)
  public void testCustomKeyCoderStatefulAndGroupByKey() {
    List<KV<Key, Long>> input = new ArrayList<>();
    for (long i = 0; i < ELEMENTS; i++) {
      input.add(KV.of(new Key((int) (i % KEYS)), i));
    }
    PCollection<KV<Key, Long>> shuffled =
        p.apply(Create.of(input).withCoder(KEYED))
            .apply(Reshuffle.viaRandomKey());

    PCollection<KV<Key, Long>> counts =
        shuffled
            .apply("RunningCount", ParDo.of(new RunningCount<Key>()))
            .setCoder(KEYED);
    List<KV<Key, Long>> wantCounts = new ArrayList<>();
    List<KV<Key, Long>> wantSizes = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      for (long c = 1; c <= perKey(k); c++) {
        wantCounts.add(KV.of(new Key(k), c));
      }
      wantSizes.add(KV.of(new Key(k), perKey(k)));
    }
    PAssert.that(counts).containsInAnyOrder(wantCounts);

    PCollection<KV<Key, Long>> sizes =
        shuffled
            .apply(GroupByKey.create())
            .apply("GroupSize", ParDo.of(new GroupSize<Key>()))
            .setCoder(KEYED);
    PAssert.that(sizes).containsInAnyOrder(wantSizes);
    requireSeveralBundles(p.run());
  }

  @Test
  @Category(NeedsRunner.class)
  public void testVoidKeyStateful() {
    List<KV<Void, Long>> input = new ArrayList<>();
    List<Long> want = new ArrayList<>();
    for (long i = 0; i < VOID_ELEMENTS; i++) {
      input.add(KV.of((Void) null, i));
      want.add(i + 1);
    }
    PCollection<Long> counts =
        p.apply(Create.of(input).withCoder(KvCoder.of(VoidCoder.of(), VarLongCoder.of())))
            .apply(Reshuffle.viaRandomKey())
            .apply("RunningCount", ParDo.of(new RunningCount<Void>()))
            .setCoder(KvCoder.of(VoidCoder.of(), VarLongCoder.of()))
            .apply(MapElements.into(TypeDescriptors.longs()).via(KV::getValue));
    PAssert.that(counts).containsInAnyOrder(want);
    // One key: the runner may run the keyed stage as one bundle (it did, 20,000 elements), so
    // no bundle count is required here; the keying stage before it is split.
    p.run();
  }

  /** One bundle would hold all of a key's state in one place: nothing carried across bundles. */
  private static void requireSeveralBundles(PipelineResult result) {
    MetricsFilter filter =
        MetricsFilter.builder()
            .addNameFilter(MetricNameFilter.named(CustomKeyCoderTest.class, BUNDLES))
            .build();
    long n = 0;
    for (MetricResult<Long> c : result.metrics().queryMetrics(filter).getCounters()) {
      n += c.getAttempted();
    }
    assertTrue("the stateful DoFn ran " + n + " bundle(s); the test needs several", n > 1);
  }
}
