package validates

import (
	"archive/zip"
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestParseJavaClassList(t *testing.T) {
	got, err := ParseJavaClassList(strings.NewReader("# c\nParDoTest$TimerTests/testA  # why\nCreateTest/testCreate\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ParDoTest$TimerTests/testA", "CreateTest/testCreate"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"testA", "org.apache.X/testA", "A$/testA", "A/test-b", "A/a\nA/a"} {
		if _, err := ParseJavaClassList(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func jarOf(t *testing.T, files map[string]string) *zip.Reader {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for name, body := range files {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestValidatesRunnerClassesAndIncludes(t *testing.T) {
	cat := string(categoryDescriptor)
	jar := jarOf(t, map[string]string{
		"a/ATest.class":          "x" + cat + "y",
		"a/BTest$Inner.class":    cat,
		"a/BTest.class":          "nothing",
		"a/CTest.class":          "Lorg/apache/beam/sdk/testing/NeedsRunner;",
		"a/ValidatesRunner.java": cat,
	})
	got, err := ValidatesRunnerClasses(jar)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/ATest", "a/BTest"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("classes %q, want %q", got, want)
	}
	missing, err := MissingIncludes(strings.NewReader("# x\na/ATest$Inner.class\n"), got)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/BTest"}; !reflect.DeepEqual(missing, want) {
		t.Fatalf("missing %q, want %q", missing, want)
	}
}

func TestSurefireTests(t *testing.T) {
	got := SurefireTests([]string{"PipelineTest/testEmptyPipeline", "ParDoTest$TimerTests/testX"})
	if want := "PipelineTest#testEmptyPipeline,ParDoTest$TimerTests#testX"; got != want {
		t.Errorf("SurefireTests = %q, want %q", got, want)
	}
}
