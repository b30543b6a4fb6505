package savepoint

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// javaStream walks a Java serialization stream (the Java Object
// Serialization Specification, chapter 6) far enough to find each
// java.util.UUID object's two longs: uuids holds their offsets. It
// follows handles, since a second UUID names its class by reference.
type javaStream struct {
	b       []byte
	at      int
	depth   int
	handles []*javaClass // by handle; nil for what is not a class
	uuids   []int
}

// javaClass is a class descriptor: its name, flags, fields and super.
type javaClass struct {
	name   string
	flags  byte
	fields []javaField
	super  *javaClass
}

type javaField struct {
	code byte // 'B', 'C', ..., 'L' or '['
	name string
}

// The stream's tags (java.io.ObjectStreamConstants).
const (
	tcNull          = 0x70
	tcReference     = 0x71
	tcClassDesc     = 0x72
	tcObject        = 0x73
	tcString        = 0x74
	tcArray         = 0x75
	tcClass         = 0x76
	tcBlockData     = 0x77
	tcEndBlockData  = 0x78
	tcReset         = 0x79
	tcBlockDataLong = 0x7A
	tcLongString    = 0x7C
	tcProxyClass    = 0x7D
	tcEnum          = 0x7E

	scWriteMethod    = 0x01
	scSerializable   = 0x02
	scExternalizable = 0x04
	scBlockData      = 0x08

	javaBaseHandle = 0x7E0000
	maxJavaDepth   = 2000
)

var errJavaStream = errors.New("not a Java serialization stream this reads")

// primSize is the size of a primitive field or array element, 0 for
// an object.
func primSize(code byte) int {
	switch code {
	case 'B', 'Z':
		return 1
	case 'C', 'S':
		return 2
	case 'I', 'F':
		return 4
	case 'J', 'D':
		return 8
	}
	return 0
}

func (r *javaStream) stream() error {
	if len(r.b) < 4 || r.b[0] != 0xAC || r.b[1] != 0xED {
		return errJavaStream
	}
	r.at = 4
	for r.at < len(r.b) {
		if _, err := r.content(); err != nil {
			return err
		}
	}
	return nil
}

func (r *javaStream) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.at {
		return nil, errJavaStream
	}
	s := r.b[r.at : r.at+n]
	r.at += n
	return s, nil
}

func (r *javaStream) u8() (byte, error) {
	s, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return s[0], nil
}

func (r *javaStream) u16() (int, error) {
	s, err := r.take(2)
	if err != nil {
		return 0, err
	}
	return int(binary.BigEndian.Uint16(s)), nil
}

func (r *javaStream) u32() (int, error) {
	s, err := r.take(4)
	if err != nil {
		return 0, err
	}
	return int(int32(binary.BigEndian.Uint32(s))), nil
}

func (r *javaStream) utf() (string, error) {
	n, err := r.u16()
	if err != nil {
		return "", err
	}
	s, err := r.take(n)
	return string(s), err
}

func (r *javaStream) newHandle(c *javaClass) { r.handles = append(r.handles, c) }

// ref reads a reference's handle and returns what it names.
func (r *javaStream) ref() (*javaClass, error) {
	h, err := r.u32()
	if err != nil {
		return nil, err
	}
	if h -= javaBaseHandle; h < 0 || h >= len(r.handles) {
		return nil, fmt.Errorf("%w: handle %#x out of range", errJavaStream, h+javaBaseHandle)
	}
	return r.handles[h], nil
}

// content reads one content item; a class descriptor read is returned.
func (r *javaStream) content() (*javaClass, error) {
	if r.depth++; r.depth > maxJavaDepth {
		return nil, errJavaStream
	}
	defer func() { r.depth-- }()
	tag, err := r.u8()
	if err != nil {
		return nil, err
	}
	switch tag {
	case tcNull:
		return nil, nil
	case tcReference:
		return r.ref()
	case tcClassDesc, tcProxyClass:
		r.at--
		return r.classDesc()
	case tcObject:
		return nil, r.object()
	case tcString, tcLongString:
		return nil, r.str(tag)
	case tcArray:
		return nil, r.array()
	case tcClass:
		_, err := r.classDesc()
		r.newHandle(nil)
		return nil, err
	case tcEnum:
		if _, err := r.classDesc(); err != nil {
			return nil, err
		}
		r.newHandle(nil)
		_, err := r.content()
		return nil, err
	case tcBlockData, tcBlockDataLong:
		return nil, r.blockData(tag)
	case tcReset:
		r.handles = nil
		return nil, nil
	}
	return nil, fmt.Errorf("%w: tag %#x at %d", errJavaStream, tag, r.at-1)
}

func (r *javaStream) str(tag byte) error {
	r.newHandle(nil)
	if tag == tcString {
		_, err := r.utf()
		return err
	}
	s, err := r.take(8)
	if err != nil {
		return err
	}
	n := binary.BigEndian.Uint64(s)
	if n > uint64(len(r.b)) {
		return errJavaStream
	}
	_, err = r.take(int(n))
	return err
}

func (r *javaStream) blockData(tag byte) error {
	var n int
	var err error
	if tag == tcBlockData {
		var b byte
		b, err = r.u8()
		n = int(b)
	} else {
		n, err = r.u32()
	}
	if err == nil {
		_, err = r.take(n)
	}
	return err
}

// annotation reads contents up to the end-of-block tag.
func (r *javaStream) annotation() error {
	for {
		if r.at < len(r.b) && r.b[r.at] == tcEndBlockData {
			r.at++
			return nil
		}
		if _, err := r.content(); err != nil {
			return err
		}
	}
}
