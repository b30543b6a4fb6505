package validates

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// javaClassTestName matches a JUnit test named by its class's simple name
// (nested classes after '$', as JUnit's classname shows them) and method:
// "ParDoTest$TimerTests/testEventTimeTimerBounded".
var javaClassTestName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\$[A-Za-z0-9_]+)*/[A-Za-z_][A-Za-z0-9_]*$`)

// ParseJavaClassList reads a list of Java tests named Class/method, in the
// format of ParseList.
func ParseJavaClassList(r io.Reader) ([]string, error) {
	return parseNames(r, javaClassTestName, "a Java test named Class/method")
}

// categoryDescriptor is how a class file names the ValidatesRunner category
// when a test or class is annotated @Category(ValidatesRunner.class).
var categoryDescriptor = []byte("Lorg/apache/beam/sdk/testing/ValidatesRunner;")

// ValidatesRunnerClasses returns the top-level classes of a tests jar
// ("org/apache/beam/sdk/transforms/ParDoTest") whose class files, their own
// or their nested classes', name the ValidatesRunner category.
func ValidatesRunnerClasses(jar *zip.Reader) ([]string, error) {
	seen := map[string]bool{}
	for _, f := range jar.File {
		if !strings.HasSuffix(f.Name, ".class") {
			continue
		}
		b, err := readZipFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if bytes.Contains(b, categoryDescriptor) {
			top, _, _ := strings.Cut(strings.TrimSuffix(f.Name, ".class"), "$")
			seen[top] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out, nil
}

func readZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// MissingIncludes returns the classes that no line of a Surefire
// includesFile names, as "Class.class" or as one of its nested classes,
// "Class$Nested.class" (comments and blank lines skipped).
func MissingIncludes(includes io.Reader, classes []string) ([]string, error) {
	listed := map[string]bool{}
	sc := bufio.NewScanner(includes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		top, _, _ := strings.Cut(strings.TrimSuffix(line, ".class"), "$")
		listed[top] = true
	}
	var missing []string
	for _, c := range classes {
		if !listed[c] {
			missing = append(missing, c)
		}
	}
	return missing, sc.Err()
}

// SurefireTests turns Class/method names into Surefire's -Dtest syntax,
// Class#method separated by commas: a class name without a package
// matches that class in any package.
func SurefireTests(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.Replace(n, "/", "#", 1)
	}
	return strings.Join(out, ",")
}
