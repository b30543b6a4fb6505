package worker

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// The Java SDK container's boot (sdks/java/container/boot.go) starts this
// class; its jars in /opt/apache/beam/jars are the harness, the slf4j
// bindings and bridges, and jamm.
const (
	javaHarnessMain     = "org.apache.beam.fn.harness.FnHarness"
	javaHarnessArtifact = "beam-sdks-java-harness"
	javaHarnessClass    = "org/apache/beam/fn/harness/FnHarness.class"
)

// javaInstall is a Java runtime found on this machine.
type javaInstall struct {
	path  string // the java binary
	major int    // 17 for Java 17.0.15
	from  string // where it was found, for messages: "--sdk_java", "JAVA_HOME", "PATH", "/usr/lib/jvm"
}

func (j javaInstall) String() string {
	return fmt.Sprintf("%s (Java %d, from %s)", j.path, j.major, j.from)
}

// chooseJava picks the runtime for an image of Java want among found, in
// order of preference. A runtime named by the flag (flagged: found[0]) is
// taken if it is not older than want. Otherwise the first of exactly
// want, else the oldest newer one, with a note: a newer JVM runs the
// bytecode an older one does, while an older one cannot load classes
// compiled for the image's Java. Only older ones is an error.
func chooseJava(want int, found []javaInstall, flagged bool) (javaInstall, string, error) {
	if flagged && len(found) > 0 {
		j := found[0]
		if j.major < want {
			return javaInstall{}, "", fmt.Errorf("the image is Java %d, but --sdk_java %s is older; name a Java %d or newer", want, j, want)
		}
		return j, newerNote(want, j), nil
	}
	best := -1
	for i, j := range found {
		if j.major == want {
			return j, "", nil
		}
		if j.major > want && (best < 0 || j.major < found[best].major) {
			best = i
		}
	}
	if best >= 0 {
		return found[best], newerNote(want, found[best]), nil
	}
	if len(found) == 0 {
		return javaInstall{}, "", fmt.Errorf("the image is Java %d, and no Java runtime is here (--sdk_java, JAVA_HOME, java on PATH, /usr/lib/jvm); install Java %d or name one with --sdk_java", want, want)
	}
	var names []string
	for _, j := range found {
		names = append(names, j.String())
	}
	return javaInstall{}, "", fmt.Errorf("the image is Java %d, but only older Java runtimes are here: %s; install Java %d or newer, or name one with --sdk_java", want, strings.Join(names, "; "), want)
}

func newerNote(want int, j javaInstall) string {
	if j.major == want {
		return ""
	}
	return fmt.Sprintf("no Java %d here, so Java %d runs it", want, j.major)
}

// javaMajor reads the major version from a Java version string:
// "17.0.15" is 17, "1.8.0_292" is 8, "21-ea" is 21.
func javaMajor(version string) (int, error) {
	v := strings.TrimPrefix(strings.TrimSpace(version), "1.")
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		v = v[:end]
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("not a Java version: %q", version)
	}
	return n, nil
}

