//go:build !linux

package netio

import "net"

// NewDirectConn: blocking socket I/O is implemented for Linux only; other
// systems keep Go's network I/O.
func NewDirectConn(c net.Conn) (net.Conn, bool) { return c, false }

// IsDirect reports whether c is a direct connection: never on this system.
func IsDirect(c net.Conn) bool { return false }

// DirectFd: there are no direct connections on this system.
func DirectFd(c net.Conn) (int, bool) { return -1, false }

// IncomingCPU: unknown on this system.
func IncomingCPU(c net.Conn) int { return -1 }

// MarkReadable: there are no direct connections on this system.
func MarkReadable(c net.Conn) {}
