//go:build unix

package proc

import (
	"context"
	"os/exec"
	"syscall"
)

// Shell is a command that runs line through the system's shell (sh -c). In
// a process group of its own: on cancel the whole group is killed (an ssh
// or sudo the shell started too), so Run does not wait on their pipes.
func Shell(ctx context.Context, line string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}
