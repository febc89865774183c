//go:build linux

package netio

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directConn is a net.Conn that does blocking read(2) and write(2) on the
// socket: the calling thread sleeps in the kernel and the kernel wakes it
// when the server's reply arrives, as with libpq. Go's own sockets park the
// goroutine on EAGAIN and need the netpoller and a second thread to wake it,
// which on a loaded machine adds a thread hand-off to every round trip.
//
// The database drivers (pgconn, go-sql-driver/mysql) drive deadlines in
// three ways, all supported:
//   - a deadline at or before now (context cancellation) interrupts a
//     blocked Read or Write by shutting the socket down; the interrupted
//     call returns a timeout error (the driver then closes the connection, as pgconn
//     does for every I/O error inside a query). A deadline that expires
//     while no call is in progress only makes the next calls fail with a
//     timeout, and clearing it makes the connection usable again, as with a
//     net.TCPConn;
//   - a future deadline (asyncClose bounds its drain with one) arms a timer
//     that does the same when it fires;
//   - the zero time clears the deadline.
//
// Close shuts the socket down first (which wakes a call blocked on it in
// another goroutine) and closes the descriptor when the last call using it
// has returned, so a descriptor number is never used after it was reused.
type directConn struct {
	fd           int
	network      string
	laddr, raddr net.Addr

	// state counts the calls using fd, plus closedBit once Close ran.
	state atomic.Int64
	// shut is set when a deadline shut the socket down.
	shut atomic.Bool
	// ready is set by MarkReadable.
	ready atomic.Bool

	rd, wd deadline

	mu sync.Mutex // serializes deadline changes and timer callbacks
}

const closedBit = 1 << 62

// deadline is one direction's deadline.
type deadline struct {
	expired  atomic.Bool
	inflight atomic.Int32 // calls of this direction in progress
	seq      uint64       // guarded by directConn.mu; stale timers check it
	timer    *time.Timer  // guarded by directConn.mu
}

