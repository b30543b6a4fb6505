package k8s_test

import (
	"testing"

	"github.com/beam-runner/beam-runner/runner/placement"
	"github.com/beam-runner/beam-runner/runner/web"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// The worker pools' HorizontalPodAutoscaler scales their Deployment on
// the metric the job server exports (the name the server's collector
// uses), one pod per --worker_pools workers of desired workers; and the
// job server runs with --autoscaling=ds2, without which the metric never
// exists.
func TestPoolAutoscalerScalesOnDesiredWorkers(t *testing.T) {
	m := loadAll(t)
	h := m.hpas[pythonPool]
	if h == nil {
		t.Fatalf("no HorizontalPodAutoscaler %q", pythonPool)
	}
	ref := h.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.APIVersion != appsv1.SchemeGroupVersion.String() || m.deployments[ref.Name] == nil || ref.Name != pythonPool {
		t.Errorf("scaleTargetRef %+v, want the Deployment %q", ref, pythonPool)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		t.Errorf("replicas [%v, %d]: want 1 <= min <= max", h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) != 1 {
		t.Fatalf("%d metrics, want the one desired-workers metric", len(h.Spec.Metrics))
	}
	ms := h.Spec.Metrics[0]
	if ms.Type != autoscalingv2.ExternalMetricSourceType || ms.External == nil {
		t.Fatalf("metric of type %q, want External", ms.Type)
	}
	if got := ms.External.Metric.Name; got != web.DesiredWorkersMetric {
		t.Errorf("the HPA scales on %q; the server exports %q", got, web.DesiredWorkersMetric)
	}
	target := ms.External.Target
	fl, _ := serverArgs(t, m)
	pools, err := placement.ParsePools(fl.WorkerPools...)
	if err != nil || len(pools["python"]) == 0 {
		t.Fatalf("--worker_pools: %v %v", pools, err)
	}
	per := pools["python"][0].Workers
	if target.Type != autoscalingv2.AverageValueMetricType || target.AverageValue == nil || target.AverageValue.Value() != int64(per) {
		t.Errorf("target %+v, want an AverageValue of %d (the workers per pool of --worker_pools)", target, per)
	}
	if !fl.Scaling.On() {
		t.Errorf("the job server runs with --autoscaling=%q: it exports no %s for the HPA", fl.Scaling.Mode, web.DesiredWorkersMetric)
	}
}
