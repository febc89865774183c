//go:build windows

package proc

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// exists opens the process and asks whether it has ended (a wait of no
// time; an exit code of 259, STILL_ACTIVE, cannot be told from a running
// process): a pid that cannot be opened for lack of rights exists too.
func exists(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err != nil || ev == uint32(windows.WAIT_TIMEOUT)
}

// terminate ends the process: Windows has no SIGTERM to ask with.
func terminate(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
		p.Release()
	}
}
