// A Java pipeline for the test of Java's default environment
// (javaenv_test.go): it translates itself as Beam's PortableRunner would,
// with Java's default environment (the SDK image of the running Java)
// and its classpath to stage, and writes the pipeline and its options as
// binary protos for the test to submit.
import java.io.FileOutputStream;
import java.io.File;
import java.util.Arrays;
import java.util.List;
import org.apache.beam.model.pipeline.v1.RunnerApi;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.PortablePipelineOptions;
import org.apache.beam.sdk.testing.CrashingRunner;
import org.apache.beam.sdk.testing.PAssert;
import org.apache.beam.sdk.transforms.Create;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.transforms.Sum;
import org.apache.beam.sdk.util.construction.DefaultArtifactResolver;
import org.apache.beam.sdk.util.construction.PipelineOptionsTranslation;
import org.apache.beam.sdk.util.construction.PipelineTranslation;
import org.apache.beam.sdk.util.construction.SdkComponents;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.TypeDescriptors;

public class JavaEnvPipeline {
  public static void main(String[] args) throws Exception {
    File out = new File(args[0]);
    PortablePipelineOptions options =
        PipelineOptionsFactory.fromArgs(Arrays.copyOfRange(args, 1, args.length))
            .as(PortablePipelineOptions.class);
    options.setJobName("javaenv");
    // Never run here: the test submits the translated pipeline.
    options.setRunner(CrashingRunner.class);
    List<String> classpath = Arrays.asList(System.getProperty("java.class.path").split(File.pathSeparator));
    options.setFilesToStage(classpath);

    Pipeline p = Pipeline.create(options);
    PCollection<Integer> tens =
        p.apply(Create.of(1, 2, 3, 4))
            .apply(MapElements.into(TypeDescriptors.integers()).via((Integer x) -> x * 10));
    PAssert.that(tens).containsInAnyOrder(10, 20, 30, 40);
    PCollection<KV<String, Integer>> sums =
        tens.apply(MapElements.into(TypeDescriptors.kvs(TypeDescriptors.strings(), TypeDescriptors.integers()))
                .via((Integer x) -> KV.of(x % 20 == 0 ? "even" : "odd", x)))
            .apply(Sum.integersPerKey());
    PAssert.that(sums).containsInAnyOrder(KV.of("even", 60), KV.of("odd", 40));

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
}
