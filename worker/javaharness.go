package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/beam-runner/beam-runner/internal/textclip"
)

// How long one mvn run may take, and how long a failed fetch is
// remembered, so that a suite of jobs of an unserved version does not
// run mvn for each.
const (
	mvnTimeout     = 5 * time.Minute
	fetchFailedTTL = 5 * time.Minute
	harnessList    = "classpath.txt" // a fetched harness's jars, in order
)

// javaHarness finds Beam version's Java harness: the jars in the
// --sdk_java_classpath directory; else the job's staged jars, if they
// carry it; else the local Maven repository; else fetched once with mvn
// into the cache. The error names the version and the flag.
func (r *javaRuntime) javaHarness(ctx context.Context, version string, files []stagedFile) (harnessJars, error) {
	if dir := r.cfg.Classpath; dir != "" {
		return jarsInDir(dir)
	}
	if stagedCarriesHarness(files, jarHasHarness) {
		return harnessJars{from: "the job's staged jars, which carry the harness"}, nil
	}
	repo := r.mavenRepo()
	if h, err := harnessInRepo(repo, version); err == nil {
		return h, nil
	}
	h, err := r.fetchHarness(ctx, version)
	if err != nil {
		return harnessJars{}, fmt.Errorf("no Beam Java harness %s here: the job's staged jars do not carry it, the local Maven repository %s does not hold %s with the jars beside it, and fetching it failed: %v; name a directory of the harness's jars (%s-%s.jar and its slf4j and jamm jars) with --sdk_java_classpath",
			version, repo, harnessCoord(version), err, javaHarnessArtifact, version)
	}
	return h, nil
}

// jarsInDir is the --sdk_java_classpath directory's jars, sorted by name.
func jarsInDir(dir string) (harnessJars, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return harnessJars{}, fmt.Errorf("--sdk_java_classpath: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	jars := sortedJars(names)
	if len(jars) == 0 {
		return harnessJars{}, fmt.Errorf("--sdk_java_classpath %s holds no jars", dir)
	}
	for i, j := range jars {
		jars[i] = filepath.Join(dir, j)
	}
	return splitJamm(jars, "--sdk_java_classpath "+dir), nil
}

// jarHasHarness reports whether the jar at path holds FnHarness; a file
// that is not a jar does not.
func jarHasHarness(path string) bool {
	r, err := zip.OpenReader(path)
	if err != nil {
		return false
	}
	defer r.Close()
	for _, f := range r.File {
		if f.Name == javaHarnessClass {
			return true
		}
	}
	return false
}

func (r *javaRuntime) mavenRepo() string {
	if r.cfg.MavenRepo != "" {
		return r.cfg.MavenRepo
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".m2", "repository")
	}
	return filepath.Join(home, ".m2", "repository")
}

// harnessInRepo finds the harness's set of jars (harnessSet) in a Maven
// repository's layout.
func harnessInRepo(repo, version string) (harnessJars, error) {
	pom, err := os.ReadFile(harnessCoord(version).repoPath(repo, "pom"))
	if err != nil {
		return harnessJars{}, err
	}
	set, err := harnessSet(version, pom)
	if err != nil {
		return harnessJars{}, err
	}
	var jars []string
	for _, c := range set {
		path := c.repoPath(repo, "jar")
		if _, err := os.Stat(path); err != nil {
			return harnessJars{}, err
		}
		jars = append(jars, path)
	}
	return splitJamm(jars, "the local Maven repository "+repo), nil
}

// harnessFetch is one fetch of a version's harness, shared by the jobs
// that need it while it runs (and, if it failed, for fetchFailedTTL).
type harnessFetch struct {
	done chan struct{}
	jars harnessJars
	err  error
	at   time.Time // when it ended
}

var harnessFetches struct {
	sync.Mutex
	m map[string]*harnessFetch
}

// fetchHarness returns the harness fetched into the cache, fetching it
// once per server (and, under a file lock, once per cache) if need be.
// The fetch runs on its own deadline: a job that gives up waiting does
// not fail it for the others.
func (r *javaRuntime) fetchHarness(ctx context.Context, version string) (harnessJars, error) {
	cache, err := r.javaCacheDir()
	if err != nil {
		return harnessJars{}, err
	}
	key := cache + "\x00" + version
	harnessFetches.Lock()
	f := harnessFetches.m[key]
	if f == nil || f.stale() {
		f = &harnessFetch{done: make(chan struct{})}
		if harnessFetches.m == nil {
			harnessFetches.m = map[string]*harnessFetch{}
		}
		harnessFetches.m[key] = f
		go f.run(r, cache, version)
	}
	harnessFetches.Unlock()
	select {
	case <-f.done:
		return f.jars, f.err
	case <-ctx.Done():
		return harnessJars{}, fmt.Errorf("waiting for the harness fetch: %w", ctx.Err())
	}
}

// stale reports whether a finished fetch should run again: it failed
// long enough ago, or what it fetched is gone. Called under the lock.
func (f *harnessFetch) stale() bool {
	select {
	case <-f.done:
	default:
		return false // running
	}
	if f.err != nil {
		return time.Since(f.at) > fetchFailedTTL
	}
	for _, j := range f.jars.jars {
		if _, err := os.Stat(j); err != nil {
			return true
		}
	}
	if f.jars.jamm != "" {
		if _, err := os.Stat(f.jars.jamm); err != nil {
			return true
		}
	}
	return false
}

