package worker

import (
	"regexp"
	"strings"
)

// SDKImage is one of Beam's own SDK container images, which the runner
// can run without Docker by starting locally what the image's boot runs.
type SDKImage struct {
	Language string // "python" or "go"
	Python   string // "3.11" for Python images
	Version  string // the Beam version of the image tag, e.g. "2.77.0"
}

// beamImage matches apache/beam_python3.11_sdk:2.77.0 and
// apache/beam_go_sdk:2.77.0, with an optional docker.io registry; the tag
// may carry a suffix such as ".dev" or "rc1".
var beamImage = regexp.MustCompile(`^(?:(?:docker\.io|index\.docker\.io)/)?(?:library/)?apache/beam_(python(3\.\d+)|go)_sdk:(\d+\.\d+\.\d+[0-9A-Za-z.\-]*)$`)

// ParseSDKImage reports whether image is a Beam Python or Go SDK image.
func ParseSDKImage(image string) (SDKImage, bool) {
	m := beamImage.FindStringSubmatch(strings.TrimSpace(image))
	if m == nil {
		return SDKImage{}, false
	}
	img := SDKImage{Language: "go", Version: m[3]}
	if strings.HasPrefix(m[1], "python") {
		img.Language, img.Python = "python", m[2]
	}
	return img, true
}

// pythonFromSDKBase reads an environment's sdk_base capability
// ("beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"): a Python
// PROCESS environment without a command names its SDK only there.
func pythonFromSDKBase(caps []string) (SDKImage, bool) {
	for _, c := range caps {
		if rest, ok := strings.CutPrefix(c, "beam:version:sdk_base:"); ok {
			if img, ok := ParseSDKImage(rest); ok && img.Language == "python" {
				return img, true
			}
		}
	}
	return SDKImage{}, false
}
