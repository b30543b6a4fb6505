package sdkenv

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
)

// SDK names a Beam SDK ("go", "python", "java"); "" is unknown.
type SDK string

// Spec is what the runner knows of one SDK's identity; each SDK's file
// registers its own.
type Spec struct {
	Name SDK
	// Tag is the regexp of the SDK's part of its container image names,
	// between "apache/beam_" and "_sdk" ("go", `python(3\.\d+)`); its one
	// group, if any, is the image's variant (a Python or Java version).
	Tag string
	// Variant vets a variant the tag matched; nil accepts any.
	Variant func(string) bool
	// InexactCheckpoints: the SDK may not stop a bundle where a checkpoint
	// (a split keeping nothing) finds it, so the runner checkpoints its
	// bundles only when it must (memory, drain).
	InexactCheckpoints bool
}

type registered struct {
	Spec
	image *regexp.Regexp // a whole image name of the SDK
	base  *regexp.Regexp // the SDK named anywhere in an sdk_base capability
}

var registry struct {
	sync.RWMutex
	specs []registered // by name, so lookups do not depend on file order
}

// Register adds an SDK; each SDK's file calls it from init. A second SDK
// of one name is a programming error.
func Register(s Spec) {
	if s.Name == "" || s.Tag == "" {
		panic("sdkenv: Register needs a name and an image tag")
	}
	r := registered{Spec: s,
		image: regexp.MustCompile(`^(?:(?:docker\.io|index\.docker\.io)/)?(?:library/)?apache/beam_` + s.Tag + `_sdk:(\d+\.\d+\.\d+[0-9A-Za-z.\-]*)$`),
		base:  regexp.MustCompile(`beam_` + regexp.QuoteMeta(string(s.Name)) + `(?:[^a-z]|$)`),
	}
	registry.Lock()
	defer registry.Unlock()
	for _, o := range registry.specs {
		if o.Name == s.Name {
			panic(fmt.Sprintf("sdkenv: SDK %q registered twice", s.Name))
		}
	}
	registry.specs = append(registry.specs, r)
	slices.SortFunc(registry.specs, func(a, b registered) int { return strings.Compare(string(a.Name), string(b.Name)) })
}

// Names are the registered SDKs' names, in order.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for _, r := range registry.specs {
		out = append(out, string(r.Name))
	}
	return out
}

// Image is one of Beam's own SDK container images (or the image an
// sdk_base capability names), which the runner can run without Docker.
type Image struct {
	SDK     SDK
	Variant string // the image's language version: "3.11" for Python, "17" for Java; "" for Go
	Version string // the Beam version of the tag, e.g. "2.77.0"
}

// ParseImage reports whether image is one of Beam's SDK images, such as
// apache/beam_python3.11_sdk:2.77.0, apache/beam_go_sdk:2.77.0 or
// apache/beam_java17_sdk:2.73.0 (optionally from docker.io; the tag may
// carry a suffix such as ".dev" or "rc1").
func ParseImage(image string) (Image, bool) {
	image = strings.TrimSpace(image)
	registry.RLock()
	defer registry.RUnlock()
	for _, r := range registry.specs {
		m := r.image.FindStringSubmatch(image)
		if m == nil {
			continue
		}
		img := Image{SDK: r.Name, Version: m[len(m)-1]}
		if len(m) > 2 {
			img.Variant = m[1]
		}
		if r.Variant != nil && !r.Variant(img.Variant) {
			return Image{}, false
		}
		return img, true
	}
	return Image{}, false
}

// basePrefix starts an environment's sdk_base capability:
// "beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0", and the Go
// SDK's "beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0".
const basePrefix = "beam:version:sdk_base:"

// fromCapabilities reads the SDK from an environment's sdk_base
// capability, and the image it names if that parses.
func fromCapabilities(caps []string) (SDK, Image, bool) {
	for _, c := range caps {
		rest, ok := strings.CutPrefix(c, basePrefix)
		if !ok {
			continue
		}
		if i := strings.Index(rest, "apache/beam_"); i > 0 && !strings.Contains(rest[:i], "/") {
			rest = rest[i:] // the Go SDK's "go:" before its image
		}
		if img, ok := ParseImage(rest); ok {
			return img.SDK, img, true
		}
		if sdk := sdkNamedIn(rest); sdk != "" {
			return sdk, Image{}, false
		}
	}
	return "", Image{}, false
}

// sdkNamedIn is the SDK whose "beam_<name>" rest holds, for a capability
// whose image does not parse; "" if none.
func sdkNamedIn(rest string) SDK {
	registry.RLock()
	defer registry.RUnlock()
	for _, r := range registry.specs {
		if r.base.MatchString(rest) {
			return r.Name
		}
	}
	return ""
}

// CheckpointsExactly reports whether env's SDK stops a bundle exactly where
// a checkpoint finds it on any of its input elements: every SDK but those
// registered with InexactCheckpoints, an unknown one included.
func CheckpointsExactly(env *pipepb.Environment) bool {
	sdk := SDKOf(env)
	registry.RLock()
	defer registry.RUnlock()
	for _, r := range registry.specs {
		if r.Name == sdk {
			return !r.InexactCheckpoints
		}
	}
	return true
}
