package wire

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if server = <-accepted; server == nil {
		t.Fatal("accepting the loopback connection failed")
	}
	return client, server
}

func TestFastConn(t *testing.T) {
	client, server := tcpPair(t)
	fc := fastConn(server)
	if _, ok := fc.(*rawConn); !ok {
		t.Fatalf("fastConn(TCP) = %T, want *rawConn", fc)
	}
	if tc := tls.Server(server, &tls.Config{}); fastConn(tc) != tc {
		t.Fatal("fastConn wrapped a TLS connection")
	}

	// A large write completes even when the socket buffer fills up (EAGAIN,
	// then waiting in the netpoller), and reads see every byte in order.
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	werr := make(chan error, 1)
	go func() {
		n, err := fc.Write(payload)
		if err == nil && n != len(payload) {
			err = errors.New("short write")
		}
		werr <- err
	}()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("payload corrupted")
	}

	// Reads: data, a deadline, then EOF after the peer closes.
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := fc.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	_ = fc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := fc.Read(buf); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read after deadline: %v, want a timeout", err)
	}
	_ = fc.SetReadDeadline(time.Time{})
	client.Close()
	if _, err := fc.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after peer close: %v, want io.EOF", err)
	}
	fc.Close()
	if _, err := fc.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
	}
}

// TestFastConnAllocations checks that relaying a message allocates
// nothing in the socket layer: each Read and Write allocated two
// objects before, four of the proxy's sixteen a point select.
func TestFastConnAllocations(t *testing.T) {
	client, server := tcpPair(t)
	defer client.Close()
	fc := fastConn(server)
	defer fc.Close()
	msg, buf := []byte("a message"), make([]byte, 64)
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"Read", func() error {
			if _, err := client.Write(msg); err != nil {
				return err
			}
			_, err := io.ReadFull(fc, buf[:len(msg)])
			return err
		}},
		{"Write", func() error {
			if _, err := fc.Write(msg); err != nil {
				return err
			}
			_, err := io.ReadFull(client, buf[:len(msg)])
			return err
		}},
	} {
		var opErr error
		n := testing.AllocsPerRun(200, func() {
			if err := tc.op(); err != nil && opErr == nil {
				opErr = err
			}
		})
		if opErr != nil {
			t.Fatalf("%s: %v", tc.name, opErr)
		}
		if n != 0 {
			t.Errorf("%s and its peer allocated %.1f objects a message, want 0", tc.name, n)
		}
	}
}
