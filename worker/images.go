package worker

import (
	"regexp"
	"strconv"
	"strings"
)

// SDKImage is one of Beam's own SDK container images, which the runner
// can run without Docker by starting locally what the image's boot runs.
type SDKImage struct {
	Language string // "python", "go" or "java"
	Python   string // "3.11" for Python images
	Java     int    // the Java major version of Java images, e.g. 17
	Version  string // the Beam version of the image tag, e.g. "2.77.0"
}

// beamImage matches apache/beam_python3.11_sdk:2.77.0,
// apache/beam_go_sdk:2.77.0 and apache/beam_java17_sdk:2.77.0, with an
// optional docker.io registry; the tag may carry a suffix such as ".dev"
// or "rc1".
var beamImage = regexp.MustCompile(`^(?:(?:docker\.io|index\.docker\.io)/)?(?:library/)?apache/beam_(python(3\.\d+)|go|java(\d+))_sdk:(\d+\.\d+\.\d+[0-9A-Za-z.\-]*)$`)

// ParseSDKImage reports whether image is a Beam Python, Go or Java SDK image.
func ParseSDKImage(image string) (SDKImage, bool) {
	m := beamImage.FindStringSubmatch(strings.TrimSpace(image))
	if m == nil {
		return SDKImage{}, false
	}
	img := SDKImage{Language: "go", Version: m[4]}
	switch {
	case strings.HasPrefix(m[1], "python"):
		img.Language, img.Python = "python", m[2]
	case strings.HasPrefix(m[1], "java"):
		major, err := strconv.Atoi(m[3])
		if err != nil || major < 8 || major > 99 {
			return SDKImage{}, false
		}
		img.Language, img.Java = "java", major
	}
	return img, true
}

// sdkFromBase reads an environment's sdk_base capability
// ("beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"): a PROCESS
// environment without a usable command names its SDK only there.
func sdkFromBase(caps []string) (SDKImage, bool) {
	for _, c := range caps {
		if rest, ok := strings.CutPrefix(c, "beam:version:sdk_base:"); ok {
			if img, ok := ParseSDKImage(rest); ok {
				return img, true
			}
		}
	}
	return SDKImage{}, false
}
