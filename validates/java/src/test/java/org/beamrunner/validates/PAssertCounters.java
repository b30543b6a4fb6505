package org.beamrunner.validates;

import org.apache.beam.sdk.metrics.MetricNameFilter;
import org.apache.beam.sdk.metrics.MetricResult;
import org.apache.beam.sdk.metrics.MetricResults;
import org.apache.beam.sdk.metrics.MetricsFilter;
import org.apache.beam.sdk.testing.PAssert;

/**
 * PAssert counts each assertion that held and each that failed. A job can end DONE with an
 * assertion never evaluated (e.g. a runner that drops a window's pane): requiring one success
 * per assertion catches that, as Beam's TestDataflowRunner does.
 */
final class PAssertCounters {
  private PAssertCounters() {}

  static void check(MetricResults metrics, int expected) {
    long failures = sum(metrics, PAssert.FAILURE_COUNTER);
    long successes = sum(metrics, PAssert.SUCCESS_COUNTER);
    if (failures > 0) {
      throw new AssertionError(failures + " PAssert assertion(s) failed, per the job's metrics");
    }
    if (successes < expected) {
      throw new AssertionError(
          "the pipeline has "
              + expected
              + " PAssert assertion(s) but the job's metrics count "
              + successes
              + " success(es)");
    }
  }

  private static long sum(MetricResults metrics, String name) {
    MetricsFilter filter =
        MetricsFilter.builder()
            .addNameFilter(MetricNameFilter.named(PAssert.class, name))
            .build();
    long total = 0;
    for (MetricResult<Long> c : metrics.queryMetrics(filter).getCounters()) {
      total += c.getAttempted();
    }
    return total;
  }
}
