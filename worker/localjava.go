package worker

import (
	"archive/zip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/beam-runner/beam-runner/worker/sdkenv"
	"google.golang.org/protobuf/encoding/protojson"
)

// JavaConfig is how local Java SDK workers run.
type JavaConfig struct {
	// Runtime is their java (a binary or a Java home); "" looks in
	// JAVA_HOME, PATH and JVMDir for the image's Java.
	Runtime string
	// Classpath is a directory of jars that take the place of Beam's
	// Java harness and the jars beside it; "" finds them (javaHarness).
	Classpath string
	// CacheDir keeps Java harnesses fetched with Maven; "" is
	// $XDG_CACHE_HOME/beam-runner/java.
	CacheDir string
	// MavenRepo is the local Maven repository; "" is ~/.m2/repository.
	MavenRepo string
	// Maven is the mvn that fetches harnesses; "" is mvn on PATH.
	Maven string
	// JVMDir holds Java homes to look in; "" is /usr/lib/jvm.
	JVMDir string
}

// javaRuntime runs Java SDK workers here: a JVM of the image's Java (or
// newer) running Beam's Java harness with the staged jars.
type javaRuntime struct {
	cfg JavaConfig
	job Job
}

func init() {
	registerRuntime(sdkenv.Java, runtimeSpec{process: true,
		new: func(cfg Config, job Job) runtime { return &javaRuntime{cfg: cfg.Java, job: job} }})
}

func (r *javaRuntime) command(le *localEnv, workerID string, ep Endpoints) (*exec.Cmd, []string) {
	return exec.Command(le.prog, le.args...), javaWorkerEnv(workerID, ep)
}

// prepare sets up what the Java SDK container's boot would: a java of
// the image's Java (or newer), the harness of the image's Beam version,
// and the JVM's command line for FnHarness with the staged jars after
// the harness on its classpath.
func (r *javaRuntime) prepare(ctx context.Context, le *localEnv, img sdkenv.Image, files []stagedFile) error {
	want, err := strconv.Atoi(img.Variant)
	if err != nil {
		return fmt.Errorf("image's Java version %q: %w", img.Variant, err)
	}
	found, err := r.findJavas(ctx)
	if err != nil {
		return err
	}
	java, note, err := chooseJava(want, found, r.cfg.Runtime != "")
	if err != nil {
		return err
	}
	h, err := r.javaHarness(ctx, img.Version, files)
	if err != nil {
		return err
	}
	opts, err := protojson.Marshal(r.job.Options)
	if err != nil {
		return fmt.Errorf("pipeline options: %w", err)
	}
	cp := javaClasspath(h, files)
	if len(strings.Join(cp, ":")) > maxClasspathArg {
		jar := filepath.Join(le.dir, "pathing.jar")
		if err := writePathingJar(jar, cp); err != nil {
			return fmt.Errorf("writing the classpath's pathing jar: %w", err)
		}
		cp = []string{jar}
	}
	le.prog = java.path
	le.args = jvmArgs(jvmSpec{major: java.major, physMem: physicalMemory(), optsJSON: string(opts),
		opts: r.job.Options, jamm: h.jamm, classpath: cp, dir: le.dir})
	le.about = fmt.Sprintf("%s running %s of Beam's Java harness %s from %s, then the job's %d staged files",
		java, javaHarnessMain, img.Version, h.from, len(files))
	if note != "" {
		le.about += "; " + note
	}
	return nil
}

// findJavas lists the Java runtimes here, in order of preference: the
// --sdk_java flag's (a java binary or a Java home), JAVA_HOME's, java on
// PATH, then those in /usr/lib/jvm. One whose version cannot be read is
// left out; the flag's is an error then.
func (r *javaRuntime) findJavas(ctx context.Context) ([]javaInstall, error) {
	if r.cfg.Runtime != "" {
		j, err := probeJava(ctx, javaBinary(r.cfg.Runtime), "--sdk_java")
		if err != nil {
			return nil, fmt.Errorf("--sdk_java %s: %w", r.cfg.Runtime, err)
		}
		return []javaInstall{j}, nil
	}
	var cands [][2]string // path, from
	if home := os.Getenv("JAVA_HOME"); home != "" {
		cands = append(cands, [2]string{filepath.Join(home, "bin", "java"), "JAVA_HOME"})
	}
	if p, err := exec.LookPath("java"); err == nil {
		cands = append(cands, [2]string{p, "PATH"})
	}
	homes, _ := filepath.Glob(filepath.Join(r.jvmDir(), "*", "bin", "java"))
	sort.Strings(homes)
	for _, p := range homes {
		cands = append(cands, [2]string{p, r.jvmDir()})
	}
	var out []javaInstall
	seen := map[string]bool{}
	for _, c := range cands {
		j, err := probeJava(ctx, c[0], c[1])
		if err != nil || seen[j.real()] {
			continue
		}
		seen[j.real()] = true
		out = append(out, j)
	}
	return out, nil
}

func (r *javaRuntime) jvmDir() string {
	if r.cfg.JVMDir != "" {
		return r.cfg.JVMDir
	}
	return "/usr/lib/jvm"
}

// javaBinary is the java of a Java home, or path itself.
func javaBinary(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return filepath.Join(path, "bin", "java")
	}
	return path
}

func (j javaInstall) real() string {
	if r, err := filepath.EvalSymlinks(j.path); err == nil {
		return r
	}
	return j.path
}

// javaProbes caches probed runtimes' versions by path.
var javaProbes struct {
	sync.Mutex
	m map[string]int
}

// probeJava reads a java's major version from its home's release file,
// else from `java -version` (which starts a JVM).
func probeJava(ctx context.Context, path, from string) (javaInstall, error) {
	j := javaInstall{path: path, from: from}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return j, err
	}
	javaProbes.Lock()
	defer javaProbes.Unlock()
	if major, ok := javaProbes.m[real]; ok {
		j.major = major
		return j, nil
	}
	version, err := javaVersion(ctx, real)
	if err != nil {
		return j, err
	}
	if j.major, err = javaMajor(version); err != nil {
		return j, fmt.Errorf("%s: %w", path, err)
	}
	if javaProbes.m == nil {
		javaProbes.m = map[string]int{}
	}
	javaProbes.m[real] = j.major
	return j, nil
}

func javaVersion(ctx context.Context, real string) (string, error) {
	release, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(real)), "release"))
	if err == nil {
		if v, ok := releaseVersion(string(release)); ok {
			return v, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, real, "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("asking %s for its version: %w", real, err)
	}
	if v, ok := versionOutput(string(out)); ok {
		return v, nil
	}
	return "", fmt.Errorf("%s -version printed no version: %s", real, strings.TrimSpace(string(out)))
}

// writePathingJar writes a jar at path that holds only a manifest whose
// Class-Path is cp.
func writePathingJar(path string, cp []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("META-INF/MANIFEST.MF")
	if err == nil {
		_, err = w.Write(pathingManifest(cp))
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
