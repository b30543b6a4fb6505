package worker

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestChooseJava(t *testing.T) {
	j := func(major int, from string) javaInstall {
		return javaInstall{path: "/j" + from, major: major, from: from}
	}
	for _, tc := range []struct {
		name    string
		want    int
		found   []javaInstall
		flagged bool
		pick    string // from of the choice; "" for an error
		note    bool
		errHas  string
	}{
		{"JAVA_HOME exact first", 17, []javaInstall{j(17, "JAVA_HOME"), j(17, "PATH")}, false, "JAVA_HOME", false, ""},
		{"exact later beats newer earlier", 17, []javaInstall{j(25, "JAVA_HOME"), j(17, "PATH")}, false, "PATH", false, ""},
		{"oldest newer when none exact", 11, []javaInstall{j(25, "a"), j(17, "b"), j(8, "c")}, false, "b", true, ""},
		{"only older", 21, []javaInstall{j(17, "PATH")}, false, "", false, "only older Java runtimes are here: /jPATH (Java 17, from PATH)"},
		{"none", 17, nil, false, "", false, "no Java runtime is here"},
		{"flag exact", 17, []javaInstall{j(17, "--sdk_java")}, true, "--sdk_java", false, ""},
		{"flag newer", 17, []javaInstall{j(25, "--sdk_java")}, true, "--sdk_java", true, ""},
		{"flag older", 21, []javaInstall{j(17, "--sdk_java")}, true, "", false, "--sdk_java /j--sdk_java (Java 17, from --sdk_java) is older"},
	} {
		got, note, err := chooseJava(tc.want, tc.found, tc.flagged)
		if tc.pick == "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), "--sdk_java") {
				t.Errorf("%s: got %v, %v; want an error with %q naming --sdk_java", tc.name, got, err, tc.errHas)
			}
			continue
		}
		if err != nil || got.from != tc.pick || (note != "") != tc.note {
			t.Errorf("%s: got %v, note %q, %v; want from %s (note %v)", tc.name, got, note, err, tc.pick, tc.note)
		}
	}
}

