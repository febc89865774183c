//go:build unix

package mariadb

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// detach puts the server in a session of its own (it outlives tunebench).
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// terminate asks pid to shut down (SIGTERM: InnoDB's clean shutdown); a
// process already gone is not an error.
func terminate(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// syscallNoFollow refuses to open a symbolic link in the last component.
const syscallNoFollow = syscall.O_NOFOLLOW

// flock holds an exclusive lock on f until it is closed.
func flock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