// releaseVersion reads JAVA_VERSION from a Java home's release file.
func releaseVersion(release string) (string, bool) {
	for _, line := range strings.Split(release, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "JAVA_VERSION="); ok {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// versionOutput reads the version from `java -version`'s first line,
// e.g. `openjdk version "17.0.15" 2025-04-15`.
func versionOutput(out string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		if i := strings.Index(line, ` version "`); i >= 0 {
			rest := line[i+len(` version "`):]
			if j := strings.IndexByte(rest, '"'); j > 0 {
				return rest[:j], true
			}
		}
	}
	return "", false
}

// mavenCoord names one Maven artifact.
type mavenCoord struct {
	Group    string `xml:"groupId"`
	Artifact string `xml:"artifactId"`
	Version  string `xml:"version"`
}

func (c mavenCoord) String() string { return c.Group + ":" + c.Artifact + ":" + c.Version }

// jarName is the file name Maven gives the artifact's jar.
func (c mavenCoord) jarName() string { return c.Artifact + "-" + c.Version + ".jar" }

// repoPath is where a Maven repository keeps the artifact's file of ext.
func (c mavenCoord) repoPath(repo, ext string) string {
	parts := append([]string{repo}, strings.Split(c.Group, ".")...)
	parts = append(parts, c.Artifact, c.Version, c.Artifact+"-"+c.Version+"."+ext)
	return filepath.Join(parts...)
}

func harnessCoord(version string) mavenCoord {
	return mavenCoord{"org.apache.beam", javaHarnessArtifact, version}
}

type pomDeps struct {
	Deps []mavenCoord `xml:"dependencies>dependency"`
}

// harnessSet is what the Java SDK image carries of Beam version's
// harness, in the boot's classpath order: the slf4j API with its JUL
// binding and the commons-logging and log4j bridges (at the slf4j version
// the harness's POM names), the harness, then jamm (its agent). The
// harness's POM declares the rest (Beam's Java core and its dependencies)
// as provided: the job's staged jars bring them, as they do to the image.
func harnessSet(version string, pom []byte) ([]mavenCoord, error) {
	var p pomDeps
	if err := xml.Unmarshal(pom, &p); err != nil {
		return nil, fmt.Errorf("the POM of %s: %w", harnessCoord(version), err)
	}
	var out []mavenCoord
	var jamm *mavenCoord
	for _, d := range p.Deps {
		d = mavenCoord{strings.TrimSpace(d.Group), strings.TrimSpace(d.Artifact), strings.TrimSpace(d.Version)}
		if d.Version == "" || strings.Contains(d.Version, "$") {
			continue // managed or a property: not one the image pins
		}
		switch {
		case d.Group == "org.slf4j" && d.Artifact == "slf4j-api":
			for _, a := range []string{"slf4j-api", "slf4j-jdk14", "jcl-over-slf4j", "log4j-over-slf4j"} {
				out = append(out, mavenCoord{d.Group, a, d.Version})
			}
		case d.Group == "com.github.jbellis" && d.Artifact == "jamm":
			jamm = &d
		}
	}
	out = append(out, harnessCoord(version))
	if jamm != nil {
		out = append(out, *jamm)
	}
	return out, nil
}

// harnessJars is a Java harness and the jars the image puts beside it.
type harnessJars struct {
	jars []string // in classpath order, jamm excluded
	jamm string   // the jamm jar (agent and module), "" if none
	from string   // where they come from, for the job's message
}

// splitJamm takes jamm out of jars: the boot puts it on the module path
// and loads it as an agent, not on the classpath.
func splitJamm(jars []string, from string) harnessJars {
	h := harnessJars{from: from}
	for _, j := range jars {
		if base := filepath.Base(j); h.jamm == "" && strings.HasPrefix(base, "jamm") && strings.HasSuffix(base, ".jar") {
			h.jamm = j
			continue
		}
		h.jars = append(h.jars, j)
	}
	return h
}

// stagedCarriesHarness reports whether the job's staged jars bring the
// harness: one named as Beam's harness artifact, or a (shaded) jar that
// holds FnHarness, which hasClass checks.
func stagedCarriesHarness(files []stagedFile, hasClass func(path string) bool) bool {
	for _, f := range files {
		if strings.HasPrefix(f.name, javaHarnessArtifact+"-") && strings.HasSuffix(f.name, ".jar") {
			return true
		}
	}
	for _, f := range files {
		if strings.HasSuffix(f.name, ".jar") && hasClass(f.path) {
			return true
		}
	}
	return false
}

// javaClasspath is the harness's jars, then every staged file in staging
// order, as the boot builds it.
func javaClasspath(h harnessJars, staged []stagedFile) []string {
	cp := append([]string(nil), h.jars...)
	for _, f := range staged {
		cp = append(cp, f.path)
	}
	return cp
}

// jvmSpec is what the JVM's command line follows from.
type jvmSpec struct {
	major     int    // of the JVM that runs
	physMem   uint64 // bytes; 0 if unknown
	optsJSON  string // the job's options, as the boot sees them
	opts      *structpb.Struct
	jamm      string
	classpath []string
	dir       string // the environment's directory: heap dumps, crash logs
}

// jvmArgs is the boot's java command line for a JVM of s.major: heap and
// GC flags, the jamm agent, heap dumps when asked, the image's option
// files for that Java (jamm as a module; java.nio opened for Arrow from
// 17; java.lang and java.util opened to jamm from 21), the classpath,
// the module flags and Avro classes the options name, and the main class.
// Crash logs go to dir rather than the working directory, which is the
// user's.
func jvmArgs(s jvmSpec) []string {
	heap := heapSizeLimit(s.physMem)
	if strings.Contains(s.optsJSON, "set_recommended_max_xmx") {
		heap = 32 << 30
	}
	args := []string{"-Xmx" + strconv.FormatUint(heap, 10), "-XX:+UseParallelGC",
		"-XX:+AlwaysActAsServerClassMachine", "-XX:-OmitStackTraceInFastThrow",
		"-XX:ErrorFile=" + filepath.Join(s.dir, "hs_err_pid%p.log")}
	jamm := s.jamm != "" && !strings.Contains(s.optsJSON, "disable_jamm_agent")
	if jamm {
		args = append(args, "-javaagent:"+s.jamm)
	}
	legacy := s.opts.GetFields()["options"].GetStructValue()
	if legacy.GetFields()["enableHeapDumps"].GetBoolValue() {
		dumps := filepath.Join(s.dir, "heapdumps")
		args = append(args, "-XX:+HeapDumpOnOutOfMemoryError", "-Dbeam.fn.heap_dump_dir="+dumps,
			"-XX:HeapDumpPath="+filepath.Join(dumps, "heap_dump.hprof"))
	}
	args = append(args, imageJavaOptions(s.major, s.jamm)...)
	args = append(args, "-cp", strings.Join(s.classpath, string(filepath.ListSeparator)))
	if legacy != nil {
		args = append(args, legacyModuleArgs(legacy)...)
	}
	return append(args, javaHarnessMain)
}

// imageJavaOptions are the flags of the image's option files
// (sdks/java/container/javaNN/option-*.json) for a JVM of major.
func imageJavaOptions(major int, jamm string) []string {
	var args []string
	if major >= 17 {
		args = append(args, "--add-opens=java.base/java.nio=ALL-UNNAMED")
	}
	if jamm != "" && major >= 11 {
		args = append(args, "--add-modules=jamm", "--module-path="+jamm)
		if major >= 21 {
			args = append(args, "--add-opens=java.base/java.lang=jamm", "--add-opens=java.base/java.util=jamm")
		}
	}
	return args
}

// legacyModuleArgs reads what the boot reads from the options' legacy
// "options" object: modules to open and add, and Avro's trusted classes.
func legacyModuleArgs(o *structpb.Struct) []string {
	var args []string
	for _, m := range o.GetFields()["jdkAddOpenModules"].GetListValue().GetValues() {
		args = append(args, "--add-opens="+m.GetStringValue())
	}
	for _, m := range o.GetFields()["jdkAddRootModules"].GetListValue().GetValues() {
		args = append(args, "--add-modules="+m.GetStringValue())
	}
	classes := []string{"java.math.BigDecimal", "java.math.BigInteger", "java.net.URI", "java.net.URL", "java.io.File", "java.lang.Integer"}
	if v, ok := o.GetFields()["avroSerializableClasses"]; ok {
		classes = nil
		for _, c := range v.GetListValue().GetValues() {
			if c.GetStringValue() != "" {
				classes = append(classes, c.GetStringValue())
			}
		}
	}
	if len(classes) > 0 {
		args = append(args, "-Dorg.apache.avro.SERIALIZABLE_CLASSES="+strings.Join(classes, ","))
	}
	return args
}

// heapSizeLimit is the boot's -Xmx: 70% of the machine's memory, or all
// but 32 GiB on machines with more than about 107 GiB; 1 GiB if unknown.
func heapSizeLimit(size uint64) uint64 {
	if size == 0 {
		return 1 << 30
	}
	lim := size * 70 / 100
	if size-lim < 32<<30 {
		return lim
	}
	return size - 32<<30
}

// javaWorkerEnv is what the boot exports for FnHarness, besides the
// options file and the semi-persistent directory every local worker gets.
// The runner advertises no runner capabilities and no status endpoint,
// so RUNNER_CAPABILITIES is empty, as the boot makes it then.
func javaWorkerEnv(workerID string, ep Endpoints) []string {
	return []string{
		"HARNESS_ID=" + workerID,
		"LOGGING_API_SERVICE_DESCRIPTOR=" + descriptor(ep.Logging),
		"CONTROL_API_SERVICE_DESCRIPTOR=" + descriptor(ep.Control),
		"RUNNER_CAPABILITIES=",
	}
}

// sortedJars lists the .jar names among names, sorted.
func sortedJars(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".jar") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// maxClasspathArg is the longest -cp argument passed as is: Linux refuses
// a single argument over 128 KiB, so a longer classpath goes into a
// pathing jar, as the boot always does.
const maxClasspathArg = 64 << 10

// pathingManifest is the manifest of a jar whose Class-Path is cp (as
// file: URLs), in the manifest format's 72-byte lines.
func pathingManifest(cp []string) []byte {
	var urls []string
	for _, p := range cp {
		urls = append(urls, (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String())
	}
	var b strings.Builder
	b.WriteString("Manifest-Version: 1.0\r\nCreated-By: beam-runner\r\n")
	line := "Class-Path: " + strings.Join(urls, " ")
	for first := true; line != ""; first = false {
		n := 72
		if !first {
			b.WriteString(" ")
			n = 71
		}
		n = min(n, len(line))
		b.WriteString(line[:n] + "\r\n")
		line = line[n:]
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}
