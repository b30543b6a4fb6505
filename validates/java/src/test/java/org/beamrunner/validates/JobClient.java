package org.beamrunner.validates;

import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import org.apache.beam.model.jobmanagement.v1.ArtifactStagingServiceGrpc;
import org.apache.beam.model.jobmanagement.v1.JobApi;
import org.apache.beam.model.jobmanagement.v1.JobApi.JobState;
import org.apache.beam.model.jobmanagement.v1.JobServiceGrpc;
import org.apache.beam.model.jobmanagement.v1.JobServiceGrpc.JobServiceBlockingStub;
import org.apache.beam.model.pipeline.v1.Endpoints.ApiServiceDescriptor;
import org.apache.beam.model.pipeline.v1.RunnerApi;
import org.apache.beam.runners.fnexecution.artifact.ArtifactRetrievalService;
import org.apache.beam.runners.fnexecution.artifact.ArtifactStagingService;
import org.apache.beam.sdk.fn.channel.ManagedChannelFactory;
import org.apache.beam.vendor.grpc.v1p69p0.com.google.protobuf.Struct;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.ManagedChannel;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.Status;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.StatusRuntimeException;

/** The Job API calls a portable runner makes: Prepare, stage, Run, then watch one job. */
final class JobClient implements AutoCloseable {
  private static final ManagedChannelFactory CHANNELS = ManagedChannelFactory.createDefault();

  private final String endpoint;
  private final ManagedChannel channel;
  private final JobServiceBlockingStub jobs;
  /** Milliseconds of the last submit's steps, for the per-job timing line. */
  long prepareMillis, stageMillis, runMillis;

  JobClient(String endpoint) {
    this.endpoint = endpoint;
    this.channel = CHANNELS.forDescriptor(describe(endpoint));
    this.jobs = JobServiceGrpc.newBlockingStub(channel);
  }

  /**
   * Prepares the job, stages its artifacts (the environments' files) and runs it; returns the job
   * id. Prepare waits up to readySeconds for the server to answer: a server just started may not
   * listen yet.
   */
  String submit(RunnerApi.Pipeline pipeline, Struct options, String jobName, long readySeconds)
      throws Exception {
    long t0 = System.currentTimeMillis();
    JobApi.PrepareJobResponse prep =
        jobs.withWaitForReady()
            .withDeadlineAfter(readySeconds, TimeUnit.SECONDS)
            .prepare(
                JobApi.PrepareJobRequest.newBuilder()
                    .setPipeline(pipeline)
                    .setPipelineOptions(options)
                    .setJobName(jobName)
                    .build());
    long t1 = System.currentTimeMillis();
    stage(prep);
    long t2 = System.currentTimeMillis();
    JobApi.RunJobResponse run =
        jobs.run(
            JobApi.RunJobRequest.newBuilder().setPreparationId(prep.getPreparationId()).build());
    long t3 = System.currentTimeMillis();
    prepareMillis = t1 - t0;
    stageMillis = t2 - t1;
    runMillis = t3 - t2;
    return run.getJobId();
  }

  private void stage(JobApi.PrepareJobResponse prep) throws Exception {
    ApiServiceDescriptor at = prep.getArtifactStagingEndpoint();
    if (at.getUrl().isEmpty()) {
      at = describe(endpoint); // servers may serve staging on the job port
    }
    ManagedChannel staging = CHANNELS.forDescriptor(at);
    try {
      // The retrieval service reads the local files the environments name.
      ArtifactStagingService.offer(
          new ArtifactRetrievalService(),
          ArtifactStagingServiceGrpc.newStub(staging),
          prep.getStagingSessionToken());
    } finally {
      staging.shutdownNow();
    }
  }

  /**
   * Follows the job's state stream until a terminal state; null if timeoutSeconds pass first.
   */
  JobState.Enum awaitTerminal(String jobId, long timeoutSeconds) {
    Iterator<JobApi.JobStateEvent> events =
        jobs.withDeadlineAfter(timeoutSeconds, TimeUnit.SECONDS)
            .getStateStream(JobApi.GetJobStateRequest.newBuilder().setJobId(jobId).build());
    JobState.Enum last = JobState.Enum.UNSPECIFIED;
    try {
      while (events.hasNext()) {
        last = events.next().getState();
        if (isTerminal(last)) {
          return last;
        }
      }
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED) {
        return null;
      }
      throw e;
    }
    // The stream ended without a terminal state: ask once more.
    last = state(jobId);
    if (!isTerminal(last)) {
      throw new IllegalStateException("job " + jobId + ": state stream ended in state " + last);
    }
    return last;
  }

  JobState.Enum state(String jobId) {
    return jobs.withDeadlineAfter(30, TimeUnit.SECONDS)
        .getState(JobApi.GetJobStateRequest.newBuilder().setJobId(jobId).build())
        .getState();
  }

  /** Starts following the job's messages; call right after submit. */
  JobMessages followMessages(String jobId) {
    return JobMessages.follow(channel, jobId);
  }

  JobApi.MetricResults metrics(String jobId) {
    return jobs.withDeadlineAfter(30, TimeUnit.SECONDS)
        .getJobMetrics(JobApi.GetJobMetricsRequest.newBuilder().setJobId(jobId).build())
        .getMetrics();
  }

  JobState.Enum cancel(String jobId) {
    return jobs.withDeadlineAfter(30, TimeUnit.SECONDS)
        .cancel(JobApi.CancelJobRequest.newBuilder().setJobId(jobId).build())
        .getState();
  }

  static boolean isTerminal(JobState.Enum s) {
    switch (s) {
      case DONE:
      case FAILED:
      case CANCELLED:
      case UPDATED:
      case DRAINED:
        return true;
      default:
        return false;
    }
  }

  private static ApiServiceDescriptor describe(String url) {
    return ApiServiceDescriptor.newBuilder().setUrl(url).build();
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
