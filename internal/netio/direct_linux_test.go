//go:build linux

package netio

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair returns a directConn and the peer end of a loopback TCP connection.
func pair(t *testing.T) (*directConn, net.Conn) {
	t.Helper()
	return pairOn(t, "tcp", "127.0.0.1:0")
}

// pairOn is pair on a listener of network at address.
func pairOn(t *testing.T, network, address string) (*directConn, net.Conn) {
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
	dc, ok := NewDirectConn(c)
	if !ok {
		t.Fatalf("NewDirectConn refused a %T", c)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { dc.Close(); peer.Close() })
	return dc.(*directConn), peer
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && errors.Is(err, os.ErrDeadlineExceeded)
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

func TestDirectConnIsBlocking(t *testing.T) {
	dc, _ := pair(t)
	flags, err := fcntlGetFl(dc.fd)
	if err != nil {
		t.Fatal(err)
	}
	if flags&syscall.O_NONBLOCK != 0 {
		t.Fatal("socket still non-blocking")
	}
}

func TestDirectConnReadWrite(t *testing.T) {
	dc, peer := pair(t)
	go func() { _, _ = io.Copy(peer, peer) }() // echo
	msg := make([]byte, 1<<20)                 // larger than the socket buffers
	for i := range msg {
		msg[i] = byte(i)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := dc.Write(msg)
		errc <- err
	}()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(dc, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != msg[i] {
			t.Fatalf("byte %d differs", i)
		}
	}
	if dc.LocalAddr() == nil || dc.RemoteAddr() == nil || dc.RemoteAddr().String() != peer.LocalAddr().String() {
		t.Fatalf("addresses: %v %v", dc.LocalAddr(), dc.RemoteAddr())
	}
}

func TestDirectConnPastDeadlineInterruptsRead(t *testing.T) {
	dc, _ := pair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := dc.Read(make([]byte, 10))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the read block in the kernel
	start := time.Now()
	if err := dc.SetDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !isTimeout(err) {
			t.Fatalf("got %v, want a timeout", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("took %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked read not interrupted")
	}
	// The socket was shut down under the read: later calls fail, with a
	// timeout while the deadline holds, and for good after it is cleared.
	if _, err := dc.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("read after deadline: %v", err)
	}
	_ = dc.SetDeadline(time.Time{})
	if _, err := dc.Write([]byte("x")); err == nil || isTimeout(err) {
		t.Fatalf("write on a shut socket: %v, want a permanent error", err)
	}
}

func TestDirectConnDeadlineWithoutCallKeepsConn(t *testing.T) {
	dc, peer := pair(t)
	_ = dc.SetDeadline(time.Unix(1, 0))
	if _, err := dc.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("read: %v", err)
	}
	if _, err := dc.Write([]byte("x")); !isTimeout(err) {
		t.Fatalf("write: %v", err)
	}
	// Nothing was interrupted: clearing the deadline restores the conn, as
	// with a net.TCPConn.
	_ = dc.SetDeadline(time.Time{})
	if _, err := dc.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer got %q %v", buf, err)
	}
	if _, err := peer.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(dc, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("got %q %v", buf, err)
	}
}

