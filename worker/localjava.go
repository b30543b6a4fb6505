package worker

import (
	"archive/zip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
)

// prepareJava sets up what the Java SDK container's boot would: a java of
// the image's Java (or newer), the harness of the image's Beam version,
// and the JVM's command line for FnHarness with the staged jars after
// the harness on its classpath.
func (l *Launcher) prepareJava(ctx context.Context, le *localEnv, img SDKImage, files []stagedFile) error {
	found, err := l.findJavas(ctx)
	if err != nil {
		return err
	}
	java, note, err := chooseJava(img.Java, found, l.cfg.Java != "")
	if err != nil {
		return err
	}
	h, err := l.javaHarness(ctx, img.Version, files)
	if err != nil {
		return err
	}
	opts, err := protojson.Marshal(l.job.Options)
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
		opts: l.job.Options, jamm: h.jamm, classpath: cp, dir: le.dir})
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
func (l *Launcher) findJavas(ctx context.Context) ([]javaInstall, error) {
	if l.cfg.Java != "" {
		j, err := probeJava(ctx, javaBinary(l.cfg.Java), "--sdk_java")
		if err != nil {
			return nil, fmt.Errorf("--sdk_java %s: %w", l.cfg.Java, err)
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
	homes, _ := filepath.Glob(filepath.Join(l.jvmDir(), "*", "bin", "java"))
	sort.Strings(homes)
	for _, p := range homes {
		cands = append(cands, [2]string{p, l.jvmDir()})
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

func (l *Launcher) jvmDir() string {
	if l.cfg.JVMDir != "" {
		return l.cfg.JVMDir
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
