package placement

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParsePools(t *testing.T) {
	got, err := ParsePools("python=h1:50000,h2:50000/4", "go=[fd00::1]:50001;java=j:1/2")
	if err != nil {
		t.Fatal(err)
	}
	want := Pools{
		"python": {{Addr: "h1:50000", Workers: 1}, {Addr: "h2:50000", Workers: 4}},
		"go":     {{Addr: "[fd00::1]:50001", Workers: 1}},
		"java":   {{Addr: "j:1", Workers: 2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if s := got.String(); s != "go=[fd00::1]:50001;java=j:1/2;python=h1:50000,h2:50000/4" {
		t.Errorf("String() = %q", s)
	}
	// A later spec of an SDK replaces the earlier one.
	got, _ = ParsePools("python=a:1", "python=b:2")
	if !reflect.DeepEqual(got, Pools{"python": {{Addr: "b:2", Workers: 1}}}) {
		t.Errorf("later spec: %v", got)
	}
}

func TestParsePoolsErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"ruby=h:1":          "SDK one of go, java, python",
		"h1:50000":          "want SDK=HOST:PORT",
		"python=h1":         `pool "h1": want HOST:PORT`,
		"python=:50000":     `pool ":50000": want HOST:PORT`,
		"python=h:0":        `port "0" is not a port number`,
		"python=h:1/0":      "from 1 to 256",
		"python=h:1/x":      "from 1 to 256",
		"python=h:1,h:1/2":  "h:1 is named twice",
		"python=h:1,,h2:50": `pool "": want HOST:PORT`,
	} {
		_, err := ParsePools(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePools(%q) = %v, want an error saying %q", spec, err, want)
		}
	}
}

func TestPoolsWith(t *testing.T) {
	server := Pools{"python": {{Addr: "a:1", Workers: 1}}, "go": {{Addr: "g:1", Workers: 1}}}
	job := Pools{"python": {{Addr: "b:1", Workers: 2}}}
	got := server.With(job)
	want := Pools{"python": {{Addr: "b:1", Workers: 2}}, "go": {{Addr: "g:1", Workers: 1}}}
	if !reflect.DeepEqual(got, want) || len(server["python"]) != 1 || server["python"][0].Addr != "a:1" {
		t.Errorf("With: %v (server now %v)", got, server)
	}
}

// A name with several addresses (a headless Service) is one pool per
// address; IPs and names that do not resolve stay as they are.
func TestExpand(t *testing.T) {
	lookup := func(host string) ([]string, error) {
		switch host {
		case "pools.svc":
			return []string{"10.0.0.3", "10.0.0.1", "10.0.0.2"}, nil
		case "one.svc":
			return []string{"10.0.1.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	got := Expand([]Pool{
		{Addr: "pools.svc:50000", Workers: 2},
		{Addr: "one.svc:50000", Workers: 1},
		{Addr: "gone.svc:50000", Workers: 1},
		{Addr: "10.0.0.1:50000", Workers: 1}, // named twice: kept once
	}, lookup)
	want := []Pool{
		{Addr: "10.0.0.1:50000", Workers: 2}, {Addr: "10.0.0.2:50000", Workers: 2}, {Addr: "10.0.0.3:50000", Workers: 2},
		{Addr: "one.svc:50000", Workers: 1}, {Addr: "gone.svc:50000", Workers: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Expand = %v, want %v", got, want)
	}
}
