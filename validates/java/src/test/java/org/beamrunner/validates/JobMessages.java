package org.beamrunner.validates;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.beam.model.jobmanagement.v1.JobApi;
import org.apache.beam.model.jobmanagement.v1.JobApi.JobMessage.MessageImportance;
import org.apache.beam.model.jobmanagement.v1.JobServiceGrpc;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.Channel;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.stub.ClientCallStreamObserver;
import org.apache.beam.vendor.grpc.v1p69p0.io.grpc.stub.ClientResponseObserver;

/**
 * Follows a job's message stream while it runs and keeps its error messages: they say why a job
 * failed. Subscribing at the start, as Beam's Python runner does, loses none of them.
 */
final class JobMessages
    implements ClientResponseObserver<JobApi.JobMessagesRequest, JobApi.JobMessagesResponse> {
  private final List<String> errors = new ArrayList<>();
  private final CountDownLatch ended = new CountDownLatch(1);
  private volatile ClientCallStreamObserver<JobApi.JobMessagesRequest> call;
  private volatile String streamError;

  static JobMessages follow(Channel channel, String jobId) {
    JobMessages m = new JobMessages();
    JobServiceGrpc.newStub(channel)
        .getMessageStream(JobApi.JobMessagesRequest.newBuilder().setJobId(jobId).build(), m);
    return m;
  }

  @Override
  public void beforeStart(ClientCallStreamObserver<JobApi.JobMessagesRequest> requestStream) {
    call = requestStream;
  }

  @Override
  public void onNext(JobApi.JobMessagesResponse r) {
    if (r.hasStateResponse() && JobClient.isTerminal(r.getStateResponse().getState())) {
      ended.countDown(); // everything the job said came before its end
      return;
    }
    if (r.hasMessageResponse()
        && r.getMessageResponse().getImportance() == MessageImportance.JOB_MESSAGE_ERROR) {
      synchronized (errors) {
        errors.add(r.getMessageResponse().getMessageText());
      }
    }
  }

  @Override
  public void onError(Throwable t) {
    streamError = t.toString();
    ended.countDown();
  }

  @Override
  public void onCompleted() {
    ended.countDown();
  }

  /** The errors seen, after waiting up to waitMillis for the stream to reach the job's end. */
  String errors(long waitMillis) throws InterruptedException {
    ended.await(waitMillis, TimeUnit.MILLISECONDS);
    StringBuilder out = new StringBuilder();
    synchronized (errors) {
      errors.forEach(e -> out.append(e).append('\n'));
    }
    if (out.length() == 0 && streamError != null) {
      out.append("(no error messages; the message stream failed: ").append(streamError).append(")");
    }
    return out.toString();
  }

  void stop() {
    if (call != null) {
      call.cancel("job ended", null);
    }
  }
}
