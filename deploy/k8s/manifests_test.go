package k8s_test

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/cmd/beam-runner/serverflags"
	"github.com/beam-runner/beam-runner/fnapi"
	"github.com/beam-runner/beam-runner/runner/placement"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	namespace  = "beam-runner"
	jobServer  = "beam-runner"
	pythonPool = "beam-python-pool"
	configName = "beam-runner-config"
	// podIP stands in for the pod's IP (status.podIP): TEST-NET-1,
	// documentation only, never dialed.
	podIP = "192.0.2.1"
)

func loadAll(t *testing.T) *manifests {
	t.Helper()
	m, err := load(".")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Every manifest decodes into its Kubernetes API type with no field that
// type lacks, and everything lives in the one namespace defined here.
func TestManifestsDecodeStrictly(t *testing.T) {
	m := loadAll(t)
	if m.namespaces[namespace] == nil {
		t.Fatalf("no Namespace %q", namespace)
	}
	for kind, names := range map[string][]string{
		"Deployment":              keys(m.deployments),
		"Service":                 keys(m.services),
		"ConfigMap":               keys(m.configMaps),
		"NetworkPolicy":           keys(m.policies),
		"HorizontalPodAutoscaler": keys(m.hpas),
	} {
		if len(names) == 0 {
			t.Errorf("no %s", kind)
		}
	}
	check := func(kind, name, ns string) {
		if ns != namespace {
			t.Errorf("%s %q is in namespace %q, want %q", kind, name, ns, namespace)
		}
	}
	for n, d := range m.deployments {
		check("Deployment", n, d.Namespace)
	}
	for n, s := range m.services {
		check("Service", n, s.Namespace)
	}
	for n, c := range m.configMaps {
		check("ConfigMap", n, c.Namespace)
	}
	for n, p := range m.policies {
		check("NetworkPolicy", n, p.Namespace)
	}
	for n, h := range m.hpas {
		check("HorizontalPodAutoscaler", n, h.Namespace)
	}
}

func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// The decoding is strict: a misspelt field fails it, naming the field.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	dir := t.TempDir()
	doc := `apiVersion: apps/v1
kind: Deployment
metadata: {name: typo}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: i
          ports: [{contianerPort: 1}]
`
	if err := os.WriteFile(filepath.Join(dir, "typo.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := load(dir)
	if err == nil || !strings.Contains(err.Error(), `unknown field "contianerPort"`) {
		t.Fatalf("a misspelt field decoded: %v", err)
	}
}

// serverArgs are the job server container's arguments with the $(VAR)s
// Kubernetes expands, parsed by the server's own flag set.
func serverArgs(t *testing.T, m *manifests) (*serverflags.Flags, *corev1.Container) {
	t.Helper()
	c := container(t, m, jobServer)
	env, err := containerEnv(m, c)
	if err != nil {
		t.Fatalf("container %q: %v", c.Name, err)
	}
	var args []string
	for _, a := range c.Args {
		x, err := expand(a, env)
		if err != nil {
			t.Fatalf("container %q, argument %q: %v", c.Name, a, err)
		}
		args = append(args, x)
	}
	fs := flag.NewFlagSet("beam-runner", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fl := serverflags.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the job server's arguments %q: %v", args, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("the job server's arguments leave %q unparsed", fs.Args())
	}
	return fl, c
}

func container(t *testing.T, m *manifests, deployment string) *corev1.Container {
	t.Helper()
	d := m.deployments[deployment]
	if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want Deployment %q with one container", deployment)
	}
	return &d.Spec.Template.Spec.Containers[0]
}

// containerEnv is the container's environment as Kubernetes builds it:
// envFrom ConfigMaps, then env (later entries win).
func containerEnv(m *manifests, c *corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			return nil, fmt.Errorf("envFrom other than a ConfigMap")
		}
		cm := m.configMaps[from.ConfigMapRef.Name]
		if cm == nil {
			return nil, fmt.Errorf("envFrom names ConfigMap %q, which is not defined", from.ConfigMapRef.Name)
		}
		maps.Copy(env, cm.Data)
	}
	for _, e := range c.Env {
		v, err := envValue(m, e)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		env[e.Name] = v
	}
	return env, nil
}

func envValue(m *manifests, e corev1.EnvVar) (string, error) {
	switch from := e.ValueFrom; {
	case from == nil:
		return e.Value, nil
	case from.FieldRef != nil && from.FieldRef.FieldPath == "status.podIP":
		return podIP, nil
	case from.ConfigMapKeyRef != nil:
		cm := m.configMaps[from.ConfigMapKeyRef.Name]
		v, ok := cm.Data[from.ConfigMapKeyRef.Key]
		if cm == nil || !ok {
			return "", fmt.Errorf("ConfigMap %q has no key %q", from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key)
		}
		return v, nil
	}
	return "", fmt.Errorf("a valueFrom this test cannot resolve")
}

var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) as Kubernetes does ($$ is a literal $); a VAR
// the container lacks is an error here, where Kubernetes would silently
// pass "$(VAR)" on.
func expand(s string, env map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		if ref == "$$" {
			return "$"
		}
		name := ref[2 : len(ref)-1]
		v, ok := env[name]
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("refers to %v, which the container's environment lacks", missing)
	}
	return out, nil
}

