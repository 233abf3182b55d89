package pgarray

import (
	"encoding/binary"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// DecodeBinary reads the binary form of an array (array_send): its
// element type and elements, nil for NULL, valid as long as b. A
// multi-dimensional array is read in storage order, as UNNEST does; dims
// says its shape. Malformed input is refused with 22P03, as array_recv
// does.
func DecodeBinary(b []byte) (elemOID uint32, elems [][]byte, dims []int, err error) {
	bad := func(why string) error {
		return &pgconn.PgError{Severity: "ERROR", Code: "22P03", Message: "invalid binary array: " + why}
	}
	if len(b) < 12 {
		return 0, nil, nil, bad("short header")
	}
	ndim := int32(binary.BigEndian.Uint32(b))
	flags := binary.BigEndian.Uint32(b[4:])
	elemOID = binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	if ndim < 0 || ndim > 6 {
		return 0, nil, nil, bad(fmt.Sprintf("%d dimensions", ndim))
	}
	if flags > 1 {
		return 0, nil, nil, bad("invalid flags")
	}
	if len(b) < 8*int(ndim) {
		return 0, nil, nil, bad("short dimensions")
	}
	n := 1
	if ndim == 0 {
		n = 0
	}
	for i := range int(ndim) {
		d := int32(binary.BigEndian.Uint32(b[8*i:]))
		if d < 0 || (d > 0 && n > (1<<27)/int(d)) {
			return 0, nil, nil, bad("invalid dimension")
		}
		dims = append(dims, int(d))
		n *= int(d)
	}
	b = b[8*int(ndim):]
	if n > len(b)/4 {
		return 0, nil, nil, bad("more elements than data")
	}
	elems = make([][]byte, n)
	for i := range n {
		if len(b) < 4 {
			return 0, nil, nil, bad("short element")
		}
		l := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		switch {
		case l == -1:
			continue
		case l < 0 || int(l) > len(b):
			return 0, nil, nil, bad("invalid element length")
		}
		elems[i] = b[:l:l]
		b = b[l:]
	}
	if len(b) > 0 {
		return 0, nil, nil, bad("trailing data")
	}
	return elemOID, elems, dims, nil
}

// AppendBinary appends the binary form of the one-dimensional array of
// elems (nil for NULL; each already in its binary form) of element type
// elemOID: what array_recv reads.
func AppendBinary(dst []byte, elemOID uint32, elems [][]byte) []byte {
	ndim, hasNull := uint32(1), uint32(0)
	if len(elems) == 0 {
		ndim = 0
	}
	for _, e := range elems {
		if e == nil {
			hasNull = 1
		}
	}
	dst = binary.BigEndian.AppendUint32(dst, ndim)
	dst = binary.BigEndian.AppendUint32(dst, hasNull)
	dst = binary.BigEndian.AppendUint32(dst, elemOID)
	if ndim == 0 {
		return dst
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(elems)))
	dst = binary.BigEndian.AppendUint32(dst, 1) // lower bound
	for _, e := range elems {
		if e == nil {
			dst = binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
			continue
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(e)))
		dst = append(dst, e...)
	}
	return dst
}
