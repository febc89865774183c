//go:build !unix

package system

import (
	"io"
	"os"
)

// read returns the contents of path, valid until the next read (an
// os.File: the system calls of the unix version are not there, and
// nothing here reads /proc every second).
func (r *procReader) read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	n := 0
	for {
		m, err := f.Read(r.buf[n:])
		n += m
		if err == io.EOF {
			return r.buf[:n], nil
		}
		if err != nil {
			return nil, err
		}
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
	}
}
