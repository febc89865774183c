//go:build linux

package pg

import (
	"net"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/netio"
)

// pair returns a directConn and the peer end of a loopback TCP connection.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	return pairOn(t, "tcp", "127.0.0.1:0")
}

// pairOn is pair on a listener of network at address.
func pairOn(t *testing.T, network, address string) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	dc, ok := netio.NewDirectConn(c)
	if !ok {
		t.Fatalf("NewDirectConn refused a %T", c)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { dc.Close(); peer.Close() })
	return dc, peer
}

// within runs f and fails the test if it does not return within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}
