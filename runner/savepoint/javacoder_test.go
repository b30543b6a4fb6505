package savepoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func javaPayload(t *testing.T, build, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "javacoders", build, id))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every Java coder payload of a real pipeline parses; only the schema
// coders hold UUIDs.
func TestJavaStreamParsesJavaCoders(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "javacoders", "build1", "*"))
	for _, f := range files {
		id := filepath.Base(f)
		if id == "README.md" {
			continue
		}
		raw, err := unsnappy(javaPayload(t, "build1", id))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		r := &javaStream{b: raw}
		if err := r.stream(); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if want := bytes.HasPrefix([]byte(id), []byte("SchemaCoder")); (len(r.uuids) > 0) != want {
			t.Errorf("%s: %d UUIDs found", id, len(r.uuids))
		}
	}
}

// Two builds of one pipeline: the same schema coder under new UUIDs has
// one spec; another schema, or a changed byte outside the UUIDs, another.
func TestJavaCoderDigestIgnoresSchemaUUIDs(t *testing.T) {
	a, b := javaPayload(t, "build1", "SchemaCoder"), javaPayload(t, "build2", "SchemaCoder")
	if bytes.Equal(a, b) {
		t.Fatal("the two builds' payloads are the same: the test shows nothing")
	}
	da, db := payloadDigest(URNJavaCoder, a), payloadDigest(URNJavaCoder, b)
	if da != db {
		t.Errorf("one coder, two builds: %s and %s", da, db)
	}
	if da[:2] != "#j" {
		t.Errorf("digest %s: want the Java identity's", da)
	}
	other := payloadDigest(URNJavaCoder, javaPayload(t, "build1", "SchemaCoder1"))
	if other == da {
		t.Errorf("two schemas share digest %s", da)
	}
	if payloadDigest("beam:coder:other:v1", a) == payloadDigest("beam:coder:other:v1", b) {
		t.Error("another URN's payloads are compared as bytes")
	}
}

// A byte of the stream outside the UUIDs changes the spec.
func TestJavaCoderDigestSeesOtherChanges(t *testing.T) {
	raw, err := unsnappy(javaPayload(t, "build1", "SchemaCoder"))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := javaCoderIdentity(raw)
	if !ok {
		t.Fatal("an unframed stream is not read")
	}
	// A field name of the schema ("topic") spelled otherwise.
	i := bytes.Index(raw, []byte("topic"))
	if i < 0 {
		t.Fatal("no field named topic")
	}
	changed := bytes.Clone(raw)
	changed[i] = 'T'
	id2, ok := javaCoderIdentity(changed)
	if !ok || bytes.Equal(id, id2) {
		t.Errorf("a renamed field: identity read %v, unchanged %v", ok, bytes.Equal(id, id2))
	}
}

// Payloads that are not Java streams, or are cut short anywhere, fall
// back to their bytes and never panic.
func TestJavaCoderIdentityMalformed(t *testing.T) {
	raw, _ := unsnappy(javaPayload(t, "build1", "SchemaCoder"))
	for n := range len(raw) - 1 {
		if _, ok := javaCoderIdentity(raw[:n]); ok {
			t.Errorf("the stream cut at %d of %d read whole", n, len(raw))
		}
	}
	for _, p := range [][]byte{nil, []byte("\x82SNAPPY\x00"), []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff\xff\xff"), {0xAC, 0xED, 0, 5, 0x73, 0x71, 0x7f, 0xff, 0xff, 0xff}} {
		if _, ok := javaCoderIdentity(p); ok {
			t.Errorf("%q read as a Java coder", p)
		}
	}
}

func FuzzJavaCoderIdentity(f *testing.F) {
	raw, _ := os.ReadFile(filepath.Join("testdata", "javacoders", "build1", "SchemaCoder"))
	f.Add(raw)
	if u, err := unsnappy(raw); err == nil {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, p []byte) { javaCoderIdentity(p) })
}
