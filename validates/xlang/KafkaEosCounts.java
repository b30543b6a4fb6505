// The Java pipeline of the exactly-once check (eos_test.go): KafkaIO reads
// a topic, fixed windows over the records' create times, a count per key
// and window, and KafkaIO's exactly-once write (withEOS) of
// KEY -> "WINDOW_START_MS COUNT" to a second topic. It translates itself
// as Beam's PortableRunner would, with Java's default environment (the SDK
// image of the running Java) and its classpath to stage, and writes the
// pipeline and its options as binary protos for the test to submit.
//
//   java -cp 'expansion/lib/*:.' KafkaEosCounts OUT_DIR BOOTSTRAP IN_TOPIC OUT_TOPIC WINDOW_S SHARDS SINK_GROUP
//
// KafkaIO.WriteRecords.validate refuses EOS on any runner but Direct,
// Dataflow, Spark and Flink. Pipeline.run calls it; translating the
// pipeline, as here, does not, so beam-runner gets the job, and the test
// shows whether its checkpoints give the sink what it relies on.
import java.io.File;
import java.io.FileOutputStream;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.beam.model.pipeline.v1.RunnerApi;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.io.kafka.KafkaIO;
import org.apache.beam.sdk.io.kafka.KafkaRecord;
import org.apache.beam.sdk.io.kafka.TimestampPolicy;
import org.apache.beam.sdk.options.ExperimentalOptions;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.PortablePipelineOptions;
import org.apache.beam.sdk.options.StreamingOptions;
import org.apache.beam.sdk.testing.CrashingRunner;
import org.apache.beam.sdk.transforms.Count;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.windowing.BoundedWindow;
import org.apache.beam.sdk.transforms.windowing.FixedWindows;
import org.apache.beam.sdk.transforms.windowing.IntervalWindow;
import org.apache.beam.sdk.transforms.windowing.Window;
import org.apache.beam.sdk.util.construction.DefaultArtifactResolver;
import org.apache.beam.sdk.util.construction.PipelineOptionsTranslation;
import org.apache.beam.sdk.util.construction.PipelineTranslation;
import org.apache.beam.sdk.util.construction.SdkComponents;
import org.apache.beam.sdk.values.KV;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.joda.time.Duration;
import org.joda.time.Instant;

public class KafkaEosCounts {
  public static void main(String[] args) throws Exception {
    if (args.length != 7) {
      System.err.println("usage: OUT_DIR BOOTSTRAP IN_TOPIC OUT_TOPIC WINDOW_S SHARDS SINK_GROUP");
      System.exit(2);
    }
    File out = new File(args[0]);
    String bootstrap = args[1];
    PortablePipelineOptions options = PipelineOptionsFactory.create().as(PortablePipelineOptions.class);
    options.setJobName("kafka-eos");
    options.as(StreamingOptions.class).setStreaming(true);
    // As Beam's PortableRunner sets it: KafkaIO then reads with its
    // splittable DoFn, not its legacy source in a wrapper.
    options.as(ExperimentalOptions.class).setExperiments(List.of("beam_fn_api"));
    // Never run here: the test submits the translated pipeline.
    options.setRunner(CrashingRunner.class);
    List<String> classpath = Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator));
    options.setFilesToStage(classpath);

    Pipeline p = Pipeline.create(options);
    p.apply("Read", KafkaIO.<String, String>read()
            .withBootstrapServers(bootstrap)
            .withTopic(args[2])
            .withKeyDeserializer(StringDeserializer.class)
            .withValueDeserializer(StringDeserializer.class)
            .withConsumerConfigUpdates(Map.of("auto.offset.reset", "earliest"))
            // Create times, and a watermark that follows them alone (the
            // test produces each partition in create-time order): the
            // windows fire on the records, never on the clock.
            .withTimestampPolicyFactory(RecordTimePolicy::new)
            .withoutMetadata())
        .apply(Window.into(FixedWindows.of(Duration.standardSeconds(Long.parseLong(args[4])))))
        .apply(Count.perKey())
        .apply("Format", ParDo.of(new FormatCount()))
        .apply("WriteExactlyOnce", KafkaIO.<String, String>write()
            .withBootstrapServers(bootstrap)
            .withTopic(args[3])
            .withKeySerializer(StringSerializer.class)
            .withValueSerializer(StringSerializer.class)
            .withEOS(Integer.parseInt(args[5]), args[6]));

    RunnerApi.Pipeline proto = PipelineTranslation.toProto(p, SdkComponents.create(options));
    // The classpath's artifacts are deferred until resolved into files.
    proto = DefaultArtifactResolver.INSTANCE.resolveArtifacts(proto);
    try (FileOutputStream f = new FileOutputStream(new File(out, "pipeline.pb"))) {
      proto.writeTo(f);
    }
    try (FileOutputStream f = new FileOutputStream(new File(out, "options.pb"))) {
      PipelineOptionsTranslation.toProto(options).writeTo(f);
    }
  }

  /**
   * A partition's watermark is the greatest create time read from it. KafkaIO's
   * withCreateTime follows the clock instead whenever the clock is behind
   * the records or the partition looks idle (as a fresh consumer does after
   * a restart), so how long a restarted server takes to catch up would decide
   * which records come late and are dropped; here only the records do.
   */
  static class RecordTimePolicy extends TimestampPolicy<String, String> {
    private Instant max;

    RecordTimePolicy(TopicPartition tp, Optional<Instant> previousWatermark) {
      max = previousWatermark.orElse(BoundedWindow.TIMESTAMP_MIN_VALUE);
    }

    @Override
    public Instant getTimestampForRecord(PartitionContext ctx, KafkaRecord<String, String> record) {
      Instant ts = new Instant(record.getTimestamp());
      if (ts.isAfter(max)) {
        max = ts;
      }
      return ts;
    }

    @Override
    public Instant getWatermark(PartitionContext ctx) {
      return max;
    }
  }

  /** KEY, COUNT -> KEY, "WINDOW_START_MS COUNT", as the test reads it back. */
  static class FormatCount extends DoFn<KV<String, Long>, KV<String, String>> {
    @ProcessElement
    public void process(@Element KV<String, Long> kv, BoundedWindow w, OutputReceiver<KV<String, String>> out) {
      long start = ((IntervalWindow) w).start().getMillis();
      out.output(KV.of(kv.getKey(), start + " " + kv.getValue()));
    }
  }
}
