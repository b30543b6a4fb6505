package fnapi_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/beam-runner/beam-runner/fnapi"
)

func TestParsePortRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fnapi.PortRange
		err  string
	}{
		{"", fnapi.PortRange{}, ""},
		{"50100-50131", fnapi.PortRange{Lo: 50100, Hi: 50131}, ""},
		{"50100", fnapi.PortRange{Lo: 50100, Hi: 50100}, ""},
		{"50131-50100", fnapi.PortRange{}, `port range "50131-50100"`},
		{"0-10", fnapi.PortRange{}, `port range "0-10"`},
		{"1-70000", fnapi.PortRange{}, `port range "1-70000"`},
		{"a-b", fnapi.PortRange{}, `port range "a-b"`},
	} {
		got, err := fnapi.ParsePortRange(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePortRange(%q): error %v, want one naming %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || got.String() != strings.TrimSpace(tc.in) {
			t.Errorf("ParsePortRange(%q) = %v (%q), %v; want %v", tc.in, got, got.String(), err, tc.want)
		}
	}
}

// Workers are told the advertised host with the port listened on, which
// comes from the range.
func TestAdvertisedEndpoint(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	srv, err := fnapi.Start(fnapi.Config{Listen: fnapi.Listen{
		Host: "0.0.0.0", Advertise: "runner.example", Ports: fnapi.PortRange{Lo: port, Hi: port},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if want := "runner.example:" + strconv.Itoa(port); srv.Endpoint() != want {
		t.Errorf("Endpoint() = %q, want %q", srv.Endpoint(), want)
	}
	// The one port of the range is taken now: a second job has none.
	_, err = fnapi.Start(fnapi.Config{Listen: fnapi.Listen{Ports: fnapi.PortRange{Lo: port, Hi: port}, Host: "0.0.0.0", Advertise: "x"}})
	if err == nil || !strings.Contains(err.Error(), "no free port in the Fn API port range") {
		t.Errorf("second server on a full range: %v", err)
	}
}

func TestListenCheck(t *testing.T) {
	for _, tc := range []struct {
		l   fnapi.Listen
		err string
	}{
		{fnapi.Listen{}, ""},
		{fnapi.Listen{Host: "0.0.0.0"}, "set the advertised address"},
		{fnapi.Listen{Host: "::"}, "set the advertised address"},
		{fnapi.Listen{Host: "0.0.0.0", Advertise: "10.1.2.3"}, ""},
		{fnapi.Listen{Host: "0.0.0.0", Advertise: "fd00::1"}, ""},
		{fnapi.Listen{Host: "0.0.0.0", Advertise: "host:8080"}, "without a port"},
	} {
		err := tc.l.Check()
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%+v.Check() = %v, want %q", tc.l, err, tc.err)
		}
	}
}
