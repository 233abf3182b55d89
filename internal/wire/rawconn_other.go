//go:build !linux

package wire

import "net"

// fastConn returns c: the raw system call path is Linux only.
func fastConn(c net.Conn) net.Conn { return c }
