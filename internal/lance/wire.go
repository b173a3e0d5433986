package lance

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// field is one protobuf field of a message: its number and its value,
// either a varint (u) or the bytes of a length-delimited field (b).
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64
	b   []byte
}

// eachField calls fn for every field of msg, in wire order. A truncated or
// malformed message is an error; fixed-width fields are passed with their
// value in u.
func eachField(msg []byte, fn func(field) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("bad protobuf tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.u, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(msg)
			f.u = uint64(v)
		case protowire.Fixed64Type:
			f.u, n = protowire.ConsumeFixed64(msg)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return fmt.Errorf("bad protobuf field %d: %w", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// want checks a field's wire type against the one its number must have.
func (f field) want(t protowire.Type, msg string) error {
	if f.typ != t {
		return fmt.Errorf("%s field %d has wire type %d, want %d", msg, f.num, f.typ, t)
	}
	return nil
}
