package savepoint

import "fmt"

// classDesc reads a class descriptor: new, proxy, a reference or null.
func (r *javaStream) classDesc() (*javaClass, error) {
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
		c, err := r.ref()
		if err == nil && c == nil {
			err = fmt.Errorf("%w: a reference to a class names something else", errJavaStream)
		}
		return c, err
	case tcProxyClass:
		return r.proxyClass()
	case tcClassDesc:
		return r.newClass()
	}
	return nil, fmt.Errorf("%w: tag %#x for a class at %d", errJavaStream, tag, r.at-1)
}

func (r *javaStream) newClass() (*javaClass, error) {
	c := &javaClass{}
	var err error
	if c.name, err = r.utf(); err != nil {
		return nil, err
	}
	if _, err := r.take(8); err != nil { // serialVersionUID
		return nil, err
	}
	r.newHandle(c)
	if c.flags, err = r.u8(); err != nil {
		return nil, err
	}
	n, err := r.u16()
	if err != nil {
		return nil, err
	}
	for range n {
		f, err := r.field()
		if err != nil {
			return nil, err
		}
		c.fields = append(c.fields, f)
	}
	if err := r.annotation(); err != nil {
		return nil, err
	}
	c.super, err = r.classDesc()
	return c, err
}

func (r *javaStream) field() (javaField, error) {
	code, err := r.u8()
	if err != nil {
		return javaField{}, err
	}
	name, err := r.utf()
	if err != nil {
		return javaField{}, err
	}
	if code == 'L' || code == '[' {
		_, err = r.content() // the field's type, a string
	} else if primSize(code) == 0 {
		err = fmt.Errorf("%w: field %s of type %q", errJavaStream, name, code)
	}
	return javaField{code: code, name: name}, err
}

func (r *javaStream) proxyClass() (*javaClass, error) {
	c := &javaClass{name: "(proxy)", flags: scSerializable}
	r.newHandle(c)
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	for range max(n, 0) {
		if _, err := r.utf(); err != nil {
			return nil, err
		}
	}
	if err := r.annotation(); err != nil {
		return nil, err
	}
	c.super, err = r.classDesc()
	return c, err
}

// object reads a new object: its class, then each class's data from
// the top of the hierarchy down.
func (r *javaStream) object() error {
	c, err := r.classDesc()
	if err != nil {
		return err
	}
	if c == nil {
		return fmt.Errorf("%w: an object without a class", errJavaStream)
	}
	r.newHandle(nil)
	var chain []*javaClass
	for k := c; k != nil && len(chain) <= maxJavaDepth; k = k.super {
		chain = append(chain, k)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if err := r.classData(chain[i]); err != nil {
			return err
		}
	}
	return nil
}

func (r *javaStream) classData(c *javaClass) error {
	switch {
	case c.flags&scExternalizable != 0:
		if c.flags&scBlockData == 0 {
			return fmt.Errorf("%w: %s in the old externalizable protocol", errJavaStream, c.name)
		}
		return r.annotation()
	case c.flags&scSerializable == 0:
		return nil
	}
	start := r.at
	for _, f := range c.fields {
		var err error
		if n := primSize(f.code); n > 0 {
			_, err = r.take(n)
		} else {
			_, err = r.content()
		}
		if err != nil {
			return err
		}
	}
	if c.name == "java.util.UUID" && r.at-start == 16 {
		r.uuids = append(r.uuids, start)
	}
	if c.flags&scWriteMethod != 0 {
		return r.annotation()
	}
	return nil
}

// array reads an array: its class names the element type.
func (r *javaStream) array() error {
	c, err := r.classDesc()
	if err != nil {
		return err
	}
	if c == nil || len(c.name) < 2 || c.name[0] != '[' {
		return fmt.Errorf("%w: an array whose class is not one", errJavaStream)
	}
	r.newHandle(nil)
	n, err := r.u32()
	if err != nil || n < 0 {
		return fmt.Errorf("%w: array length", errJavaStream)
	}
	if size := primSize(c.name[1]); size > 0 {
		_, err = r.take(n * size)
		return err
	}
	for range n {
		if r.at >= len(r.b) {
			return errJavaStream
		}
		if _, err := r.content(); err != nil {
			return err
		}
	}
	return nil
}