func (f *harnessFetch) run(r *javaRuntime, cache, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*mvnTimeout)
	defer cancel()
	f.jars, f.err = r.fetchIntoCache(ctx, cache, version)
	f.at = time.Now()
	close(f.done)
}

func (r *javaRuntime) javaCacheDir() (string, error) {
	if r.cfg.CacheDir != "" {
		return r.cfg.CacheDir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the Java harness: %w", err)
	}
	return filepath.Join(base, "beam-runner", "java"), nil
}

// fetchIntoCache fills cache/beam-VERSION with the harness's jars, unless
// another job or server did: the directory appears whole, by rename, with
// the list of its jars in classpath order.
func (r *javaRuntime) fetchIntoCache(ctx context.Context, cache, version string) (harnessJars, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return harnessJars{}, err
	}
	dir := filepath.Join(cache, "beam-"+version)
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return harnessJars{}, err
	}
	defer unlock()
	if h, err := readHarnessList(dir); err == nil {
		return h, nil
	}
	r.job.Warn(fmt.Sprintf("fetching Beam's Java harness %s with mvn into %s; later jobs reuse it", version, dir))
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	defer os.RemoveAll(tmp)
	if err := r.mvnFetch(ctx, version, tmp); err != nil {
		return harnessJars{}, err
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return harnessJars{}, err
	}
	return readHarnessList(dir)
}

// mvnFetch asks mvn for the harness's POM, then for the jars it names
// (harnessSet), into dir, and lists them there.
func (r *javaRuntime) mvnFetch(ctx context.Context, version, dir string) error {
	coord := harnessCoord(version)
	if err := r.mvn(ctx, dir, "dependency:copy", "-Dartifact="+coord.String()+":pom", "-DoutputDirectory="+dir); err != nil {
		return err
	}
	pom, err := os.ReadFile(filepath.Join(dir, coord.Artifact+"-"+version+".pom"))
	if err != nil {
		return err
	}
	set, err := harnessSet(version, pom)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pom.xml"), fetchPOM(set), 0o644); err != nil {
		return err
	}
	jars := filepath.Join(dir, "jars")
	if err := r.mvn(ctx, dir, "dependency:copy-dependencies", "-DoutputDirectory="+jars); err != nil {
		return err
	}
	var list []string
	for _, c := range set {
		list = append(list, filepath.Join("jars", c.jarName()))
	}
	return os.WriteFile(filepath.Join(dir, harnessList), []byte(strings.Join(list, "\n")+"\n"), 0o644)
}

// fetchPOM is a project that depends on exactly the jars of set.
func fetchPOM(set []mavenCoord) []byte {
	var b bytes.Buffer
	b.WriteString(`<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>` +
		"\n<groupId>beam-runner</groupId><artifactId>java-harness</artifactId><version>1</version>\n<dependencies>\n")
	for _, c := range set {
		fmt.Fprintf(&b, "<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>"+
			"<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>\n",
			xmlText(c.Group), xmlText(c.Artifact), xmlText(c.Version))
	}
	b.WriteString("</dependencies></project>\n")
	return b.Bytes()
}

func xmlText(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// readHarnessList reads a fetched harness's jars; all must be there.
func readHarnessList(dir string) (harnessJars, error) {
	lines := readLines(filepath.Join(dir, harnessList))
	if len(lines) == 0 {
		return harnessJars{}, fmt.Errorf("%s has no %s", dir, harnessList)
	}
	var jars []string
	for _, rel := range lines {
		path := filepath.Join(dir, rel)
		if _, err := os.Stat(path); err != nil {
			return harnessJars{}, err
		}
		jars = append(jars, path)
	}
	return splitJamm(jars, "the cache "+dir+" (fetched with mvn)"), nil
}

// mvn runs Maven in batch mode in dir, bounded by mvnTimeout; its error
// is Maven's first error line.
func (r *javaRuntime) mvn(ctx context.Context, dir string, args ...string) error {
	prog := r.cfg.Maven
	if prog == "" {
		prog = "mvn"
	}
	if _, err := exec.LookPath(prog); err != nil {
		return fmt.Errorf("no Maven (%s) to fetch it with: %w", prog, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, mvnTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, append([]string{"-B", "-q", "-Dstyle.color=never"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("mvn %s did not finish within %v", args[0], mvnTimeout)
	}
	if err != nil {
		return fmt.Errorf("mvn %s %s: %s", args[0], describeExit(err), mavenError(string(out)))
	}
	return nil
}

// ansiEscape matches the colour codes Maven prints even in batch mode.
var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// mavenError is the first of Maven's [ERROR] lines, or its last output.
func mavenError(out string) string {
	var last string
	for _, line := range strings.Split(ansiEscape.ReplaceAllString(out, ""), "\n") {
		line = strings.TrimSpace(line)
		if msg, ok := strings.CutPrefix(line, "[ERROR]"); ok && strings.TrimSpace(msg) != "" {
			return textclip.Clip(strings.TrimSpace(msg), 500)
		}
		if line != "" {
			last = line
		}
	}
	return textclip.Clip(last, 500)
}
