// Package k8s_test checks the Kubernetes manifests of this directory:
// there is no cluster to apply them to, so they are decoded strictly
// against the Kubernetes API types and checked against the job server's
// own flags. It is a test-only package, so the runner's binary links
// none of the Kubernetes modules.
package k8s_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// manifests are the decoded objects of a directory's YAML files, by kind.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	policies    map[string]*networkingv1.NetworkPolicy
	namespaces  map[string]*corev1.Namespace
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
}

// docSep splits a YAML stream into its documents.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// load decodes every document of every .yaml file in dir.
func load(dir string) (*manifests, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	m := &manifests{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, policies: map[string]*networkingv1.NetworkPolicy{},
		namespaces: map[string]*corev1.Namespace{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for i, doc := range docSep.Split(string(b), -1) {
			if len(bytes.TrimSpace(stripComments([]byte(doc)))) == 0 {
				continue
			}
			if err := m.add([]byte(doc)); err != nil {
				return nil, fmt.Errorf("%s, document %d: %w", filepath.Base(f), i+1, err)
			}
		}
	}
	return m, nil
}

var comment = regexp.MustCompile(`(?m)^\s*#.*$`)

func stripComments(b []byte) []byte { return comment.ReplaceAll(b, nil) }

// add decodes one document into the API type its apiVersion and kind name,
// refusing fields that type does not have.
func (m *manifests) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var name string
	var err error
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		name, err = strict(doc, m.deployments)
	case "v1 Service":
		name, err = strict(doc, m.services)
	case "v1 ConfigMap":
		name, err = strict(doc, m.configMaps)
	case "networking.k8s.io/v1 NetworkPolicy":
		name, err = strict(doc, m.policies)
	case "v1 Namespace":
		name, err = strict(doc, m.namespaces)
	case "autoscaling/v2 HorizontalPodAutoscaler":
		name, err = strict(doc, m.hpas)
	default:
		return fmt.Errorf("kind %q of apiVersion %q is not one this test knows", tm.Kind, tm.APIVersion)
	}
	if err != nil {
		return fmt.Errorf("%s %q: %w", tm.Kind, name, err)
	}
	return nil
}

// object is what every decoded kind has: its metadata.
type object interface{ GetName() string }

// strict decodes doc into a new T, refusing unknown and duplicate fields,
// and files it by name.
func strict[T any, PT interface {
	*T
	object
}](doc []byte, into map[string]PT) (string, error) {
	obj := PT(new(T))
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return "", err
	}
	name := obj.GetName()
	if name == "" {
		return "", fmt.Errorf("no metadata.name")
	}
	if _, dup := into[name]; dup {
		return name, fmt.Errorf("defined twice")
	}
	into[name] = obj
	return name, nil
}
