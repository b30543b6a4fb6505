package org.beamrunner.validates;

import org.apache.beam.sdk.PipelineResult;
import org.apache.beam.sdk.metrics.MetricResults;
import org.joda.time.Duration;

/** The result of a job that has ended: TestBeamRunner waits for the end, as TestPrismRunner. */
final class FinishedJob implements PipelineResult {
  private final State state;
  private final MetricResults metrics;

  FinishedJob(State state, MetricResults metrics) {
    this.state = state;
    this.metrics = metrics;
  }

  @Override
  public State getState() {
    return state;
  }

  @Override
  public State cancel() {
    return state;
  }

  @Override
  public State waitUntilFinish(Duration duration) {
    return state;
  }

  @Override
  public State waitUntilFinish() {
    return state;
  }

  @Override
  public MetricResults metrics() {
    return metrics;
  }
}
