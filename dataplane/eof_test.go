package dataplane

import (
	"errors"
	"io"
	"testing"

	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
)

// endStream delivers nothing and ends with err.
type endStream struct{ err error }

func (s endStream) Send(*fnpb.Elements) error     { return nil }
func (s endStream) Recv() (*fnpb.Elements, error) { return nil, s.err }

// A harness closing its data stream ends Serve cleanly (a returned io.EOF
// reaches the harness as status UNKNOWN "EOF"); a broken stream is an
// error. Either way the connection is closed.
func TestServeEnd(t *testing.T) {
	c := NewConn()
	if err := c.Serve(endStream{io.EOF}); err != nil {
		t.Errorf("Serve after the harness closed = %v, want nil", err)
	}
	<-c.Closed()
	broken := errors.New("connection reset")
	if err := NewConn().Serve(endStream{broken}); !errors.Is(err, broken) {
		t.Errorf("Serve on a broken stream = %v, want %v", err, broken)
	}
}
