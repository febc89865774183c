package server

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/tunebench/tunebench/internal/errs"
)

// FreePort asks the kernel for a free TCP port on 127.0.0.1. The port is free
// when FreePort returns; another process may still take it before it is used.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, errs.Wrap(errs.KindEnvironment, err, "check that the loopback interface is up", "cannot listen on 127.0.0.1")
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// CheckPortFree verifies that port can be listened on at 127.0.0.1.
func CheckPortFree(port int) error {
	if port <= 0 || port > 65535 {
		return errs.Usage("use a port between 1024 and 65535, or omit --port to pick a free one", "bad port %d", port)
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		hint := "choose another port with --port, or omit --port to let tunebench pick a free one"
		if errors.Is(err, syscall.EACCES) {
			return errs.Wrap(errs.KindConnect, err, hint, "not allowed to listen on port %d of 127.0.0.1 (ports below 1024 need privileges)", port)
		}
		return errs.Wrap(errs.KindConnect, err, hint, "port %d on 127.0.0.1 is already in use", port)
	}
	return l.Close()
}
