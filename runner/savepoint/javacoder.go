package savepoint

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/golang/snappy"
)

// URNJavaCoder is the Java SDK's own coders, their payload the coder
// object in Java serialization (SerializableUtils: Snappy-framed).
const URNJavaCoder = "beam:coders:javasdk:0.1"

// javaCoderIdentity is the part of a Java coder's payload that says how
// it encodes: the serialized object with every java.util.UUID's value
// zeroed. A schema's UUID (SchemaCoder, RowCoder, and the schemas of
// Java transforms such as KafkaIO's source descriptors) is drawn at
// random each time the pipeline is built and only names the schema for
// caches: Schema.equals ignores it, and the bytes encoded do not depend
// on it. ok is false if no UUID was found or the payload does not
// parse; the payload itself is then the identity.
func javaCoderIdentity(payload []byte) (id []byte, ok bool) {
	raw, err := unsnappy(payload)
	if err != nil {
		return nil, false
	}
	r := &javaStream{b: raw}
	if err := r.stream(); err != nil || len(r.uuids) == 0 {
		return nil, false
	}
	out := bytes.Clone(raw)
	for _, at := range r.uuids {
		clear(out[at : at+16])
	}
	return out, true
}

// maxJavaPayload bounds what a coder payload may decompress to: a
// client's payload must not make the server allocate without limit.
const maxJavaPayload = 64 << 20

var snappyMagic = []byte("\x82SNAPPY\x00")

// unsnappy undoes the framing of xerial's SnappyOutputStream (a magic,
// two version ints, then blocks of length and compressed bytes); a
// payload without it is returned as it is.
func unsnappy(p []byte) ([]byte, error) {
	if !bytes.HasPrefix(p, snappyMagic) {
		return p, nil
	}
	if len(p) < 16 {
		return nil, errors.New("short snappy header")
	}
	p = p[16:]
	var out []byte
	for len(p) > 0 {
		if len(p) < 4 {
			return nil, errors.New("short snappy block length")
		}
		n := binary.BigEndian.Uint32(p)
		if uint64(n) > uint64(len(p)-4) {
			return nil, errors.New("snappy block past the end")
		}
		blk := p[4 : 4+n]
		dl, err := snappy.DecodedLen(blk)
		if err != nil || len(out)+dl > maxJavaPayload {
			return nil, errors.New("snappy block too large or malformed")
		}
		d, err := snappy.Decode(nil, blk)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
		p = p[4+n:]
	}
	return out, nil
}
