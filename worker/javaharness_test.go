package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/proto"
)

// fakeJavaHome makes a Java home whose release file says version; its
// java is never run (the release file answers).
func fakeJavaHome(t *testing.T, dir, version string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "release"), []byte("JAVA_VERSION=\""+version+"\"\n"), 0o644)
	if err := os.WriteFile(filepath.Join(dir, "bin", "java"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "bin", "java")
}

// Runtimes are found in JAVA_HOME, then PATH, then the JVM directory,
// each once however it is reached.
func TestFindJavas(t *testing.T) {
	jvms, bin := t.TempDir(), t.TempDir()
	fakeJavaHome(t, filepath.Join(jvms, "a-11"), "11.0.2")
	j21 := fakeJavaHome(t, filepath.Join(jvms, "b-21"), "21.0.1")
	home := t.TempDir()
	fakeJavaHome(t, home, "17.0.15")
	if err := os.Symlink(j21, filepath.Join(bin, "java")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JAVA_HOME", home)
	t.Setenv("PATH", bin)
	l := NewLauncher(Config{Java: JavaConfig{JVMDir: jvms}}, Job{})
	found, err := javaOf(l).findJavas(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range found {
		got = append(got, j.from+":"+string(rune('0'+j.major/10))+string(rune('0'+j.major%10)))
	}
	if want := "JAVA_HOME:17 PATH:21 " + jvms + ":11"; strings.Join(got, " ") != want {
		t.Errorf("found %v, want %s", got, want)
	}
	l = NewLauncher(Config{Java: JavaConfig{Runtime: filepath.Join(jvms, "a-11")}}, Job{})
	if found, err := javaOf(l).findJavas(context.Background()); err != nil || len(found) != 1 || found[0].major != 11 || found[0].from != "--sdk_java" {
		t.Errorf("--sdk_java as a Java home: %v, %v", found, err)
	}
	l = NewLauncher(Config{Java: JavaConfig{Runtime: "/no/such/java"}}, Job{})
	if _, err := javaOf(l).findJavas(context.Background()); err == nil || !strings.Contains(err.Error(), "--sdk_java /no/such/java") {
		t.Errorf("missing --sdk_java: %v", err)
	}
}

// A Java image with no Java of its version or newer fails at start,
// naming the versions and the flag.
func TestJavaImageWithoutJava(t *testing.T) {
	jvms := t.TempDir()
	fakeJavaHome(t, filepath.Join(jvms, "old"), "11.0.2")
	t.Setenv("JAVA_HOME", "")
	t.Setenv("PATH", t.TempDir())
	l := NewLauncher(Config{Docker: noDocker, Java: JavaConfig{JVMDir: jvms, Classpath: t.TempDir()}}, Job{WorkDir: t.TempDir()})
	_, err := l.Start(context.Background(), "java", dockerEnv("apache/beam_java17_sdk:2.73.0"), "w", Endpoints{})
	if err == nil || !strings.Contains(err.Error(), "the image is Java 17, but only older") || !strings.Contains(err.Error(), "--sdk_java") ||
		!strings.Contains(err.Error(), "apache/beam_java17_sdk:2.73.0") {
		t.Fatalf("err = %v", err)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// failingMaven is an mvn that fails as Maven does for an unserved
// version, and counts its runs in the file it returns.
func failingMaven(t *testing.T) (mvn, runs string) {
	dir := t.TempDir()
	mvn, runs = filepath.Join(dir, "mvn"), filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho run >> " + runs + "\nsleep 0.2\n" +
		"echo '[ERROR] Failed to execute goal: org.apache.beam:beam-sdks-java-harness:pom:2.77.0 was not found in https://repo.maven.apache.org/maven2'\nexit 1\n"
	if err := os.WriteFile(mvn, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return mvn, runs
}

func TestJavaHarnessSources(t *testing.T) {
	ctx := context.Background()
	cfg := func(c JavaConfig) *javaRuntime {
		if c.MavenRepo == "" {
			c.MavenRepo = t.TempDir()
		}
		if c.CacheDir == "" {
			c.CacheDir = t.TempDir()
		}
		if c.Maven == "" {
			c.Maven = "/no/such/mvn"
		}
		return javaOf(NewLauncher(Config{Java: c}, Job{}))
	}
	t.Run("flag", func(t *testing.T) {
		dir := t.TempDir()
		for _, n := range []string{"z.jar", "jamm-0.4.0.jar", "a.jar", "notes.txt"} {
			touch(t, filepath.Join(dir, n))
		}
		h, err := cfg(JavaConfig{Classpath: dir}).javaHarness(ctx, "2.73.0", []stagedFile{{name: "beam-sdks-java-harness-2.73.0.jar"}})
		if err != nil || strings.Join(h.jars, " ") != filepath.Join(dir, "a.jar")+" "+filepath.Join(dir, "z.jar") || h.jamm != filepath.Join(dir, "jamm-0.4.0.jar") {
			t.Errorf("%+v, %v", h, err)
		}
		if _, err := cfg(JavaConfig{Classpath: t.TempDir()}).javaHarness(ctx, "2.73.0", nil); err == nil || !strings.Contains(err.Error(), "--sdk_java_classpath") {
			t.Errorf("empty dir: %v", err)
		}
	})
	t.Run("staged", func(t *testing.T) {
		h, err := cfg(JavaConfig{}).javaHarness(ctx, "2.73.0", []stagedFile{{name: "beam-sdks-java-harness-2.73.0-abc.jar"}})
		if err != nil || len(h.jars) != 0 || !strings.Contains(h.from, "staged") {
			t.Errorf("%+v, %v", h, err)
		}
	})
	t.Run("maven repository", func(t *testing.T) {
		repo := t.TempDir()
		set, _ := harnessSet("2.73.0", []byte(harnessPOM))
		os.MkdirAll(filepath.Dir(harnessCoord("2.73.0").repoPath(repo, "pom")), 0o755)
		os.WriteFile(harnessCoord("2.73.0").repoPath(repo, "pom"), []byte(harnessPOM), 0o644)
		for _, c := range set {
			touch(t, c.repoPath(repo, "jar"))
		}
		h, err := cfg(JavaConfig{MavenRepo: repo}).javaHarness(ctx, "2.73.0", nil)
		if err != nil || len(h.jars) != 5 || !strings.HasSuffix(h.jars[4], "beam-sdks-java-harness-2.73.0.jar") || !strings.HasSuffix(h.jamm, "jamm-0.4.0.jar") {
			t.Errorf("%+v, %v", h, err)
		}
		os.Remove(set[1].repoPath(repo, "jar")) // slf4j-jdk14 missing: not usable
		if _, err := cfg(JavaConfig{MavenRepo: repo}).javaHarness(ctx, "2.73.0", nil); err == nil {
			t.Error("a repository without the slf4j binding used")
		}
	})
	t.Run("cache", func(t *testing.T) {
		cache := t.TempDir()
		dir := filepath.Join(cache, "beam-2.73.0")
		touch(t, filepath.Join(dir, "jars", "h.jar"))
		touch(t, filepath.Join(dir, "jars", "jamm-0.4.0.jar"))
		os.WriteFile(filepath.Join(dir, harnessList), []byte("jars/h.jar\njars/jamm-0.4.0.jar\n"), 0o644)
		h, err := cfg(JavaConfig{CacheDir: cache}).javaHarness(ctx, "2.73.0", nil)
		if err != nil || len(h.jars) != 1 || h.jamm == "" {
			t.Errorf("%+v, %v", h, err)
		}
	})
}

// Jobs that need an unserved version at once run mvn once, and fail
// with Maven's error, the version and the flag; the failure is
// remembered for the next job.
func TestHarnessFetchFailsOnce(t *testing.T) {
	mvn, runs := failingMaven(t)
	l := NewLauncher(Config{Java: JavaConfig{MavenRepo: t.TempDir(), CacheDir: t.TempDir(), Maven: mvn}}, Job{})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = javaOf(l).javaHarness(context.Background(), "2.77.0", nil)
		}()
	}
	wg.Wait()
	if _, err := javaOf(l).javaHarness(context.Background(), "2.77.0", nil); err == nil {
		t.Error("the next job succeeded")
	}
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "no Beam Java harness 2.77.0") || !strings.Contains(err.Error(), "--sdk_java_classpath") ||
			!strings.Contains(err.Error(), "pom:2.77.0 was not found") {
			t.Errorf("err = %v", err)
		}
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 1 {
		t.Errorf("mvn ran %d times, want once", strings.Count(string(b), "run"))
	}
}

func TestMavenError(t *testing.T) {
	out := "\x1b[0m\x1b[0m[ERROR] Failed to execute goal: Unable to find artifact. x:y:pom:2.77.0 was not found\n[ERROR] \n[ERROR]   x:y:pom:2.77.0\n"
	if got := mavenError(out); got != "Failed to execute goal: Unable to find artifact. x:y:pom:2.77.0 was not found" {
		t.Errorf("mavenError = %q", got)
	}
	if got := mavenError("downloading\nkilled\n"); got != "killed" {
		t.Errorf("mavenError without [ERROR] = %q", got)
	}
}

func TestLocalSDKProcess(t *testing.T) {
	java := []string{"beam:coder:bytes:v1", "beam:version:sdk_base:apache/beam_java17_sdk:2.73.0"}
	python := []string{"beam:version:sdk_base:apache/beam_python3.11_sdk:2.77.0"}
	goSDK := []string{"beam:version:sdk_base:go:apache/beam_go_sdk:2.77.0"}
	boot := filepath.Join(t.TempDir(), "boot") // a copy of the container's layout
	if err := os.WriteFile(boot, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cmd  string
		caps []string
		want string // the SDK that runs here, "" for none
	}{
		{"python without command", "", python, "python"},
		{"java without command", "", java, "java"},
		{"java boot not here", "/no/such/opt/apache/beam/boot", java, "java"},
		{"java boot here", boot, java, ""},
		{"java with its own command", "/no/such/run-java.sh", java, ""},
		{"go", "", goSDK, ""},
		{"no sdk", "", nil, ""},
	} {
		pl, _ := proto.Marshal(&pipepb.ProcessPayload{Command: tc.cmd})
		e, err := sdkenv.Parse(&pipepb.Environment{Urn: URNProcess, Payload: pl, Capabilities: tc.caps})
		if err != nil {
			t.Fatal(err)
		}
		img, ok := localSDKProcess(e)
		if got := map[bool]string{true: string(img.SDK)}[ok]; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A Java worker is java with the boot's environment and command line,
// in the server's working directory; how it ends is reported.
func TestJavaWorkerCommand(t *testing.T) {
	home := t.TempDir()
	java := fakeJavaHome(t, home, "17.0.15")
	script := "#!/bin/sh\necho \"PWD=$(pwd)\"\necho \"HARNESS_ID=$HARNESS_ID\"\necho \"CONTROL=$CONTROL_API_SERVICE_DESCRIPTOR\"\n" +
		"echo \"OPTS=$(cat $PIPELINE_OPTIONS_FILE)\"\necho \"RUNNER_CAPABILITIES=${RUNNER_CAPABILITIES-unset}\"\necho \"ARGS=$*\"\nexit 3\n"
	if err := os.WriteFile(java, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	jars := t.TempDir()
	touch(t, filepath.Join(jars, "beam-sdks-java-harness-2.73.0.jar"))
	touch(t, filepath.Join(jars, "jamm-0.4.0.jar"))
	env := dockerEnv("apache/beam_java17_sdk:2.73.0")
	env.Dependencies = append(env.Dependencies, fileDep("/s/app", "app.jar", ""))
	l := NewLauncher(Config{Docker: noDocker, Java: JavaConfig{Runtime: home, Classpath: jars}},
		Job{WorkDir: t.TempDir(), Artifacts: mapOpener{"/s/app": "jar"}})
	h, err := l.Start(context.Background(), "e", env, "w1", Endpoints{Control: "localhost:1", Logging: "localhost:2"})
	if err != nil {
		t.Fatal(err)
	}
	<-h.Exited()
	out := strings.Join(h.(Reporter).Output(), "\n")
	wd, _ := os.Getwd()
	for _, want := range []string{"PWD=" + wd, "HARNESS_ID=w1", `localhost:1`, "OPTS={}", "RUNNER_CAPABILITIES=\n",
		"-javaagent:" + filepath.Join(jars, "jamm-0.4.0.jar"), "--add-opens=java.base/java.nio=ALL-UNNAMED",
		"-cp " + filepath.Join(jars, "beam-sdks-java-harness-2.73.0.jar") + ":", "/staged/app.jar " + javaHarnessMain} {
		if !strings.Contains(out+"\n", want) {
			t.Errorf("the worker's output lacks %q:\n%s", want, out)
		}
	}
	if exit := h.(Reporter).Exit(); exit != "exited with status 3" {
		t.Errorf("exit = %q", exit)
	}
}
