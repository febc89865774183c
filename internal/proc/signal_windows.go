//go:build windows

package proc

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// stillActive is the exit code GetExitCodeProcess gives a process that
// has not ended (STILL_ACTIVE).
const stillActive = 259

// exists opens the process to read its exit code: a pid that cannot be
// opened for lack of rights exists too.
func exists(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == stillActive
}

// terminate ends the process: Windows has no SIGTERM to ask with.
func terminate(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
		p.Release()
	}
}