// NewDirectConn takes over the socket of c (a *net.TCPConn or *net.UnixConn)
// for blocking I/O and closes c. If that is not possible, it returns c
// unchanged and false.
func NewDirectConn(c net.Conn) (net.Conn, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c, false
	}
	// A duplicate descriptor, then close c: that takes the socket out of the
	// runtime's epoll set (no wake-ups of the netpoller for our traffic)
	// while the socket itself stays open through the duplicate.
	fd := -1
	var derr error
	if err := rc.Control(func(orig uintptr) {
		fd, derr = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil || derr != nil {
		return c, false
	}
	// O_NONBLOCK belongs to the open file, shared by both descriptors; c is
	// closed right after, so nothing else depends on it.
	if err := syscall.SetNonblock(fd, false); err != nil {
		_ = syscall.Close(fd)
		return c, false
	}
	dc := &directConn{fd: fd, network: c.LocalAddr().Network(), laddr: c.LocalAddr(), raddr: c.RemoteAddr()}
	_ = c.Close()
	return dc, true
}

// IsDirect reports whether c is a direct connection (Target.Connect on
// Linux), whose driving goroutine benefits from a Thread.
func IsDirect(c net.Conn) bool {
	_, ok := c.(*directConn)
	return ok
}

// DirectFd returns the socket descriptor of a direct connection, for
// poll(2), and false for any other connection. The descriptor belongs to c:
// it is valid until c is closed.
func DirectFd(c net.Conn) (int, bool) {
	d, ok := c.(*directConn)
	if !ok {
		return -1, false
	}
	return d.fd, true
}

// IncomingCPU returns the CPU that last processed data arriving on the
// socket of a direct connection (SO_INCOMING_CPU), or -1 if the kernel does
// not say (other socket types, nothing received yet, an older kernel). Over
// loopback TCP the receive path runs on the sender's CPU, so this is where
// the server process ran when it sent its last reply.
func IncomingCPU(c net.Conn) int {
	d, ok := c.(*directConn)
	if !ok || !d.incref() {
		return -1
	}
	defer d.decref()
	cpu, err := unix.GetsockoptInt(d.fd, unix.SOL_SOCKET, unix.SO_INCOMING_CPU)
	if err != nil {
		return -1
	}
	return cpu
}

func (c *directConn) incref() bool {
	for {
		s := c.state.Load()
		if s&closedBit != 0 {
			return false
		}
		if c.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

func (c *directConn) decref() {
	if c.state.Add(-1) == closedBit {
		_ = syscall.Close(c.fd)
	}
}

func (c *directConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !c.incref() {
		return 0, c.opErr("read", net.ErrClosed)
	}
	// No defers on this path: they were a per cent of a multiplexed
	// run's driver CPU (read and write are called once per round trip),
	// and nothing below panics.
	c.rd.inflight.Add(1)
	n, err := c.read(p)
	c.rd.inflight.Add(-1)
	c.decref()
	return n, err
}

// read is Read with the descriptor held and the call counted.
func (c *directConn) read(p []byte) (int, error) {
	ready := c.ready.Swap(false)
	if c.rd.expired.Load() {
		return 0, c.opErr("read", os.ErrDeadlineExceeded)
	}
	wasShut := c.shut.Load()
	if ready {
		// poll(2) said the reply is there: take it without blocking.
		n, e := rawIO(unix.SYS_RECVFROM, c.fd, p)
		switch {
		case n > 0:
			return n, nil
		case e == 0:
			return 0, c.ioErr("read", &c.rd, wasShut, nil) // end of stream
		case e != syscall.EAGAIN && e != syscall.EINTR:
			return 0, c.ioErr("read", &c.rd, wasShut, e)
		}
	}
	for {
		n, err := blockingIO(unix.SYS_RECVFROM, c.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if n > 0 {
			return n, nil
		}
		return 0, c.ioErr("read", &c.rd, wasShut, err)
	}
}

// MarkReadable tells a direct connection that poll(2) found its socket
// readable: the next Read first tries a non-blocking receive (rawIO). Other
// connections ignore it.
func MarkReadable(c net.Conn) {
	if d, ok := c.(*directConn); ok {
		d.ready.Store(true)
	}
}

// rawIO makes one non-blocking send or receive (MSG_DONTWAIT) on fd with
// syscall.RawSyscall6, which skips the runtime's bookkeeping for a thread
// entering and leaving the kernel (entersyscall and exitsyscall): a call
// that cannot block does not need the runtime to hand its P to another
// thread. A whole transaction of a multiplexed select-only run is one
// send, one receive and a share of one poll, so the bookkeeping is a
// visible part of the driver's own CPU time (docs/benchmarks.md). The
// system calls are sendto and recvfrom without an address, the socket
// layer's own entry points (write and read go through the file layer
// first). MSG_NOSIGNAL: a closed peer gives EPIPE, not SIGPIPE.
func rawIO(trap uintptr, fd int, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		unix.MSG_DONTWAIT|ioFlags(trap), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// blockingIO is rawIO's blocking form, through the runtime's system call
// path (the thread may sleep in the kernel).
func blockingIO(trap uintptr, fd int, p []byte) (int, error) {
	r, _, e := syscall.Syscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		ioFlags(trap), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// ioFlags are the flags of every call: MSG_NOSIGNAL for sends.
func ioFlags(trap uintptr) uintptr {
	if trap == unix.SYS_SENDTO {
		return unix.MSG_NOSIGNAL
	}
	return 0
}

func (c *directConn) Write(p []byte) (int, error) {
	if !c.incref() {
		return 0, c.opErr("write", net.ErrClosed)
	}
	c.wd.inflight.Add(1)
	n, err := c.write(p)
	c.wd.inflight.Add(-1)
	c.decref()
	return n, err
}

// write is Write with the descriptor held and the call counted.
func (c *directConn) write(p []byte) (int, error) {
	if c.wd.expired.Load() {
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	}
	wasShut := c.shut.Load()
	done := 0
	if len(p) > 0 {
		// Usually the whole message fits the socket buffer at once.
		n, e := rawIO(unix.SYS_SENDTO, c.fd, p)
		if n > 0 {
			done = n
		} else if e != 0 && e != syscall.EAGAIN && e != syscall.EINTR {
			return 0, c.ioErr("write", &c.wd, wasShut, e)
		}
	}
	for done < len(p) {
		n, err := blockingIO(unix.SYS_SENDTO, c.fd, p[done:])
		if n > 0 {
			done += n
		}
		if err == syscall.EINTR || err == nil && n > 0 {
			continue
		}
		if err == nil {
			err = syscall.EPIPE // 0 bytes written to a stream socket
		}
		return done, c.ioErr("write", &c.wd, wasShut, err)
	}
	return done, nil
}

// errShut is returned by calls on a socket that a deadline shut down
// earlier: the connection is unusable.
var errShut = errors.New("connection shut down by an expired deadline")

// ioErr maps a failed call: closed if Close interrupted it, a timeout if a
// deadline did, else the system error (err nil: EOF).
func (c *directConn) ioErr(op string, d *deadline, wasShut bool, err error) error {
	switch {
	case c.state.Load()&closedBit != 0:
		return c.opErr(op, net.ErrClosed)
	case d.expired.Load() || !wasShut && c.shut.Load():
		return c.opErr(op, os.ErrDeadlineExceeded)
	case wasShut:
		return c.opErr(op, errShut)
	case err == nil:
		return io.EOF
	}
	return c.opErr(op, os.NewSyscallError(op, err))
}

func (c *directConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: c.network, Source: c.laddr, Addr: c.raddr, Err: err}
}

func (c *directConn) Close() error {
	if !c.incref() {
		return c.opErr("close", net.ErrClosed)
	}
	for {
		s := c.state.Load()
		if s&closedBit != 0 {
			c.decref()
			return c.opErr("close", net.ErrClosed)
		}
		if c.state.CompareAndSwap(s, s|closedBit) {
			break
		}
	}
	// Wake calls blocked on the socket; the descriptor is closed by the
	// last decref, ours or theirs.
	_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	c.mu.Lock()
	c.rd.stop()
	c.wd.stop()
	c.mu.Unlock()
	c.decref()
	return nil
}

func (d *deadline) stop() {
	d.seq++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

func (c *directConn) LocalAddr() net.Addr  { return c.laddr }
func (c *directConn) RemoteAddr() net.Addr { return c.raddr }

func (c *directConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *directConn) SetReadDeadline(t time.Time) error  { return c.setDeadline(&c.rd, t) }
func (c *directConn) SetWriteDeadline(t time.Time) error { return c.setDeadline(&c.wd, t) }

func (c *directConn) setDeadline(d *deadline, t time.Time) error {
	if c.state.Load()&closedBit != 0 {
		return c.opErr("set deadline", net.ErrClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d.stop()
	switch {
	case t.IsZero():
		d.expired.Store(false)
	case !t.After(time.Now()):
		c.expire(d)
	default:
		d.expired.Store(false)
		seq := d.seq
		d.timer = time.AfterFunc(time.Until(t), func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if d.seq == seq {
				c.expire(d)
			}
		})
	}
	return nil
}

// expire marks d expired and interrupts a call of its direction blocked in
// the kernel. c.mu is held. The store and the load below pair with the
// inflight increment and expired load in Read/Write (all sequentially
// consistent): either the call sees the expiry before it blocks, or we see
// the call and shut the socket down.
func (c *directConn) expire(d *deadline) {
	d.expired.Store(true)
	if d.inflight.Load() == 0 {
		return
	}
	if !c.incref() {
		return
	}
	c.shut.Store(true)
	_ = syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	c.decref()
}
