package org.beamrunner.validates;

import org.apache.beam.fn.harness.ExternalWorkerService;
import org.apache.beam.sdk.fn.server.GrpcFnServer;
import org.apache.beam.sdk.options.PipelineOptions;

/**
 * LOOPBACK: a worker pool (BeamFnExternalWorkerPool) in this JVM that runs Beam's FnHarness for
 * each StartWorker, so the job's DoFns run in the test's own classes and JVM, as with Beam's
 * PortableRunner.
 */
final class LoopbackWorkers implements AutoCloseable {
  private final GrpcFnServer<ExternalWorkerService> server;

  private LoopbackWorkers(GrpcFnServer<ExternalWorkerService> server) {
    this.server = server;
  }

  static LoopbackWorkers start(PipelineOptions options) {
    try {
      return new LoopbackWorkers(new ExternalWorkerService(options).start());
    } catch (Exception e) {
      throw new IllegalStateException("starting the LOOPBACK worker pool", e);
    }
  }

  /** The pool's address: the LOOPBACK environment's config. */
  String url() {
    return server.getApiServiceDescriptor().getUrl();
  }

  @Override
  public void close() throws Exception {
    server.close();
  }
}
