package org.beamrunner.validates;

import static org.apache.beam.runners.core.metrics.MonitoringInfoConstants.TypeUrns.DISTRIBUTION_INT64_TYPE;
import static org.apache.beam.runners.core.metrics.MonitoringInfoConstants.TypeUrns.LATEST_INT64_TYPE;
import static org.apache.beam.runners.core.metrics.MonitoringInfoConstants.TypeUrns.SET_STRING_TYPE;
import static org.apache.beam.runners.core.metrics.MonitoringInfoConstants.TypeUrns.SUM_INT64_TYPE;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.beam.model.jobmanagement.v1.JobApi;
import org.apache.beam.model.pipeline.v1.MetricsApi.MonitoringInfo;
import org.apache.beam.runners.core.metrics.DistributionData;
import org.apache.beam.runners.core.metrics.GaugeData;
import org.apache.beam.runners.core.metrics.MonitoringInfoEncodings;
import org.apache.beam.sdk.metrics.DistributionResult;
import org.apache.beam.sdk.metrics.GaugeResult;
import org.apache.beam.sdk.metrics.MetricFiltering;
import org.apache.beam.sdk.metrics.MetricKey;
import org.apache.beam.sdk.metrics.MetricName;
import org.apache.beam.sdk.metrics.MetricQueryResults;
import org.apache.beam.sdk.metrics.MetricResult;
import org.apache.beam.sdk.metrics.MetricResults;
import org.apache.beam.sdk.metrics.MetricsFilter;
import org.apache.beam.sdk.metrics.StringSetResult;

/**
 * A job's user metrics (GetJobMetrics) as the SDK's MetricResults: the values of counters,
 * distributions, gauges and string sets. System metrics (no NAMESPACE label) are left
 * out, as Beam's PortableMetrics does; committed values are not offered, as there.
 */
final class JobMetrics extends MetricResults {
  private final List<MonitoringInfo> infos;

  JobMetrics(JobApi.MetricResults results) {
    // Each metric's attempted value, or its committed one where it has no attempted one:
    // servers differ in which list carries user metrics (Prism: committed only).
    Map<String, MonitoringInfo> byKey = new LinkedHashMap<>();
    for (MonitoringInfo mi : results.getCommittedList()) {
      byKey.put(keyOf(mi), mi);
    }
    for (MonitoringInfo mi : results.getAttemptedList()) {
      byKey.put(keyOf(mi), mi);
    }
    infos = new ArrayList<>(byKey.values());
  }

  private static String keyOf(MonitoringInfo mi) {
    return mi.getUrn() + "|" + mi.getType() + "|" + new TreeMap<>(mi.getLabelsMap());
  }

  static JobMetrics empty() {
    return new JobMetrics(JobApi.MetricResults.getDefaultInstance());
  }

  @Override
  public MetricQueryResults queryMetrics(MetricsFilter filter) {
    return MetricQueryResults.create(
        of(filter, SUM_INT64_TYPE, p -> MonitoringInfoEncodings.decodeInt64Counter(p)),
        of(filter, DISTRIBUTION_INT64_TYPE, JobMetrics::distribution),
        of(filter, LATEST_INT64_TYPE, JobMetrics::gauge),
        of(
            filter,
            SET_STRING_TYPE,
            p -> StringSetResult.create(MonitoringInfoEncodings.decodeStringSet(p).stringSet())),
        Collections.emptyList(),
        Collections.emptyList());
  }

  private <T> List<MetricResult<T>> of(
      MetricsFilter filter,
      String type,
      Function<org.apache.beam.vendor.grpc.v1p69p0.com.google.protobuf.ByteString, T> decode) {
    List<MetricResult<T>> out = new ArrayList<>();
    for (MonitoringInfo mi : infos) {
      Map<String, String> labels = mi.getLabelsMap();
      if (!type.equals(mi.getType()) || labels.get("NAMESPACE") == null) {
        continue;
      }
      MetricKey key =
          MetricKey.create(
              labels.getOrDefault("PTRANSFORM", ""),
              MetricName.named(labels.get("NAMESPACE"), labels.get("NAME")));
      if (MetricFiltering.matches(filter, key)) {
        out.add(MetricResult.create(key, false, decode.apply(mi.getPayload())));
      }
    }
    return out;
  }

  private static DistributionResult distribution(
      org.apache.beam.vendor.grpc.v1p69p0.com.google.protobuf.ByteString p) {
    DistributionData d = MonitoringInfoEncodings.decodeInt64Distribution(p);
    return DistributionResult.create(d.sum(), d.count(), d.min(), d.max());
  }

  private static GaugeResult gauge(
      org.apache.beam.vendor.grpc.v1p69p0.com.google.protobuf.ByteString p) {
    GaugeData g = MonitoringInfoEncodings.decodeInt64Gauge(p);
    return GaugeResult.create(g.value(), g.timestamp());
  }
}