func TestDirectConnFutureDeadline(t *testing.T) {
	dc, peer := pair(t)
	start := time.Now()
	_ = dc.SetReadDeadline(start.Add(100 * time.Millisecond))
	_, err := dc.Read(make([]byte, 1))
	if !isTimeout(err) {
		t.Fatalf("got %v, want timeout", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 3*time.Second {
		t.Fatalf("returned after %s", d)
	}

	// A deadline moved or cleared before it fires must not fire.
	dc2, peer2 := pair(t)
	_ = peer
	_ = dc2.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	_ = dc2.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(150 * time.Millisecond)
		_, _ = peer2.Write([]byte("late"))
	}()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(dc2, buf); err != nil || string(buf) != "late" {
		t.Fatalf("got %q %v; a stale deadline timer fired", buf, err)
	}
}

func TestDirectConnWriteDeadline(t *testing.T) {
	dc, _ := pair(t) // the peer never reads: the write blocks once the buffers are full
	errc := make(chan error, 1)
	go func() {
		_, err := dc.Write(make([]byte, 64<<20))
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	_ = dc.SetWriteDeadline(time.Now())
	select {
	case err := <-errc:
		if !isTimeout(err) {
			t.Fatalf("got %v, want timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked write not interrupted")
	}
}

func TestDirectConnCloseUnblocks(t *testing.T) {
	dc, _ := pair(t)
	errc := make(chan error, 2)
	go func() {
		_, err := dc.Read(make([]byte, 10))
		errc <- err
	}()
	go func() {
		_, err := dc.Write(make([]byte, 64<<20))
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := dc.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("got %v, want net.ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock the calls")
		}
	}
	if err := dc.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := dc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if err := dc.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("SetDeadline after Close: %v", err)
	}
	if dc.state.Load() != closedBit {
		t.Fatalf("state %x after Close, want closed with no references", dc.state.Load())
	}
}

func TestDirectConnConcurrentClose(t *testing.T) {
	for i := 0; i < 50; i++ {
		dc, _ := pair(t)
		var wg sync.WaitGroup
		for j := 0; j < 4; j++ {
			wg.Add(3)
			go func() { defer wg.Done(); _ = dc.Close() }()
			go func() { defer wg.Done(); _, _ = dc.Read(make([]byte, 1)) }()
			go func() { defer wg.Done(); _ = dc.SetDeadline(time.Now()) }()
		}
		within(t, 5*time.Second, "concurrent Close", wg.Wait)
	}
}

func TestDirectConnPeerGone(t *testing.T) {
	dc, peer := pair(t)
	peer.Close()
	if _, err := dc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read: %v, want io.EOF", err)
	}
	// Writing to a reset connection fails with an error (and no SIGPIPE).
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = dc.Write([]byte("x"))
		time.Sleep(time.Millisecond)
	}
	if err == nil {
		t.Fatal("writes to a closed peer keep succeeding")
	}
}

// A read after MarkReadable takes what is there without blocking, falls
// back to a blocking read when nothing is (a stale mark), and reports the
// end of the stream and deadlines as a plain Read does.
func TestDirectConnMarkReadable(t *testing.T) {
	dc, peer := pair(t)
	buf := make([]byte, 16)

	if _, err := peer.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, dc, "the socket never became readable")
	MarkReadable(dc)
	if n, err := dc.Read(buf); err != nil || string(buf[:n]) != "reply" {
		t.Fatalf("marked read: %q, %v", buf[:n], err)
	}
	if dc.ready.Load() {
		t.Fatal("the mark outlived the read")
	}

	// Nothing there: the read waits for the data.
	MarkReadable(dc)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = peer.Write([]byte("late"))
	}()
	start := time.Now()
	within(t, 5*time.Second, "a read after a stale mark", func() {
		n, err := dc.Read(buf)
		if err != nil || string(buf[:n]) != "late" {
			t.Errorf("stale mark: %q, %v", buf[:n], err)
		}
	})
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("the read returned after %s, before the data was sent", d)
	}

	// An expired deadline wins over the mark.
	_ = dc.SetReadDeadline(time.Now().Add(-time.Second))
	MarkReadable(dc)
	if _, err := dc.Read(buf); !isTimeout(err) {
		t.Fatalf("marked read past the deadline: %v, want a timeout", err)
	}
	_ = dc.SetReadDeadline(time.Time{})

	// The end of the stream.
	peer.Close()
	waitReadable(t, dc, "the closed socket never became readable")
	MarkReadable(dc)
	if _, err := dc.Read(buf); err != io.EOF {
		t.Fatalf("marked read at the end: %v, want io.EOF", err)
	}

	MarkReadable(peer) // not a direct connection: ignored
}

// rawIO never blocks (it runs without telling the runtime, so a blocking
// call would hold up the garbage collector's stop-the-world): on an empty
// socket it returns EAGAIN at once.
func TestRawIONeverBlocks(t *testing.T) {
	dc, peer := pair(t)
	buf := make([]byte, 16)
	within(t, 2*time.Second, "a raw receive on an empty socket", func() {
		if n, e := rawIO(unix.SYS_RECVFROM, dc.fd, buf); n != 0 || e != syscall.EAGAIN {
			t.Errorf("empty socket: %d, %v; want EAGAIN", n, e)
		}
	})
	// A full send buffer: the raw send stops short or says EAGAIN.
	big := make([]byte, 64<<20)
	within(t, 2*time.Second, "raw sends into a peer that does not read", func() {
		for i := 0; i < 1000; i++ {
			n, e := rawIO(unix.SYS_SENDTO, dc.fd, big)
			if e == syscall.EAGAIN || n < len(big) {
				return
			}
		}
		t.Error("the send buffer never filled")
	})
	_ = peer
}

