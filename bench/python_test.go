package bench

import (
	"reflect"
	"strings"
	"testing"
)

func workload(t *testing.T, name string) Workload {
	ws, err := SelectWorkloads(name)
	if err != nil || len(ws) != 1 {
		t.Fatalf("SelectWorkloads(%q) = %v, %v", name, ws, err)
	}
	return ws[0]
}

func TestPythonCommands(t *testing.T) {
	c := &Config{RepoRoot: "/repo", WorkDir: "/w", Sizes: QuickSizes}
	server, direct := Runner{"beam-runner", true}, Runner{"direct", false}

	bin, args := command(c, workload(t, "py-wordcount"), direct, "/in.txt", "/out", "", "")
	want := []string{"-m", "apache_beam.examples.wordcount", "--input=/in.txt", "--output=/out", "--runner=DirectRunner"}
	if bin != "python3" || !reflect.DeepEqual(args, want) {
		t.Errorf("py-wordcount direct: %s %q", bin, args)
	}
	_, args = command(c, workload(t, "py-gbk"), server, "", "/out", "localhost:1", "")
	if args[0] != "/repo/bench/py/gbk.py" || !strings.Contains(strings.Join(args, " "),
		"--records=100000 --key_size=10 --value_size=90 --output=/out --runner=PortableRunner --job_endpoint=localhost:1 --environment_type=LOOPBACK") {
		t.Errorf("py-gbk on a server: %q", args)
	}
	_, args = command(c, workload(t, "py-cpu-1w"), server, "", "/out", "localhost:1", "localhost:2")
	joined := strings.Join(args, " ")
	if !strings.Contains(joined, "--environment_type=EXTERNAL --environment_config=localhost:2") ||
		!strings.Contains(joined, "--"+WorkersOption+"=1") {
		t.Errorf("py-cpu-1w: %q", args)
	}
	c.Python = "/venv/bin/python"
	if bin, _ := command(c, workload(t, "py-cpu"), server, "", "/out", "e", "p"); bin != "/venv/bin/python" {
		t.Errorf("--python ignored: %s", bin)
	}
}

func TestGoCommandsUnchanged(t *testing.T) {
	c := &Config{RepoRoot: "/repo", WorkDir: "/w", Sizes: QuickSizes}
	bin, args := command(c, workload(t, "wordcount"), Runner{"prism", true}, "/in", "/out", "localhost:1", "")
	want := []string{"--input=/in", "--output=/out", "--runner=universal", "--endpoint=localhost:1", "--environment_type=LOOPBACK"}
	if bin != "/w/bin/wordcount" || !reflect.DeepEqual(args, want) {
		t.Errorf("wordcount on prism: %s %q", bin, args)
	}
	if _, args := command(c, workload(t, "gbk"), Runner{"direct", false}, "", "", "", ""); args[len(args)-1] != "--runner=direct" {
		t.Errorf("gbk direct: %q", args)
	}
}
