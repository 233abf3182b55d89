package wire

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// Codes of the untyped messages a client may open a connection with.
const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
	protocolMajor3    = 3
)

// maxStartupPacket is PostgreSQL's limit for startup packets.
const maxStartupPacket = 10000

// startupPacket is the first message of a connection: a StartupMessage, or
// one of the requests identified by a code instead of a protocol version.
type startupPacket struct {
	code   uint32 // protocol version or request code
	params map[string]string
	order  []string // params in the order the client sent them
	body   []byte   // raw packet after the code (cancel key data)
}

// readStartupPacket reads one length-prefixed startup packet straight from
// conn, without buffering, so no byte after it is consumed: after an
// SSLRequest the next bytes must belong to the TLS handshake, and plaintext
// a client pipelined after SSLRequest is never interpreted (CVE-2021-23222).
func readStartupPacket(conn io.Reader) (*startupPacket, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:4]))
	if n < 8 || n > maxStartupPacket {
		return nil, fmt.Errorf("invalid startup packet length %d", n)
	}
	p := &startupPacket{code: binary.BigEndian.Uint32(hdr[4:])}
	p.body = make([]byte, n-8)
	if _, err := io.ReadFull(conn, p.body); err != nil {
		return nil, err
	}
	return p, nil
}

// parseParams decodes the name/value pairs of a StartupMessage.
func (p *startupPacket) parseParams() error {
	p.params = map[string]string{}
	b := p.body
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return errors.New("startup packet: parameters not terminated")
		}
		if i == 0 {
			if len(b) != 1 {
				return errors.New("startup packet: data after the terminator")
			}
			return nil
		}
		name := string(b[:i])
		b = b[i+1:]
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			return fmt.Errorf("startup packet: no value for parameter %q", name)
		}
		if _, dup := p.params[name]; !dup {
			p.order = append(p.order, name)
		}
		p.params[name] = string(b[:j])
		b = b[j+1:]
	}
}

// negotiateStartup runs the pre-startup exchanges (SSLRequest, GSSENCRequest)
// and returns the connection to use from now on (TLS-wrapped or not) and the
// StartupMessage or CancelRequest that follows.
func negotiateStartup(conn net.Conn, tlsConfig *tls.Config) (net.Conn, *startupPacket, bool, error) {
	usedTLS := false
	for {
		p, err := readStartupPacket(conn)
		if err != nil {
			return conn, nil, usedTLS, err
		}
		switch p.code {
		case sslRequestCode:
			if usedTLS {
				return conn, nil, usedTLS, errors.New("SSLRequest received inside TLS")
			}
			if tlsConfig == nil {
				if _, err := conn.Write([]byte{'N'}); err != nil {
					return conn, nil, usedTLS, err
				}
				continue
			}
			if _, err := conn.Write([]byte{'S'}); err != nil {
				return conn, nil, usedTLS, err
			}
			tc := tls.Server(conn, tlsConfig)
			if err := tc.Handshake(); err != nil {
				return conn, nil, usedTLS, fmt.Errorf("TLS handshake: %w", err)
			}
			conn, usedTLS = tc, true
		case gssEncRequestCode:
			if _, err := conn.Write([]byte{'N'}); err != nil {
				return conn, nil, usedTLS, err
			}
		default:
			return conn, p, usedTLS, nil
		}
	}
}
