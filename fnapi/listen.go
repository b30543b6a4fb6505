package fnapi

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// Listen says where a job's Fn API server listens and which address its
// workers are told. The zero value is a free loopback port, which only
// workers on this machine can reach.
type Listen struct {
	// Host is the interface to listen on; "" is 127.0.0.1.
	Host string
	// Advertise is the host workers dial (in StartWorker requests,
	// provision info and descriptors); "" is Host. It must be set when
	// Host is unspecified (0.0.0.0, ::), which names no one address.
	Advertise string
	// Ports is the range the server takes a free port from; zero: any.
	Ports PortRange
}

// PortRange is an inclusive range of TCP ports; the zero value is "any
// free port".
type PortRange struct{ Lo, Hi int }

// ParsePortRange reads "LO-HI" or a single port; "" is any free port.
func ParsePortRange(s string) (PortRange, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return PortRange{}, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	l, errL := strconv.Atoi(strings.TrimSpace(lo))
	h, errH := strconv.Atoi(strings.TrimSpace(hi))
	if errL != nil || errH != nil || l < 1 || h > 65535 || l > h {
		return PortRange{}, fmt.Errorf("port range %q: want LO-HI with 1 <= LO <= HI <= 65535, or one port", s)
	}
	return PortRange{Lo: l, Hi: h}, nil
}

// String is the range as ParsePortRange reads it.
func (p PortRange) String() string {
	switch {
	case p.Lo == 0:
		return ""
	case p.Lo == p.Hi:
		return strconv.Itoa(p.Lo)
	}
	return fmt.Sprintf("%d-%d", p.Lo, p.Hi)
}

// Contains reports whether port is in the range (any port is in the zero
// range).
func (p PortRange) Contains(port int) bool {
	return p.Lo == 0 || (port >= p.Lo && port <= p.Hi)
}

// Check reports a configuration workers could not use.
func (l Listen) Check() error {
	host := l.host()
	ip := net.ParseIP(host)
	if ip != nil && ip.IsUnspecified() && l.Advertise == "" {
		return fmt.Errorf("fn api: listening on every interface (%s) names no address for workers to dial: set the advertised address too", host)
	}
	if l.Advertise != "" && strings.ContainsAny(l.Advertise, ":/ ") && net.ParseIP(l.Advertise) == nil {
		return fmt.Errorf("fn api: advertised address %q: want a host name or IP, without a port", l.Advertise)
	}
	return nil
}

func (l Listen) host() string {
	if l.Host == "" {
		return "127.0.0.1"
	}
	return l.Host
}

func (l Listen) advertise() string {
	if l.Advertise != "" {
		return l.Advertise
	}
	return l.host()
}

// listen takes a free port of the range on the interface.
func (l Listen) listen() (net.Listener, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	if l.Ports.Lo == 0 {
		return net.Listen("tcp", net.JoinHostPort(l.host(), "0"))
	}
	for port := l.Ports.Lo; port <= l.Ports.Hi; port++ {
		lis, err := net.Listen("tcp", net.JoinHostPort(l.host(), strconv.Itoa(port)))
		if err == nil {
			return lis, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no free port in the Fn API port range %s on %s: each running job holds one", l.Ports, l.host())
}
