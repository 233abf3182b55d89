package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrMessageTooLarge is returned when a message claims a length above the
// reader's limit.
var ErrMessageTooLarge = errors.New("message too large")

// errInvalidLength is returned for a length field below the minimum of 4.
var errInvalidLength = errors.New("invalid message length")

// msgReader reads whole typed protocol messages (type byte, int32 length,
// body) from a buffered stream without decoding them.
type msgReader struct {
	r   *bufio.Reader
	buf []byte
	max int // maximum body length
}

func newMsgReader(r io.Reader, size, max int) *msgReader {
	return &msgReader{r: bufio.NewReaderSize(r, size), max: max}
}

// next returns the next message, header included: msg[0] is the type and
// msg[5:] the body. The slice is valid until the next call.
func (m *msgReader) next() ([]byte, error) {
	hdr, err := m.r.Peek(5)
	if err != nil {
		if len(hdr) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[1:])))
	if n < 4 {
		return nil, fmt.Errorf("%w %d for message type %q", errInvalidLength, n, hdr[0])
	}
	if n-4 > m.max {
		return nil, fmt.Errorf("%w: type %q claims %d bytes, limit is %d", ErrMessageTooLarge, hdr[0], n-4, m.max)
	}
	total := n + 1
	if cap(m.buf) < total {
		m.buf = make([]byte, total)
	}
	// Drop a buffer grown for one huge message so a session does not pin it.
	if cap(m.buf) > 1<<20 && total <= 1<<16 {
		m.buf = make([]byte, total, 1<<16)
	}
	msg := m.buf[:total]
	if _, err := io.ReadFull(m.r, msg); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return msg, nil
}

// complete reports whether a whole message is already buffered, so that
// next will not block.
func (m *msgReader) complete() bool {
	if m.r.Buffered() < 5 {
		return false
	}
	hdr, _ := m.r.Peek(5)
	n := int(int32(binary.BigEndian.Uint32(hdr[1:])))
	return n >= 4 && m.r.Buffered() >= n+1
}

// completeType returns the type of the next message when all of it is
// buffered (next will not block), else 0.
func (m *msgReader) completeType() byte {
	if !m.complete() {
		return 0
	}
	hdr, _ := m.r.Peek(1)
	return hdr[0]
}

// body returns the body of a whole message returned by next.
func body(msg []byte) []byte { return msg[5:] }

// encoder is what pgproto3 messages implement.
type encoder interface {
	Encode(dst []byte) ([]byte, error)
}

// writeMsg encodes m into w, using scratch as the encoding buffer, and
// returns the (possibly grown) scratch buffer.
func writeMsg(w *bufio.Writer, scratch []byte, m encoder) ([]byte, error) {
	out, err := m.Encode(scratch[:0])
	if err != nil {
		return scratch, err
	}
	_, err = w.Write(out)
	return out, err
}