// The job server's arguments are flags the server has, with values it
// accepts.
func TestJobServerFlags(t *testing.T) {
	fl, _ := serverArgs(t, loadAll(t))
	ports, err := fnapi.ParsePortRange(fl.FnAPIPorts)
	if err != nil {
		t.Fatal(err)
	}
	l := fnapi.Listen{Host: fl.FnAPIHost, Advertise: fl.FnAPIAdvertise, Ports: ports}
	if err := l.Check(); err != nil {
		t.Error(err)
	}
	if fl.FnAPIAdvertise != podIP {
		t.Errorf("--fn_api_advertise=%q, want the pod's IP", fl.FnAPIAdvertise)
	}
	if ports.Lo == 0 {
		t.Error("no --fn_api_ports: the NetworkPolicy could not name the Fn API's ports")
	}
	if fl.JobHost != "0.0.0.0" {
		t.Errorf("--job_host=%q: the Service could not reach the job port", fl.JobHost)
	}
}

// The job port is the container's, the Service's and the policy's; the
// Fn API ports are the policy's.
func TestJobServerPortsAgree(t *testing.T) {
	m := loadAll(t)
	fl, c := serverArgs(t, m)
	if p := containerPort(c, "job"); p != fl.JobPort {
		t.Errorf("container port \"job\" is %d, --job_port %d", p, fl.JobPort)
	}
	svc := m.services[jobServer]
	if svc == nil || len(svc.Spec.Ports) != 1 {
		t.Fatalf("want Service %q with one port", jobServer)
	}
	sp := svc.Spec.Ports[0]
	if int(sp.Port) != fl.JobPort || targetPort(c, sp.TargetPort) != fl.JobPort {
		t.Errorf("Service %q: port %d, target %v; want --job_port %d", jobServer, sp.Port, sp.TargetPort.String(), fl.JobPort)
	}
	pol := m.policies[jobServer]
	if pol == nil {
		t.Fatalf("no NetworkPolicy %q", jobServer)
	}
	ports, _ := fnapi.ParsePortRange(fl.FnAPIPorts)
	pool := podLabels(t, m, pythonPool)
	if !admits(pol, pool, ports.Lo, ports.Hi) {
		t.Errorf("NetworkPolicy %q does not admit the worker pools to --fn_api_ports %s", jobServer, fl.FnAPIPorts)
	}
	if !admits(pol, map[string]string{"beam-runner/client": "true"}, fl.JobPort, fl.JobPort) {
		t.Errorf("NetworkPolicy %q does not admit clients to --job_port %d", jobServer, fl.JobPort)
	}
	if admits(pol, pool, fl.JobPort, fl.JobPort) {
		t.Errorf("NetworkPolicy %q admits the worker pools to the job port", jobServer)
	}
}

func containerPort(c *corev1.Container, name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	return 0
}

// targetPort is the container port a Service's targetPort names.
func targetPort(c *corev1.Container, tp intstr.IntOrString) int {
	if tp.Type == intstr.String {
		return containerPort(c, tp.StrVal)
	}
	return tp.IntValue()
}

func podLabels(t *testing.T, m *manifests, deployment string) map[string]string {
	t.Helper()
	d := m.deployments[deployment]
	if d == nil {
		t.Fatalf("no Deployment %q", deployment)
	}
	return d.Spec.Template.Labels
}

// admits reports whether one ingress rule of pol lets pods labelled from
// reach every port lo..hi of the pods pol selects.
func admits(pol *networkingv1.NetworkPolicy, from map[string]string, lo, hi int) bool {
	for _, rule := range pol.Spec.Ingress {
		if !peersMatch(rule.From, from) {
			continue
		}
		for _, p := range rule.Ports {
			end := int(p.Port.IntValue())
			if p.EndPort != nil {
				end = int(*p.EndPort)
			}
			if p.Port.IntValue() <= lo && hi <= end {
				return true
			}
		}
	}
	return false
}

