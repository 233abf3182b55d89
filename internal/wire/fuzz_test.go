package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fuzzConn is a net.Conn that reads from a fixed input and discards writes.
type fuzzConn struct{ r io.Reader }

func (c *fuzzConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *fuzzConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *fuzzConn) Close() error                     { return nil }
func (c *fuzzConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *fuzzConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

func startupSeed(code uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(rest)))
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, rest...)
}

// FuzzStartup feeds arbitrary bytes to the start-up path (SSLRequest,
// GSSENCRequest, CancelRequest, StartupMessage parsing).
func FuzzStartup(f *testing.F) {
	f.Add(startupSeed(196608, []byte("user\x00bob\x00database\x00db\x00\x00")))
	f.Add(startupSeed(gssEncRequestCode, nil))
	f.Add(append(startupSeed(sslRequestCode, nil), startupSeed(196608, []byte("user\x00a\x00\x00"))...))
	f.Add(startupSeed(cancelRequestCode, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	f.Add(startupSeed(196608, []byte("user\x00")))
	f.Add([]byte{0, 0, 0, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, p, _, err := negotiateStartup(&fuzzConn{r: bytes.NewReader(data)}, nil)
		if err != nil {
			return
		}
		if p.code>>16 == protocolMajor3 {
			if err := p.parseParams(); err == nil {
				for _, k := range p.order {
					if _, ok := p.params[k]; !ok {
						t.Fatalf("parameter %q in order but not in map", k)
					}
				}
			}
		}
	})
}

// FuzzMessages feeds arbitrary bytes to the message framer and to every
// decoder the relay uses on client and server messages.
func FuzzMessages(f *testing.F) {
	q, _ := (&pgproto3.Query{String: "SELECT 1"}).Encode(nil)
	p, _ := (&pgproto3.Parse{Name: "s", Query: "SELECT $1", ParameterOIDs: []uint32{23}}).Encode(nil)
	b, _ := (&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "s", ParameterFormatCodes: []int16{1}, Parameters: [][]byte{{0, 0, 0, 1}, nil}, ResultFormatCodes: []int16{0}}).Encode(nil)
	rd, _ := (&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("a"), DataTypeOID: 23, DataTypeSize: 4}}}).Encode(nil)
	dr, _ := (&pgproto3.DataRow{Values: [][]byte{[]byte("1"), nil}}).Encode(nil)
	er, _ := (&pgproto3.ErrorResponse{Severity: "FATAL", Code: "XX000", Message: "m"}).Encode(nil)
	f.Add(append(append(q, p...), b...))
	f.Add(append(append(rd, dr...), er...))
	f.Add([]byte{'Q', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{'D', 0, 0, 0, 6, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newMsgReader(bytes.NewReader(data), 64, 1<<16)
		for {
			complete := r.complete()
			msg, err := r.next()
			if err != nil {
				if complete && !errors.Is(err, ErrMessageTooLarge) {
					t.Fatalf("complete() said a whole message was buffered, next failed: %v", err)
				}
				return
			}
			bd := body(msg)
			switch msg[0] {
			case 'Q':
				_, _ = cstring(bd)
			case 'P':
				_ = (&pgproto3.Parse{}).Decode(bd)
			case 'B':
				_ = (&pgproto3.Bind{}).Decode(bd)
			case 'T':
				_ = (&pgproto3.RowDescription{}).Decode(bd)
			case 'D':
				_ = (&pgproto3.DataRow{}).Decode(bd)
			case 't':
				_ = (&pgproto3.ParameterDescription{}).Decode(bd)
			case 'E':
				_ = isFatalError(bd)
			}
		}
	})
}