func TestJavaVersions(t *testing.T) {
	for in, want := range map[string]int{"17.0.15": 17, "1.8.0_292": 8, "21-ea": 21, "25": 25, "11.0.2+9": 11} {
		if got, err := javaMajor(in); err != nil || got != want {
			t.Errorf("javaMajor(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "1."} {
		if _, err := javaMajor(bad); err == nil {
			t.Errorf("javaMajor(%q) accepted", bad)
		}
	}
	if v, ok := releaseVersion("IMPLEMENTOR=\"Debian\"\nJAVA_VERSION=\"17.0.15\"\n"); !ok || v != "17.0.15" {
		t.Errorf("releaseVersion = %q %v", v, ok)
	}
	if _, ok := releaseVersion("IMPLEMENTOR=x\n"); ok {
		t.Error("release without JAVA_VERSION read")
	}
	out := "openjdk version \"25.0.3\" 2025-10-21 LTS\nOpenJDK Runtime Environment\n"
	if v, ok := versionOutput(out); !ok || v != "25.0.3" {
		t.Errorf("versionOutput = %q %v", v, ok)
	}
}

// The harness's POM as Beam publishes it: its dependencies are all
// provided; the image pins slf4j's and jamm's versions from them.
const harnessPOM = `<project><dependencies>
<dependency><groupId>org.apache.beam</groupId><artifactId>beam-sdks-java-core</artifactId><version>2.73.0</version><scope>provided</scope></dependency>
<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>2.0.16</version><scope>provided</scope></dependency>
<dependency><groupId>com.github.jbellis</groupId><artifactId>jamm</artifactId><version>0.4.0</version><scope>provided</scope></dependency>
<dependency><groupId>x</groupId><artifactId>managed</artifactId></dependency>
</dependencies></project>`

func TestHarnessSet(t *testing.T) {
	set, err := harnessSet("2.73.0", []byte(harnessPOM))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range set {
		got = append(got, c.String())
	}
	want := []string{"org.slf4j:slf4j-api:2.0.16", "org.slf4j:slf4j-jdk14:2.0.16", "org.slf4j:jcl-over-slf4j:2.0.16",
		"org.slf4j:log4j-over-slf4j:2.0.16", "org.apache.beam:beam-sdks-java-harness:2.73.0", "com.github.jbellis:jamm:0.4.0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("harnessSet = %v\nwant %v", got, want)
	}
	if p := set[4].repoPath("/r", "jar"); p != "/r/org/apache/beam/beam-sdks-java-harness/2.73.0/beam-sdks-java-harness-2.73.0.jar" {
		t.Errorf("repoPath = %s", p)
	}
	if _, err := harnessSet("2.73.0", []byte("<project><dependencies>")); err == nil {
		t.Error("a broken POM accepted")
	}
	pom := string(fetchPOM(set))
	if !strings.Contains(pom, "<artifactId>jamm</artifactId><version>0.4.0</version><exclusions><exclusion><groupId>*</groupId>") {
		t.Errorf("fetch POM:\n%s", pom)
	}
}

func writeJar(t *testing.T, path string, entries ...string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		if _, err := zw.Create(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestStagedCarriesHarness(t *testing.T) {
	dir := t.TempDir()
	plain, shaded := filepath.Join(dir, "pipeline.jar"), filepath.Join(dir, "fat.jar")
	writeJar(t, plain, "com/example/Main.class")
	writeJar(t, shaded, "com/example/Main.class", javaHarnessClass)
	for _, tc := range []struct {
		name  string
		files []stagedFile
		want  bool
	}{
		{"by name", []stagedFile{{name: "beam-sdks-java-harness-2.73.0-Xy12.jar", path: "/nowhere"}}, true},
		{"shaded", []stagedFile{{name: "pipeline.jar", path: plain}, {name: "fat.jar", path: shaded}}, true},
		{"without", []stagedFile{{name: "pipeline.jar", path: plain}, {name: "beam-sdks-java-core-2.73.0.jar", path: plain}}, false},
		{"not a jar", []stagedFile{{name: "data.jar", path: filepath.Join(dir, "missing")}}, false},
	} {
		if got := stagedCarriesHarness(tc.files, jarHasHarness); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestJavaClasspathOrder(t *testing.T) {
	h := splitJamm([]string{"/m/slf4j-api.jar", "/m/beam-sdks-java-harness-2.73.0.jar", "/m/jamm-0.4.0.jar"}, "m")
	if h.jamm != "/m/jamm-0.4.0.jar" {
		t.Errorf("jamm = %q", h.jamm)
	}
	cp := javaClasspath(h, []stagedFile{{name: "b.jar", path: "/s/b.jar"}, {name: "a.jar", path: "/s/a.jar"}})
	want := "/m/slf4j-api.jar /m/beam-sdks-java-harness-2.73.0.jar /s/b.jar /s/a.jar"
	if strings.Join(cp, " ") != want {
		t.Errorf("classpath %v, want %s", cp, want)
	}
}

func TestJVMArgs(t *testing.T) {
	opts := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := jvmSpec{physMem: 10 << 30, jamm: "/j/jamm.jar", classpath: []string{"/a.jar", "/b.jar"}, dir: "/env", opts: opts(nil)}
	for _, tc := range []struct {
		name       string
		major      int
		optsJSON   string
		opts       *structpb.Struct
		has, lacks []string
	}{
		{"java 11", 11, "{}", nil,
			[]string{"-Xmx7516192768", "-XX:+UseParallelGC", "-javaagent:/j/jamm.jar", "--add-modules=jamm", "--module-path=/j/jamm.jar", "-XX:ErrorFile=/env/hs_err_pid%p.log"},
			[]string{"--add-opens=java.base/java.nio=ALL-UNNAMED", "-Dorg.apache.avro.SERIALIZABLE_CLASSES"}},
		{"java 17", 17, "{}", nil,
			[]string{"--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-modules=jamm"},
			[]string{"--add-opens=java.base/java.lang=jamm"}},
		{"java 25", 25, "{}", nil,
			[]string{"--add-opens=java.base/java.lang=jamm", "--add-opens=java.base/java.util=jamm"}, nil},
		{"experiments", 17, `{"beam:option:experiments:v1":["disable_jamm_agent","set_recommended_max_xmx"]}`, nil,
			[]string{"-Xmx34359738368"}, []string{"-javaagent:/j/jamm.jar"}},
		{"legacy options", 17, "{}", opts(map[string]any{"options": map[string]any{
			"enableHeapDumps": true, "jdkAddOpenModules": []any{"java.base/java.io=ALL-UNNAMED"},
			"jdkAddRootModules": []any{"jdk.incubator.vector"}}}),
			[]string{"-XX:+HeapDumpOnOutOfMemoryError", "-XX:HeapDumpPath=/env/heapdumps/heap_dump.hprof", "--add-opens=java.base/java.io=ALL-UNNAMED",
				"--add-modules=jdk.incubator.vector", "-Dorg.apache.avro.SERIALIZABLE_CLASSES=java.math.BigDecimal,java.math.BigInteger,java.net.URI,java.net.URL,java.io.File,java.lang.Integer"}, nil},
	} {
		s := base
		s.major, s.optsJSON = tc.major, tc.optsJSON
		if tc.opts != nil {
			s.opts = tc.opts
		}
		args := jvmArgs(s)
		joined := " " + strings.Join(args, " ") + " "
		for _, h := range tc.has {
			if !strings.Contains(joined, " "+h+" ") {
				t.Errorf("%s: args lack %s: %v", tc.name, h, args)
			}
		}
		for _, h := range tc.lacks {
			if strings.Contains(joined, h) {
				t.Errorf("%s: args have %s: %v", tc.name, h, args)
			}
		}
		n := len(args)
		if args[n-1] != javaHarnessMain || args[n-2] == "" || !strings.Contains(joined, " -cp /a.jar:/b.jar ") {
			t.Errorf("%s: classpath or main class: %v", tc.name, args)
		}
	}
	if heapSizeLimit(0) != 1<<30 || heapSizeLimit(200<<30) != 168<<30 {
		t.Errorf("heapSizeLimit: %d %d", heapSizeLimit(0), heapSizeLimit(200<<30))
	}
}

func TestJavaWorkerEnv(t *testing.T) {
	env := strings.Join(javaWorkerEnv("w7", Endpoints{Control: "localhost:1", Logging: "localhost:2"}), "\n")
	for _, want := range []string{"HARNESS_ID=w7", `CONTROL_API_SERVICE_DESCRIPTOR=url:"localhost:1"`,
		`LOGGING_API_SERVICE_DESCRIPTOR=url:"localhost:2"`, "RUNNER_CAPABILITIES="} {
		if !strings.Contains(strings.ReplaceAll(env, " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
}

func TestPathingManifest(t *testing.T) {
	cp := []string{"/a/b c.jar", "/" + strings.Repeat("x", 100) + ".jar"}
	m := string(pathingManifest(cp))
	for _, line := range strings.Split(m, "\r\n") {
		if len(line) > 72 {
			t.Errorf("line of %d bytes: %q", len(line), line)
		}
	}
	// Continuation lines start with one space, which is not part of the value.
	value := strings.ReplaceAll(m, "\r\n ", "")
	if !strings.Contains(value, "Class-Path: file:///a/b%20c.jar file:///"+strings.Repeat("x", 100)+".jar\r\n") {
		t.Errorf("manifest:\n%s", m)
	}
}