// A Unix-domain socket (a DSN with a socket directory as host) goes
// through the same send and receive calls.
func TestDirectConnUnixSocket(t *testing.T) {
	dc, peer := pairOn(t, "unix", t.TempDir()+"/s")
	go func() { _, _ = io.Copy(peer, peer) }() // echo
	buf := make([]byte, 16)
	for i, msg := range []string{"first", "second"} {
		if _, err := dc.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			waitReadable(t, dc, "no echo")
			MarkReadable(dc)
		}
		if _, err := io.ReadFull(dc, buf[:len(msg)]); err != nil || string(buf[:len(msg)]) != msg {
			t.Fatalf("echo %d: %q, %v", i, buf[:len(msg)], err)
		}
	}
}

func TestDirectConnNoLeaks(t *testing.T) {
	fds0, g0 := openFDs(t), runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		dc, peer := pair(t)
		_ = dc.SetReadDeadline(time.Now().Add(time.Hour)) // a pending timer
		dc.Close()
		peer.Close()
	}
	waitFor(t, func() bool { return openFDs(t) <= fds0 && runtime.NumGoroutine() <= g0 },
		func() string { return "descriptors or goroutines leaked" })
}

// waitReadable waits until poll(2) reports dc readable.
func waitReadable(t *testing.T, dc *directConn, what string) {
	t.Helper()
	waitFor(t, func() bool {
		fds := []unix.PollFd{{Fd: int32(dc.fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, 0)
		return n == 1
	}, func() string { return what })
}

func fcntlGetFl(fd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// waitFor polls cond for up to 5 s (goroutines and descriptors are released
// asynchronously), then fails with msg().
func waitFor(t *testing.T, cond func() bool, msg func() string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal(msg())
}

// TestIncomingCPU: over loopback TCP the CPU that received the peer's last
// write is the CPU the peer wrote from; it is -1 for other connections.
func TestIncomingCPU(t *testing.T) {
	// Receive packet steering on lo would move the receive work to other
	// CPUs.
	if b, err := os.ReadFile("/sys/class/net/lo/queues/rx-0/rps_cpus"); err == nil && strings.Trim(string(b), "0,\n") != "" {
		t.Skipf("receive packet steering is on for lo (rps_cpus %s)", strings.TrimSpace(string(b)))
	}
	dc, peer := pair(t)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for c := 0; len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	buf := make([]byte, 1)
	for _, cpu := range cpus[:min(len(cpus), 4)] {
		func() {
			// Write from a goroutine whose thread is pinned to cpu.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var one unix.CPUSet
			one.Set(cpu)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				t.Fatal(err)
			}
			defer unix.SchedSetaffinity(0, &set)
			if _, err := peer.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
		}()
		if _, err := dc.Read(buf); err != nil {
			t.Fatal(err)
		}
		if got := IncomingCPU(dc); got != cpu {
			t.Errorf("IncomingCPU after a write from CPU %d = %d", cpu, got)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := IncomingCPU(a); got != -1 {
		t.Errorf("IncomingCPU of a pipe = %d, want -1", got)
	}
	dc.Close()
	if got := IncomingCPU(dc); got != -1 {
		t.Errorf("IncomingCPU of a closed connection = %d, want -1", got)
	}
}

// TestThreadPin: a pinned Thread keeps its thread on the CPU through its
// yields and gives the thread its affinity back on Stop.
func TestThreadPin(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	last := -1
	for c := 0; c < len(all)*64; c++ {
		if all.IsSet(c) {
			last = c
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var th Thread
		if th.Pin(-1) || th.Pin(len(all)*64+1) {
			t.Error("Pin accepted a CPU the process may not run on")
		}
		if !th.Pin(last) {
			t.Errorf("Pin(%d) refused", last)
			return
		}
		check := func(when string) {
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(0, &set); err != nil {
				t.Error(err)
				return
			}
			if set.Count() != 1 || !set.IsSet(last) {
				t.Errorf("%s: thread affinity has %d CPUs, want only %d", when, set.Count(), last)
			}
		}
		th.Tick()
		check("first tick")
		end := time.Now().Add(3 * yieldEvery)
		for time.Now().Before(end) {
			th.Tick()
			check("after a tick")
			time.Sleep(time.Millisecond)
		}
		th.Stop()
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			t.Error(err)
			return
		}
		if set != all {
			t.Errorf("after Stop the thread has %d CPUs, want the %d it had", set.Count(), all.Count())
		}
	}()
	<-done
}