func peersMatch(peers []networkingv1.NetworkPolicyPeer, labels map[string]string) bool {
	for _, p := range peers {
		if p.PodSelector != nil && subset(p.PodSelector.MatchLabels, labels) {
			return true
		}
	}
	return false
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Each Service and NetworkPolicy selects the pods of its Deployment.
func TestSelectorsMatchPods(t *testing.T) {
	m := loadAll(t)
	for _, name := range []string{jobServer, pythonPool} {
		pods := podLabels(t, m, name)
		d := m.deployments[name]
		if !subset(d.Spec.Selector.MatchLabels, pods) {
			t.Errorf("Deployment %q does not select its own pods", name)
		}
		if s := m.services[name]; s == nil || len(s.Spec.Selector) == 0 || !subset(s.Spec.Selector, pods) {
			t.Errorf("Service %q does not select Deployment %q's pods", name, name)
		}
		if p := m.policies[name]; p == nil || !subset(p.Spec.PodSelector.MatchLabels, pods) {
			t.Errorf("NetworkPolicy %q does not select Deployment %q's pods", name, name)
		}
	}
}

// The pools run Beam's Python SDK image of the runner's Beam version in
// --worker_pool mode, on the port that image's boot serves, behind a
// headless Service that resolves to each pool; only the job server may
// reach them.
func TestPythonWorkerPool(t *testing.T) {
	m := loadAll(t)
	c := container(t, m, pythonPool)
	version, _ := beamModule(t)
	if want := "apache/beam_python3.11_sdk:" + version; c.Image != want {
		t.Errorf("pool image %q, want %q", c.Image, want)
	}
	if strings.Join(c.Args, " ") != "--worker_pool" || len(c.Command) > 0 {
		t.Errorf("pool command %q args %q, want the image's boot with --worker_pool", c.Command, c.Args)
	}
	port := bootPoolPort(t)
	if p := containerPort(c, "pool"); p != port {
		t.Errorf("container port \"pool\" is %d; the image's boot serves the pool on %d", p, port)
	}
	svc := m.services[pythonPool]
	if svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 {
		t.Fatalf("want headless Service %q (clusterIP: None) with one port", pythonPool)
	}
	if sp := svc.Spec.Ports[0]; int(sp.Port) != port || targetPort(c, sp.TargetPort) != port {
		t.Errorf("Service %q: port %d, target %s; want %d", pythonPool, sp.Port, sp.TargetPort.String(), port)
	}
	checkServerPools(t, m, c, port)
	pol := m.policies[pythonPool]
	if pol == nil || !admits(pol, podLabels(t, m, jobServer), port, port) {
		t.Errorf("NetworkPolicy %q does not admit the job server to port %d", pythonPool, port)
	}
	if len(pol.Spec.Ingress) != 1 {
		t.Errorf("NetworkPolicy %q admits more than the job server", pythonPool)
	}
}

// checkServerPools: the server's --worker_pools name the pools' Service
// on their port, each pool with no more workers than its CPUs.
func checkServerPools(t *testing.T, m *manifests, pool *corev1.Container, port int) {
	t.Helper()
	fl, _ := serverArgs(t, m)
	pools, err := placement.ParsePools(fl.WorkerPools...)
	if err != nil {
		t.Fatalf("--worker_pools: %v", err)
	}
	if len(pools["python"]) == 0 {
		t.Fatal("the job server names no Python worker pools")
	}
	cpus := pool.Resources.Limits.Cpu().Value()
	names := []string{pythonPool, pythonPool + "." + namespace, pythonPool + "." + namespace + ".svc", pythonPool + "." + namespace + ".svc.cluster.local"}
	for _, p := range pools["python"] {
		host, portStr, _ := net.SplitHostPort(p.Addr)
		if !slices.Contains(names, host) || portStr != strconv.Itoa(port) {
			t.Errorf("--worker_pools names %s, want the Service %s on port %d", p.Addr, pythonPool, port)
		}
		if cpus == 0 || int64(p.Workers) > cpus {
			t.Errorf("--worker_pools runs %d workers on each pool, which has %d CPUs (limits.cpu)", p.Workers, cpus)
		}
	}
}

// beamModule is the Beam SDK module the runner is built with: its
// version and directory.
func beamModule(t *testing.T) (version, dir string) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "github.com/apache/beam/sdks/v2").Output()
	version, dir, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if err != nil || !ok || dir == "" {
		t.Fatalf("finding the Beam module: %v (%q)", err, out)
	}
	return strings.TrimPrefix(version, "v"), dir
}

// bootPoolPort is the port Beam's Python SDK image serves its worker pool
// on, read from the image's boot program in the Beam module.
func bootPoolPort(t *testing.T) int {
	_, dir := beamModule(t)
	boot := filepath.Join(dir, "python", "container", "boot.go")
	b, err := os.ReadFile(boot)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"--service_port=(\d+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no --service_port", boot)
	}
	port, _ := strconv.Atoi(string(m[1]))
	return port
}

// The image job-server.yaml names is built from the server's command and
// runs it.
func TestDockerfileRunsTheServer(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	build := regexp.MustCompile(`go build .*-o (\S+) \./cmd/beam-runner\b`).FindSubmatch(b)
	entry := regexp.MustCompile(`ENTRYPOINT \["([^"]+)"\]`).FindSubmatch(b)
	copyTo := regexp.MustCompile(`COPY --from=build (\S+) (\S+)`).FindSubmatch(b)
	if build == nil || entry == nil || copyTo == nil {
		t.Fatal("the Dockerfile does not build ./cmd/beam-runner, copy it and run it")
	}
	if string(copyTo[1]) != string(build[1]) || string(copyTo[2]) != string(entry[1]) {
		t.Errorf("the Dockerfile builds %s, copies %s to %s, runs %s", build[1], copyTo[1], copyTo[2], entry[1])
	}
}

// The runner's binary links none of the Kubernetes modules this test uses.
func TestServerBinaryHasNoKubernetesDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/beam-runner/beam-runner/cmd/beam-runner").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/") || strings.HasPrefix(pkg, "sigs.k8s.io/") {
			t.Errorf("cmd/beam-runner depends on %s", pkg)
		}
	}
}
