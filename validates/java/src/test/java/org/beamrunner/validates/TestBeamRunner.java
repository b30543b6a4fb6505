package org.beamrunner.validates;

import java.util.List;
import org.apache.beam.model.jobmanagement.v1.JobApi.JobState;
import org.apache.beam.model.pipeline.v1.RunnerApi;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.PipelineRunner;
import org.apache.beam.sdk.options.PipelineOptions;
import org.apache.beam.sdk.testing.PAssert;
import org.apache.beam.sdk.util.construction.DefaultArtifactResolver;
import org.apache.beam.sdk.util.construction.Environments;
import org.apache.beam.sdk.util.construction.PipelineOptionsTranslation;
import org.apache.beam.sdk.util.construction.PipelineTranslation;
import org.apache.beam.sdk.util.construction.SdkComponents;
import org.apache.beam.sdk.util.construction.resources.PipelineResources;

/**
 * Runs a test pipeline on a portable job server through the Job API, as Beam's PortableRunner
 * does, waits for its end and requires DONE, as TestPrismRunner does, then checks PAssert's
 * success and failure counters, as TestDataflowRunner does: a job that skipped an assertion does
 * not pass.
 *
 * <p>With --beamRunnerBinary it starts a fresh server per pipeline (as TestPrismRunner starts
 * Prism); otherwise it submits to --jobEndpoint. With --defaultEnvironmentType=LOOPBACK the SDK
 * harness runs in this JVM.
 */
public class TestBeamRunner extends PipelineRunner<PipelineResult> {
  private final TestBeamRunnerOptions options;

  private TestBeamRunner(TestBeamRunnerOptions options) {
    this.options = options;
  }

  public static TestBeamRunner fromOptions(PipelineOptions options) {
    return new TestBeamRunner(options.as(TestBeamRunnerOptions.class));
  }

  @Override
  public PipelineResult run(Pipeline pipeline) {
    int asserts = PAssert.countAsserts(pipeline);
    FinishedJob job;
    try {
      job = runOnServer(pipeline);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new RuntimeException("running the pipeline on the job server", e);
    }
    PAssertCounters.check(job.metrics(), asserts);
    return job;
  }

  private FinishedJob runOnServer(Pipeline pipeline) throws Exception {
    String binary = options.getBeamRunnerBinary();
    if (binary == null || binary.isEmpty()) {
      String endpoint = options.getJobEndpoint();
      if (endpoint == null || endpoint.isEmpty()) {
        throw new IllegalArgumentException("set --jobEndpoint or --beamRunnerBinary");
      }
      return runOn(pipeline, endpoint);
    }
    try (JobServerProcess server =
        JobServerProcess.start(
            binary, options.getBeamRunnerArgs(), options.getBeamRunnerLogDir(), options.getJobName())) {
      options.setJobEndpoint(server.endpoint());
      try {
        return runOn(pipeline, server.endpoint());
      } catch (RuntimeException e) {
        server.checkAlive(); // a dead server explains the failure better
        throw e;
      }
    }
  }

  private FinishedJob runOn(Pipeline pipeline, String endpoint) throws Exception {
    long t0 = System.currentTimeMillis();
    LoopbackWorkers workers = null;
    if (Environments.ENVIRONMENT_LOOPBACK.equals(options.getDefaultEnvironmentType())) {
      workers = LoopbackWorkers.start(options);
      options.setDefaultEnvironmentConfig(workers.url());
    }
    try (JobClient client = new JobClient(endpoint)) {
      RunnerApi.Pipeline proto = toProto(pipeline);
      long t1 = System.currentTimeMillis();
      String jobId =
          client.submit(
              proto,
              PipelineOptionsTranslation.toProto(options),
              options.getJobName(),
              options.getJobServerTimeout());
      long t2 = System.currentTimeMillis();
      JobMessages messages = client.followMessages(jobId);
      try {
        return await(client, jobId, messages);
      } finally {
        messages.stop();
        // Where a test's time goes, client side: grep "job timing" in the
        // class's -output.txt. Not logged: while a LOOPBACK harness runs in
        // this JVM, Beam's logging client sends java.util.logging records to
        // the runner instead.
        System.err.printf(
            "job timing %s: translate %d ms, prepare %d ms, stage %d ms, run %d ms, to end %d ms%n",
            jobId,
            t1 - t0,
            client.prepareMillis,
            client.stageMillis,
            client.runMillis,
            System.currentTimeMillis() - t2);
      }
    } finally {
      if (workers != null) {
        workers.close();
      }
    }
  }

  /** The pipeline as PortableRunner sends it: environments carry the classpath to stage. */
  private RunnerApi.Pipeline toProto(Pipeline pipeline) {
    List<String> files = options.getFilesToStage();
    if (files == null) {
      files =
          PipelineResources.detectClassPathResourcesToStage(
              Environments.class.getClassLoader(), options);
      if (files.isEmpty()) {
        throw new IllegalArgumentException("no classpath elements to stage");
      }
      options.setFilesToStage(files);
    }
    RunnerApi.Pipeline proto = PipelineTranslation.toProto(pipeline, SdkComponents.create(options));
    return DefaultArtifactResolver.INSTANCE.resolveArtifacts(proto);
  }

  private FinishedJob await(JobClient client, String jobId, JobMessages messages)
      throws Exception {
    long timeout = options.getTestTimeoutSeconds();
    JobState.Enum end = client.awaitTerminal(jobId, timeout);
    if (end == null) {
      JobState.Enum after = client.cancel(jobId);
      throw new AssertionError(
          "job " + jobId + " did not finish within " + timeout + " s; cancelled (" + after + ")");
    }
    if (end != JobState.Enum.DONE) {
      // Beam's PortableRunner words it so; tests that expect a failure look for a RuntimeException.
      throw new RuntimeException(
          "The Runner experienced the following error during execution:\n"
              + "job "
              + jobId
              + " ended "
              + end
              + "\n"
              + messages.errors(5_000));
    }
    return new FinishedJob(PipelineResult.State.DONE, new JobMetrics(client.metrics(jobId)));
  }
}
