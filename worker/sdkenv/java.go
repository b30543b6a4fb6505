package sdkenv

import "strconv"

// Java is Beam's Java SDK: images apache/beam_javaNN_sdk, NN the Java
// major version.
const Java SDK = "java"

func init() {
	Register(Spec{Name: Java, Tag: `java(\d+)`, Variant: func(v string) bool {
		major, err := strconv.Atoi(v)
		return err == nil && major >= 8 && major <= 99
	}})
}
