//go:build unix

package system

import (
	"io/fs"
	"syscall"
)

// read returns the contents of path, valid until the next read. It uses
// the system calls directly: an os.File costs a finalizer, an attempt to
// register the descriptor with the runtime's poller and a mode switch on
// top of the open, read and close, and a sample of the server's processes
// reads three files for each of them every second (os.Open was a third of
// that sampler's CPU time).
func (r *procReader) read(path string) ([]byte, error) {
	fd, err := openRead(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	n := 0
	for {
		m, err := syscall.Read(fd, r.buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m <= 0 {
			return r.buf[:n], nil
		}
		n += m
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
	}
}

// openRead opens path for reading, retrying when a signal interrupts it.
func openRead(path string) (fd int, err error) {
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
