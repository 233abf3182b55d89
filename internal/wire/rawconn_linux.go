package wire

import (
	"io"
	"net"
	"sync"
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
	rd, wr rawIO // the Read and the Write in progress
}

// rawIO is the state of a Read or a Write, kept in the conn: a closure
// over locals made each call allocate its variables (four objects a
// transaction relayed at pgbench -S). Its lock makes Read and Write safe
// for concurrent use, as net.Conn's are; the fd's own lock would
// serialize them anyway.
type rawIO struct {
	mu    sync.Mutex
	b     []byte
	n     int
	errno syscall.Errno
	// Bound once: the RawConn's Read or Write, and c.read or c.write.
	call func(func(fd uintptr) bool) error
	fn   func(fd uintptr) bool
}

// do runs one Read or Write of b: the system call loop fn through call.
func (o *rawIO) do(b []byte) (n int, errno syscall.Errno, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b, o.n, o.errno = b, 0, 0
	err = o.call(o.fn)
	n, errno = o.n, o.errno
	o.b = nil
	return n, errno, err
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
	rw := &rawConn{Conn: c}
	rw.rd.call, rw.rd.fn = rc.Read, rw.read
	rw.wr.call, rw.wr.fn = rc.Write, rw.write
	return rw
}

func (c *rawConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, errno, err := c.rd.do(b)
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

// read is Read's system call loop (syscall.RawConn.Read's callback).
func (c *rawConn) read(fd uintptr) bool {
	o := &c.rd
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&o.b[0])), uintptr(len(o.b)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait in the netpoller, then call again
		}
		o.n, o.errno = int(r), e
		return true
	}
}

func (c *rawConn) Write(b []byte) (int, error) {
	n, errno, err := c.wr.do(b)
	if err != nil {
		return n, c.wrap("write", err)
	}
	if errno != 0 {
		return n, c.wrap("write", errno)
	}
	return n, nil
}

// write is Write's system call loop (syscall.RawConn.Write's callback).
func (c *rawConn) write(fd uintptr) bool {
	o := &c.wr
	for o.n < len(o.b) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&o.b[o.n])), uintptr(len(o.b)-o.n))
		switch e {
		case 0:
			o.n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

func (c *rawConn) wrap(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
