package wire

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// rawConn reads and writes a non-blocking socket with raw system calls
// (syscall.RawSyscall) instead of the runtime's blocking-syscall path.
//
// Why: a relay does a short read or write on every hop, and a write to a
// loopback TCP socket can take tens of microseconds while the kernel
// delivers the data to the peer. When a goroutine spends that long in a
// system call entered the normal way, the runtime's monitor hands its P to
// another thread, and the two threads then trade the work back and forth:
// measured with perf stat, 5.6 context switches per pgbench transaction
// instead of PgBouncer's 2. On a non-blocking socket read and write never
// block (they return EAGAIN, and then we wait in the netpoller as usual),
// so holding the P for their duration is safe.
type rawConn struct {
	net.Conn
	rc syscall.RawConn
}

// fastConn returns c wrapped in a rawConn when it is a plain TCP or Unix
// socket, and c itself otherwise (e.g. TLS).
func fastConn(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawConn{Conn: c, rc: rc}
}

func (c *rawConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the netpoller, then call again
			}
			n, errno = int(r), e
			return true
		}
	})
	if err != nil {
		return 0, c.wrap("read", err)
	}
	if errno != 0 {
		return 0, c.wrap("read", errno)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(b []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return n, c.wrap("write", err)
	}
	if errno != 0 {
		return n, c.wrap("write", errno)
	}
	return n, nil
}

func (c *rawConn) wrap(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
